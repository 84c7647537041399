//! The codecs against real application servers on unix sockets in a temp dir: Debian's
//! PHP-FPM (FastCGI) and uWSGI with its Python plugin (uwsgi), each skipped with a message
//! when it is not installed, and an SCGI server written here.

mod php_fpm;
mod scgi;
mod support;
mod uwsgi;
