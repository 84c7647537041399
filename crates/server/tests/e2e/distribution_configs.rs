//! Whole configurations as distributions ship them, recreated in a temp prefix: Debian 12's
//! `nginx.conf` with `sites-enabled/default` and `modules-enabled/` (packages
//! `nginx-common` and `nginx-core`), and the official nginx container image's `nginx.conf`
//! with `conf.d/default.conf`. Only absolute paths (moved under the prefix) and the
//! listening port (a free one on 127.0.0.1) are changed. Each is checked with `-t`, then
//! started, and its default site fetched.

use std::path::Path;
use std::process::{Child, Command, Stdio};

use crate::support::cli::{reported, run_in};
use crate::support::instance::binary;
use crate::support::ports::free_port;
use crate::support::proc_net::is_listening;
use crate::support::wait::{PATIENCE, poll};
use crate::support::{Client, Signal, TempPrefix};

/// Portico's own `mime.types`, where both configurations include the distribution's.
const MIME_TYPES: &str = include_str!("../../../../conf/mime.types");

/// Debian 12's `/etc/nginx/nginx.conf` (package `nginx-common` 1.22.1).
const DEBIAN_NGINX_CONF: &str = "user www-data;
worker_processes auto;
pid /run/nginx.pid;
error_log /var/log/nginx/error.log;
include /etc/nginx/modules-enabled/*.conf;

events {
\tworker_connections 768;
\t# multi_accept on;
}

http {

\t##
\t# Basic Settings
\t##

\tsendfile on;
\ttcp_nopush on;
\ttypes_hash_max_size 2048;
\t# server_tokens off;

\t# server_names_hash_bucket_size 64;
\t# server_name_in_redirect off;

\tinclude /etc/nginx/mime.types;
\tdefault_type application/octet-stream;

\t##
\t# SSL Settings
\t##

\tssl_protocols TLSv1 TLSv1.1 TLSv1.2 TLSv1.3; # Dropping SSLv3, ref: POODLE
\tssl_prefer_server_ciphers on;

\t##
\t# Logging Settings
\t##

\taccess_log /var/log/nginx/access.log;

\t##
\t# Gzip Settings
\t##

\tgzip on;

\t# gzip_vary on;
\t# gzip_proxied any;
\t# gzip_comp_level 6;
\t# gzip_buffers 16 8k;
\t# gzip_http_version 1.1;
\t# gzip_types text/plain text/css application/json application/javascript text/xml;

\t##
\t# Virtual Host Configs
\t##

\tinclude /etc/nginx/conf.d/*.conf;
\tinclude /etc/nginx/sites-enabled/*;
}


#mail {
#\tserver {
#\t\tlisten     localhost:110;
#\t\tprotocol   pop3;
#\t\tproxy      on;
#\t}
#}
";

/// Debian 12's `/etc/nginx/sites-available/default` (its comments shortened).
const DEBIAN_DEFAULT_SITE: &str = "##
# In most cases, administrators will remove this file from sites-enabled/ and
# leave it as reference inside of sites-available.
##

# Default server configuration
#
server {
\tlisten 80 default_server;
\tlisten [::]:80 default_server;

\t# SSL configuration
\t#
\t# listen 443 ssl default_server;
\t# listen [::]:443 ssl default_server;
\t#
\t# include snippets/snakeoil.conf;

\troot /var/www/html;

\t# Add index.php to the list if you are using PHP
\tindex index.html index.htm index.nginx-debian.html;

\tserver_name _;

\tlocation / {
\t\t# First attempt to serve request as file, then
\t\t# as directory, then fall back to displaying a 404.
\t\ttry_files $uri $uri/ =404;
\t}

\t# pass PHP scripts to FastCGI server
\t#
\t#location ~ \\.php$ {
\t#\tinclude snippets/fastcgi-php.conf;
\t#\tfastcgi_pass unix:/run/php/php7.4-fpm.sock;
\t#}

\t# deny access to .htaccess files, if Apache's document root
\t# concurs with nginx's one
\t#
\t#location ~ /\\.ht {
\t#\tdeny all;
\t#}
}
";

/// The modules `nginx-core` enables in Debian 12 (`libnginx-mod-*`), none of which Portico
/// has: each `modules-enabled/NAME` links to `/usr/share/nginx/modules-available/`.
const DEBIAN_MODULES: &[(&str, &str, &str)] = &[
    (
        "50-mod-http-geoip.conf",
        "mod-http-geoip.conf",
        "ngx_http_geoip_module.so",
    ),
    (
        "50-mod-http-image-filter.conf",
        "mod-http-image-filter.conf",
        "ngx_http_image_filter_module.so",
    ),
    (
        "50-mod-http-xslt-filter.conf",
        "mod-http-xslt-filter.conf",
        "ngx_http_xslt_filter_module.so",
    ),
    ("50-mod-mail.conf", "mod-mail.conf", "ngx_mail_module.so"),
    (
        "50-mod-stream.conf",
        "mod-stream.conf",
        "ngx_stream_module.so",
    ),
    (
        "70-mod-stream-geoip.conf",
        "mod-stream-geoip.conf",
        "ngx_stream_geoip_module.so",
    ),
];

/// The official nginx image's `/etc/nginx/nginx.conf`.
const IMAGE_NGINX_CONF: &str = "
user  nginx;
worker_processes  auto;

error_log  /var/log/nginx/error.log notice;
pid        /var/run/nginx.pid;


events {
    worker_connections  1024;
}


http {
    include       /etc/nginx/mime.types;
    default_type  application/octet-stream;

    log_format  main  '$remote_addr - $remote_user [$time_local] \"$request\" '
                      '$status $body_bytes_sent \"$http_referer\" '
                      '\"$http_user_agent\" \"$http_x_forwarded_for\"';

    access_log  /var/log/nginx/access.log  main;

    sendfile        on;
    #tcp_nopush     on;

    keepalive_timeout  65;

    #gzip  on;

    include /etc/nginx/conf.d/*.conf;
}
";

/// The official nginx image's `/etc/nginx/conf.d/default.conf`.
const IMAGE_DEFAULT_CONF: &str = "server {
    listen       80;
    listen  [::]:80;
    server_name  localhost;

    #access_log  /var/log/nginx/host.access.log  main;

    location / {
        root   /usr/share/nginx/html;
        index  index.html index.htm;
    }

    #error_page  404              /404.html;

    # redirect server error pages to the static page /50x.html
    #
    error_page   500 502 503 504  /50x.html;
    location = /50x.html {
        root   /usr/share/nginx/html;
    }

    # proxy the PHP scripts to Apache listening on 127.0.0.1:80
    #
    #location ~ \\.php$ {
    #    proxy_pass   http://127.0.0.1;
    #}

    # deny access to .htaccess files, if Apache's document root
    # concurs with nginx's one
    #
    #location ~ /\\.ht {
    #    deny  all;
    #}
}
";

const WELCOME: &str = "<!DOCTYPE html>\n<html>\n<head>\n<title>Welcome to nginx!</title>\n</head>\n\
<body>\n<h1>Welcome to nginx!</h1>\n</body>\n</html>\n";

/// A distribution's text under `prefix`: absolute paths moved into it, port 80 made a free
/// port on 127.0.0.1, and its IPv6 twin (`[::]:80`) the next one of `port`'s pair.
fn relocated(text: &str, prefix: &TempPrefix, (port, port6): (u16, u16)) -> String {
    let root = prefix.path().display().to_string();
    let mut text = text.to_owned();
    for directory in [
        "/etc/nginx/",
        "/var/log/nginx/",
        "/var/www/",
        "/usr/share/nginx/",
    ] {
        text = text.replace(directory, &format!("{root}{directory}"));
    }
    for pid in ["/var/run/nginx.pid", "/run/nginx.pid"] {
        text = text.replace(&format!(" {pid};"), &format!(" {root}/run/nginx.pid;"));
    }
    for (listen, port) in [("80", port), ("[::]:80", port6)] {
        text = text.replace(&format!(" {listen} "), &format!(" 127.0.0.1:{port} "));
        text = text.replace(&format!(" {listen};"), &format!(" 127.0.0.1:{port};"));
    }
    text
}

fn write(prefix: &TempPrefix, relative: &str, text: &str, port: (u16, u16)) {
    prefix.write(relative, relocated(text, prefix, port));
}

fn symlink(prefix: &TempPrefix, target: &str, link: &str) {
    std::os::unix::fs::symlink(prefix.join(target), prefix.join(link)).expect("symlink");
}

/// `portico -t -c FILE`: the exit code and stderr.
fn check(prefix: &TempPrefix, conf: &str) -> (Option<i32>, String) {
    let arguments = ["-p", &prefix.arg(), "-c", conf, "-t"];
    let output = run_in(prefix.path(), &arguments);
    (output.code, output.stderr)
}

/// A server started on the configuration, stopped (QUIT, by its pid) when dropped.
struct Running(Child);

impl Running {
    fn start(prefix: &TempPrefix, conf: &str, port: u16) -> Running {
        let stderr = std::fs::File::create(prefix.join("stderr.txt")).expect("stderr file");
        let child = Command::new(binary())
            .args(["-p", &prefix.arg(), "-c", conf, "-g", "daemon off;"])
            .current_dir(prefix.path())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(stderr)
            .spawn()
            .expect("spawn portico");
        let mut running = Running(child);
        let listening = poll(PATIENCE, || {
            if let Ok(Some(status)) = running.0.try_wait() {
                panic!("portico exited ({status}): {}", prefix.read("stderr.txt"));
            }
            is_listening(port).then_some(())
        });
        assert!(listening.is_some(), "portico did not listen on {port}");
        running
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        let pid = rustix::process::Pid::from_raw(self.0.id() as i32).expect("a child's pid");
        let _ = rustix::process::kill_process(pid, Signal::QUIT);
        let exited = poll(PATIENCE, || self.0.try_wait().ok().flatten());
        if exited.is_none() {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
}

fn fetch(port: u16, path: &str) -> crate::support::Response {
    Client::connect(port).request(format!(
        "GET {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"
    ))
}

/// No line above `[notice]`/`[warn]` in a log: nothing went wrong while serving.
fn assert_clean(log: &str) {
    for marker in ["[alert]", "[crit]", "[emerg]", "[error]", "panicked"] {
        assert!(!log.contains(marker), "{marker} in the error log:\n{log}");
    }
}

#[test]
fn debian_12_stock_config_loads_and_serves() {
    let prefix = TempPrefix::new();
    let port = (free_port(), free_port());
    write(&prefix, "etc/nginx/nginx.conf", DEBIAN_NGINX_CONF, port);
    write(&prefix, "etc/nginx/mime.types", MIME_TYPES, port);
    prefix.create_dir("etc/nginx/conf.d");
    prefix.create_dir("etc/nginx/modules-enabled");
    prefix.create_dir("etc/nginx/sites-enabled");
    prefix.create_dir("var/log/nginx");
    prefix.create_dir("run");
    write(
        &prefix,
        "etc/nginx/sites-available/default",
        DEBIAN_DEFAULT_SITE,
        port,
    );
    symlink(
        &prefix,
        "etc/nginx/sites-available/default",
        "etc/nginx/sites-enabled/default",
    );
    for (enabled, available, module) in DEBIAN_MODULES {
        let available = format!("usr/share/nginx/modules-available/{available}");
        prefix.write(&available, format!("load_module modules/{module};\n"));
        symlink(
            &prefix,
            &available,
            &format!("etc/nginx/modules-enabled/{enabled}"),
        );
    }
    write(
        &prefix,
        "var/www/html/index.nginx-debian.html",
        WELCOME,
        port,
    );
    let conf = "etc/nginx/nginx.conf";
    // As installed: the first module Portico lacks stops the load, named.
    let (code, stderr) = check(&prefix, conf);
    assert_eq!(code, Some(1), "{stderr}");
    let enabled = prefix.join("etc/nginx/modules-enabled/50-mod-http-geoip.conf");
    let message = format!(
        "load_module \"modules/ngx_http_geoip_module.so\": Portico has no \"http_geoip\" \
         module in {}:1",
        enabled.display()
    );
    assert!(reported(&stderr, "emerg", &message), "{stderr}");
    // The user removes the modules Portico lacks (docs/differences-from-nginx.md): then the
    // rest of the stock configuration loads as it is.
    for (enabled, _, _) in DEBIAN_MODULES {
        std::fs::remove_file(prefix.join(&format!("etc/nginx/modules-enabled/{enabled}")))
            .expect("remove a module link");
    }
    let (code, stderr) = check(&prefix, conf);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(stderr.contains("test is successful"), "{stderr}");
    let running = Running::start(&prefix, conf, port.0);
    let page = fetch(port.0, "/");
    assert_eq!(page.status, 200);
    assert!(page.body_text().contains("Welcome to nginx!"));
    assert_eq!(page.header("Content-Type"), Some("text/html"));
    assert_eq!(fetch(port.1, "/missing").status, 404, "try_files ... =404");
    drop(running);
    assert!(Path::new(&prefix.join("var/log/nginx/access.log")).exists());
    assert_clean(&prefix.read("var/log/nginx/error.log"));
}

#[test]
fn nginx_image_default_config_loads_and_serves() {
    let prefix = TempPrefix::new();
    let port = (free_port(), free_port());
    write(&prefix, "etc/nginx/nginx.conf", IMAGE_NGINX_CONF, port);
    write(&prefix, "etc/nginx/mime.types", MIME_TYPES, port);
    write(
        &prefix,
        "etc/nginx/conf.d/default.conf",
        IMAGE_DEFAULT_CONF,
        port,
    );
    prefix.create_dir("var/log/nginx");
    prefix.create_dir("run");
    write(&prefix, "usr/share/nginx/html/index.html", WELCOME, port);
    write(
        &prefix,
        "usr/share/nginx/html/50x.html",
        "<h1>An error occurred.</h1>\n",
        port,
    );
    let conf = "etc/nginx/nginx.conf";
    // The image runs as root with a user `nginx`; where there is none, the name is looked up
    // in vain, as nginx does.
    let has_nginx_user = std::fs::read_to_string("/etc/passwd")
        .is_ok_and(|passwd| passwd.lines().any(|line| line.starts_with("nginx:")));
    let is_root = rustix::process::geteuid().is_root();
    if is_root && !has_nginx_user {
        let (code, stderr) = check(&prefix, conf);
        assert_eq!(code, Some(1), "{stderr}");
        assert!(stderr.contains("getpwnam(\"nginx\") failed"), "{stderr}");
        let text = relocated(IMAGE_NGINX_CONF, &prefix, port).replace("user  nginx;", "");
        prefix.write(conf, text);
    }
    let (code, stderr) = check(&prefix, conf);
    assert_eq!(code, Some(0), "{stderr}");
    let running = Running::start(&prefix, conf, port.0);
    let page = fetch(port.0, "/");
    assert_eq!(page.status, 200);
    assert!(page.body_text().contains("Welcome to nginx!"));
    assert_eq!(fetch(port.1, "/50x.html").status, 200);
    drop(running);
    let access = prefix.read("var/log/nginx/access.log");
    assert!(
        access.contains("\"GET / HTTP/1.1\" 200 "),
        "log_format main: {access}"
    );
    assert_clean(&prefix.read("var/log/nginx/error.log"));
}
