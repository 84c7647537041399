//! Debian's WordPress (`/usr/share/wordpress`) copied into a temporary docroot with its own
//! `wp-config.php`, and the server WordPress's nginx documentation gives for it.

use std::path::Path;

use super::app_servers::TempDir;
use super::mariadb::MariaDb;

/// Where Debian's `wordpress` package puts WordPress.
pub const INSTALLED: &str = "/usr/share/wordpress";

/// The theme a new site starts with, from `wordpress-theme-twentytwentythree` (which
/// `wordpress` recommends): without a theme the front end is a blank page.
pub const THEME: &str = "/usr/share/wordpress/wp-content/themes/twentytwentythree";

/// What PHP-FPM needs to run WordPress without a `php.ini`: the MySQL driver, the opcode
/// cache (each page compiles several hundred files without it), and PHP's warnings logged
/// (to FastCGI's stderr, so to Portico's error log) rather than printed into the pages.
pub const PHP_SETTINGS: &[&str] = &[
    "extension=mysqlnd",
    "extension=mysqli",
    "zend_extension=opcache",
    "opcache.enable=1",
    "display_errors=0",
    "log_errors=1",
];

/// A WordPress docroot of its own. Debian's `wp-config.php` reads
/// `/etc/wordpress/config-HOST.php`, and PHP resolves symbolic links before WordPress
/// looks for its config beside its files, so the tree is copied (2,800 files, 56 MB, about
/// 0.5 s) rather than linked, and the copy's `wp-config.php` is replaced.
pub struct Site {
    dir: TempDir,
}

impl Site {
    /// True when WordPress is installed; said on stderr when not.
    #[allow(clippy::print_stderr, reason = "a skipped test says so")]
    pub fn is_installed() -> bool {
        let installed = Path::new(INSTALLED).join("wp-settings.php").is_file();
        if !installed {
            eprintln!("skipped: {INSTALLED} not found (Debian: apt-get install wordpress)");
        }
        installed
    }

    /// Copies WordPress and writes its config for `database`.
    pub fn copy(database: &MariaDb) -> Site {
        assert!(
            Path::new(THEME).is_dir(),
            "{THEME} is missing (Debian: apt-get install wordpress-theme-twentytwentythree)"
        );
        let dir = TempDir::new("e2e-wordpress");
        copy_tree(Path::new(INSTALLED), &dir.join(""));
        dir.write("wp-config.php", &wp_config(&database.socket()));
        Site { dir }
    }

    /// The docroot, without a trailing `/`.
    pub fn root(&self) -> String {
        self.dir
            .join("")
            .display()
            .to_string()
            .trim_end_matches('/')
            .to_owned()
    }

    /// A file of the site, by its path in URLs.
    pub fn read(&self, path: &str) -> Vec<u8> {
        let file = self.dir.join(path.trim_start_matches('/'));
        std::fs::read(&file).unwrap_or_else(|error| panic!("read {}: {error}", file.display()))
    }
}

/// The server from WordPress's nginx documentation on `listen` (nominal), for an
/// `upstream php`: permalinks go to `index.php`, PHP to the group, static files get a
/// long expiry, errors from PHP are intercepted. Includes `fastcgi_params` beside the
/// config file.
pub fn documented_server(listen: u16, root: &str) -> String {
    format!(
        "server {{
        listen 127.0.0.1:{listen};
        server_name wordpress.test;
        root {root};
        index index.php;
        client_max_body_size 8m;
        location = /favicon.ico {{ log_not_found off; access_log off; }}
        location / {{ try_files $uri $uri/ /index.php?$args; }}
        location ~ \\.php$ {{
            include fastcgi_params;
            fastcgi_intercept_errors on;
            fastcgi_pass php;
            fastcgi_param SCRIPT_FILENAME $document_root$fastcgi_script_name;
        }}
        location ~* \\.(js|css|png|jpg|jpeg|gif|ico)$ {{ expires max; log_not_found off; }}
    }}"
    )
}

/// The site's config: the database on its unix socket, fixed keys and salts, no cron run
/// from page loads (it would request `wp-cron.php` in the background) and no requests to
/// the internet (the dashboard checks for news and updates).
fn wp_config(socket: &Path) -> String {
    let mut config = format!(
        "<?php
define('DB_NAME', '{database}');
define('DB_USER', '{user}');
define('DB_PASSWORD', '{password}');
define('DB_HOST', 'localhost:{socket}');
define('DB_CHARSET', 'utf8mb4');
define('DB_COLLATE', '');
$table_prefix = 'wp_';
define('DISABLE_WP_CRON', true);
define('AUTOMATIC_UPDATER_DISABLED', true);
define('WP_HTTP_BLOCK_EXTERNAL', true);
// Debian's install.php stores these; empty is WordPress's own uploads directory.
$upload_path = '';
$upload_url_path = '';
",
        database = MariaDb::DATABASE,
        user = MariaDb::USER,
        password = MariaDb::PASSWORD,
        socket = socket.display(),
    );
    for key in [
        "AUTH_KEY",
        "SECURE_AUTH_KEY",
        "LOGGED_IN_KEY",
        "NONCE_KEY",
        "AUTH_SALT",
        "SECURE_AUTH_SALT",
        "LOGGED_IN_SALT",
        "NONCE_SALT",
    ] {
        config.push_str(&format!("define('{key}', 'portico-e2e-{key}');\n"));
    }
    // wp-load.php, which reads this file, has defined ABSPATH as the docroot.
    config.push_str("require_once ABSPATH . 'wp-settings.php';\n");
    config
}

/// Copies the directory `from` into `to`, following symbolic links (Debian links some
/// files to other packages' with relative paths, which a copied link would lose); links
/// to nothing are left out.
fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("create a directory of the copy");
    let entries =
        std::fs::read_dir(from).unwrap_or_else(|error| panic!("read {}: {error}", from.display()));
    for entry in entries.flatten() {
        let source = entry.path();
        let target = to.join(entry.file_name());
        let Ok(metadata) = std::fs::metadata(&source) else {
            continue;
        };
        if metadata.is_dir() {
            copy_tree(&source, &target);
        } else {
            std::fs::copy(&source, &target)
                .unwrap_or_else(|error| panic!("copy {}: {error}", source.display()));
        }
    }
}
