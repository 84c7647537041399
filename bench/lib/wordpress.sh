# A real WordPress for the benchmarks (bench/fastcgi.sh): Debian's `wordpress` copied into
# WORK/wordpress with its own wp-config.php, on a throwaway MariaDB (Debian's
# `mariadb-server`) whose data directory is installed into WORK/mariadb and which listens on
# a unix socket there only. The e2e test `wordpress` sets up the same way
# (crates/server/tests/e2e/support/wordpress.rs and mariadb.rs). Sourced after
# lib/common.sh, not run. The caller sets WORK; STARTED_PIDS gets MariaDB's pid.

WORDPRESS_DIR=/usr/share/wordpress
WORDPRESS_THEME=$WORDPRESS_DIR/wp-content/themes/twentytwentythree
WORDPRESS_TITLE="Portico bench WordPress"
WORDPRESS_ADMIN_PASSWORD=portico-bench-Admin-password-7
MARIADB_PASSWORD=portico-bench-database
# What PHP-FPM needs for WordPress without a php.ini: the MySQL driver and the opcode
# cache; PHP's warnings go to FastCGI's stderr (the servers' error logs), not the pages.
WORDPRESS_PHP_SETTINGS=(-d extension=mysqlnd -d extension=mysqli -d zend_extension=opcache
    -d opcache.enable=1 -d display_errors=0 -d log_errors=1)
# Small buffers and no syncing to disk: the install takes 0.6 s instead of 3 s, and the
# data is thrown away.
MARIADB_OPTIONS=(--innodb-buffer-pool-size=16M --innodb-log-file-size=4M
    --innodb-flush-method=nosync --innodb-flush-log-at-trx-commit=0 --innodb-doublewrite=0)

# Dies with the packages to install when MariaDB, WordPress, its theme or PHP's MySQL
# driver is missing.
check_wordpress_installed() {
    local missing=()
    [ -x /usr/sbin/mariadbd ] && command -v mariadb-install-db >/dev/null || missing+=(mariadb-server)
    [ -f "$WORDPRESS_DIR/wp-settings.php" ] || missing+=(wordpress)
    [ -d "$WORDPRESS_THEME" ] || missing+=(wordpress-theme-twentytwentythree)
    compgen -G '/usr/lib/php/*/mysqli.so' >/dev/null || missing+=(php-mysql)
    [ ${#missing[@]} -eq 0 ] ||
        die "the WordPress rows need: apt-get install ${missing[*]} (or leave them out of ROWS)"
}

# Installs a data directory, starts MariaDB on WORK/mariadb/mariadb.sock, and makes the
# database `wordpress` and its user (the server's --init-file, as it starts).
start_mariadb() {
    local dir=$WORK/mariadb user_option=()
    mkdir -p "$dir"
    chmod 755 "$dir"
    [ "$(id -u)" -eq 0 ] && user_option=(--user=root)
    mariadb-install-db --no-defaults --datadir="$dir/data" --skip-test-db --skip-name-resolve \
        "${user_option[@]}" "${MARIADB_OPTIONS[@]}" >"$dir/install.log" 2>&1 ||
        die "mariadb-install-db failed: $(cat "$dir/install.log")"
    cat >"$dir/init.sql" <<EOF
CREATE DATABASE wordpress;
CREATE USER 'wordpress'@'localhost' IDENTIFIED BY '$MARIADB_PASSWORD';
GRANT ALL PRIVILEGES ON wordpress.* TO 'wordpress'@'localhost';
EOF
    MARIADB_SOCKET=$dir/mariadb.sock
    /usr/sbin/mariadbd --no-defaults --datadir="$dir/data" --socket="$MARIADB_SOCKET" \
        --skip-networking --pid-file="$dir/mariadb.pid" --init-file="$dir/init.sql" \
        "${user_option[@]}" "${MARIADB_OPTIONS[@]}" >"$dir/mariadb.log" 2>&1 &
    STARTED_PIDS+=("$!")
    for _ in $(seq 200); do
        grep -q 'ready for connections' "$dir/mariadb.log" 2>/dev/null && return
        sleep 0.1
    done
    die "MariaDB did not start: $(cat "$dir/mariadb.log")"
}

# Copies WordPress into WORK/wordpress (links followed: Debian's relative links to other
# packages' files would break) and writes its wp-config.php for MariaDB's socket.
copy_wordpress() {
    local root=$WORK/wordpress key
    cp -rL "$WORDPRESS_DIR" "$root" 2>/dev/null || true
    [ -f "$root/wp-settings.php" ] || die "copying $WORDPRESS_DIR failed"
    {
        echo "<?php"
        echo "define('DB_NAME', 'wordpress');"
        echo "define('DB_USER', 'wordpress');"
        echo "define('DB_PASSWORD', '$MARIADB_PASSWORD');"
        echo "define('DB_HOST', 'localhost:$MARIADB_SOCKET');"
        echo "define('DB_CHARSET', 'utf8mb4');"
        echo "define('DB_COLLATE', '');"
        echo "\$table_prefix = 'wp_';"
        # No cron run from page loads, no requests to the internet.
        echo "define('DISABLE_WP_CRON', true);"
        echo "define('AUTOMATIC_UPDATER_DISABLED', true);"
        echo "define('WP_HTTP_BLOCK_EXTERNAL', true);"
        # Debian's install.php stores these; empty is WordPress's own uploads directory.
        echo "\$upload_path = '';"
        echo "\$upload_url_path = '';"
        for key in AUTH_KEY SECURE_AUTH_KEY LOGGED_IN_KEY NONCE_KEY AUTH_SALT SECURE_AUTH_SALT \
            LOGGED_IN_SALT NONCE_SALT; do
            echo "define('$key', 'portico-bench-$key');"
        done
        echo "require_once ABSPATH . 'wp-settings.php';"
    } >"$root/wp-config.php"
    chmod -R a+rX "$root"
}

# Posts WordPress's install form to http://127.0.0.1:PORT/ (a server must be serving the
# site there; WordPress keeps that address as its own).
#   install_wordpress PORT
install_wordpress() {
    local port=$1 answer
    answer=$(curl -s --max-time 60 "http://127.0.0.1:$port/wp-admin/install.php?step=2" \
        --data-urlencode "weblog_title=$WORDPRESS_TITLE" --data-urlencode user_name=admin \
        --data-urlencode "admin_password=$WORDPRESS_ADMIN_PASSWORD" \
        --data-urlencode "admin_password2=$WORDPRESS_ADMIN_PASSWORD" \
        --data-urlencode admin_email=admin@wordpress.test --data-urlencode blog_public=0 \
        --data-urlencode language=) || die "WordPress's install: curl failed"
    grep -q '<h1>Success!</h1>' <<<"$answer" || die "WordPress's install failed: $answer"
}

# For the report: "6.1.9" and "10.11.19-MariaDB-0+deb12u1".
wordpress_version() {
    sed -n "s/^\$wp_version = '\(.*\)';/\1/p" "$WORDPRESS_DIR/wp-includes/version.php"
}
mariadb_version() {
    /usr/sbin/mariadbd --version | awk '{ print $3 }'
}
