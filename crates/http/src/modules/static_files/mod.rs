//! Static files: mapping a URI to a file under `root` or `alias`, `try_files`, `index`,
//! `autoindex`, `disable_symlinks`, `open_file_cache`, and sending the file. Under
//! `aio threads` opening, stat-ing, listing and reading run on a thread pool, never on the
//! worker's loop (files whose data and directory entries are cached are served from the
//! worker without waiting, `aio_nowait`); under `aio off` they run on the worker, as nginx
//! does them.

pub mod autoindex;
pub mod content;
pub mod directives;
pub mod handler;
pub mod listing;
pub mod settings;
pub mod try_files;
