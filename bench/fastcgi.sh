#!/usr/bin/env bash
# Scenario "fastcgi": nginx and Portico in front of one PHP-FPM pool (Debian's php-fpm),
# the same configuration file for both, in one run (issue 33):
#
#   plain           /hello.php        fastcgi_pass to the pool's unix socket, a connection per request
#   cached          /cached/hello.php fastcgi_cache, every request after the first a HIT
#   wordpress       WordPress's front page, WordPress's documented server (fastcgi_pass to
#                   the group below, a connection per request)
#   kept            /kept/hello.php   an upstream group with keepalive (FPM_CHILDREN) and fastcgi_keep_conn on
#   wordpress-kept  WordPress's front page, the same server with fastcgi_keep_conn on
#
# The script is `<?php echo "hello world";`. WordPress is Debian's, on a throwaway MariaDB,
# set up by bench/lib/wordpress.sh and installed through Portico before the runs; it has
# its own port (WordPress answers a request for another port with a redirect), and
# wordpress-kept is its second server there, by name. Per repetition each server is started
# once and the rows run against it, nginx first, then Portico; medians over the
# repetitions. CPU per request is the server's alone (every thread of its processes,
# schedstat), not PHP-FPM's or MariaDB's.
#
#   bench/fastcgi.sh
#
# Environment (defaults in brackets):
#   REPS [5]              repetitions
#   ROWS ["plain cached wordpress kept wordpress-kept"]   the kept rows last: their idle
#                         connections hold PHP-FPM children until the server stops. With a
#                         wordpress row PHP-FPM loads mysqli and the opcode cache
#                         (Debian: apt-get install mariadb-server wordpress php-mysql)
#   CONNECTIONS [8] WRK_THREADS [1] DURATION [8] (seconds) WARMUP [1] (seconds, 0 = none)
#   FPM_CHILDREN [8]      PHP-FPM's static pool size, and the group's keepalive. A kept
#                         connection holds a PHP-FPM child while idle: with more client
#                         connections than children, requests queue behind idle kept
#                         connections (with nginx too), so CONNECTIONS stays at most this
#   PORTICO_BIN           use this binary instead of building (cargo build --release -p portico-server)
#   CARGO_TARGET_DIR      where cargo builds
#   RESULTS [bench/RESULTS.md]   file whose "fastcgi" section is rewritten; "-" = don't write
#   KEEP_TMP [0]          1 keeps the temporary directory (configs, logs, raw wrk output)
#   QUIET_MAX [0] QUIET_CORES [0.3]   as in bench/static.sh (checked before each run)
#
# See bench/README.md, scenario `fastcgi`.

source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
source "$BENCH_DIR/lib/runs.sh"
source "$BENCH_DIR/lib/wordpress.sh"

REPS=${REPS:-5}
ROWS=${ROWS:-"plain cached wordpress kept wordpress-kept"}
CONNECTIONS=${CONNECTIONS:-8}
WRK_THREADS=${WRK_THREADS:-1}
DURATION=${DURATION:-8}
WARMUP=${WARMUP:-1}
FPM_CHILDREN=${FPM_CHILDREN:-8}
RESULTS=${RESULTS:-$BENCH_DIR/RESULTS.md}
KEEP_TMP=${KEEP_TMP:-0}
QUIET_MAX=${QUIET_MAX:-0}
QUIET_CORES=${QUIET_CORES:-0.3}
INSTRUCTIONS=${INSTRUCTIONS:-auto}
SECTION=fastcgi
COMMAND_LINE="bench/fastcgi.sh"
for variable in REPS ROWS CONNECTIONS WRK_THREADS DURATION WARMUP FPM_CHILDREN QUIET_MAX QUIET_CORES PORTICO_BIN CARGO_TARGET_DIR; do
    if printenv "$variable" >/dev/null; then
        COMMAND_LINE="$variable='${!variable}' $COMMAND_LINE"
    fi
done

[ "$CONNECTIONS" -le "$FPM_CHILDREN" ] || die "CONNECTIONS ($CONNECTIONS) must be at most FPM_CHILDREN ($FPM_CHILDREN)"
ensure_tools
ensure_portico
detect_instructions
FPM_BIN=$(ls /usr/sbin/php-fpm* 2>/dev/null | head -n 1 || true)
[ -x "$FPM_BIN" ] || die "php-fpm is not installed (Debian: apt-get install php-fpm)"
WORDPRESS=0
case " $ROWS " in *" wordpress"*) WORDPRESS=1 ;; esac
[ "$WORDPRESS" = 0 ] || check_wordpress_installed

make_work_dir fastcgi
chmod 755 "$WORK"
mkdir -p "$WORK/www" "$WORK/fpm"
printf '<?php echo "hello world";\n' >"$WORK/www/hello.php"
chmod -R a+rX "$WORK/www"

# ---- PHP-FPM, one pool for both servers ---------------------------------------------------

SOCKET=$WORK/fpm/php.sock
fpm_user=""
fpm_args=()
if [ "$(id -u)" -eq 0 ]; then
    fpm_user=$'user = www-data\ngroup = www-data'
    fpm_args=(--allow-to-run-as-root)
fi
if [ "$WORDPRESS" = 1 ]; then
    start_mariadb
    copy_wordpress
    fpm_args+=("${WORDPRESS_PHP_SETTINGS[@]}")
fi
cat >"$WORK/fpm/php-fpm.conf" <<EOF
[global]
pid = $WORK/fpm/php-fpm.pid
error_log = $WORK/fpm/error.log
daemonize = no

[bench]
listen = $SOCKET
listen.mode = 0666
listen.backlog = 4096
pm = static
pm.max_children = $FPM_CHILDREN
pm.max_requests = 0
$fpm_user
EOF
"$FPM_BIN" -n --nodaemonize --fpm-config "$WORK/fpm/php-fpm.conf" "${fpm_args[@]}" \
    >"$WORK/fpm/stdout.log" 2>&1 &
FPM_PID=$!
STARTED_PIDS+=("$FPM_PID")
for _ in $(seq 100); do [ -S "$SOCKET" ] && break; sleep 0.1; done
[ -S "$SOCKET" ] || die "php-fpm did not listen: $(cat "$WORK/fpm/stdout.log" "$WORK/fpm/error.log" 2>/dev/null)"

# ---- The configuration, the same file for both ---------------------------------------------

PORT=$(free_port)
WP_PORT=$(free_port)
[ "$WP_PORT" != "$PORT" ] || WP_PORT=$(free_port)
# WordPress's documented server: wordpress_server NAME LISTEN_OPTIONS EXTRA (EXTRA goes in
# the PHP location; only the port's first listen may have options).
wordpress_server() {
    cat <<EOF
    server {
        listen 127.0.0.1:$WP_PORT$2;
        server_name $1;
        root $WORK/wordpress;
        index index.php;
        client_max_body_size 8m;
        location = /favicon.ico { log_not_found off; access_log off; }
        location / { try_files \$uri \$uri/ /index.php?\$args; }
        location ~ \.php\$ {
            include $REPO_DIR/conf/fastcgi_params;
            fastcgi_intercept_errors on;
            fastcgi_pass php;
            fastcgi_param SCRIPT_FILENAME \$document_root\$fastcgi_script_name;
            $3
        }
        location ~* \.(js|css|png|jpg|jpeg|gif|ico)\$ { expires max; log_not_found off; }
    }
EOF
}
WORDPRESS_SERVERS=""
if [ "$WORDPRESS" = 1 ]; then
    WORDPRESS_SERVERS="$(wordpress_server wordpress.test " backlog=4096" "")
$(wordpress_server kept.wordpress.test "" "fastcgi_keep_conn on;")"
fi
CONF=$WORK/fastcgi.conf
cat >"$CONF" <<EOF
# Generated by bench/fastcgi.sh; nginx and Portico read this file.
worker_processes 1;
daemon off;
pid logs/server.pid;
error_log logs/error.log;
events {
    worker_connections 4096;
}
http {
    access_log off;
    fastcgi_cache_path cache keys_zone=php:10m;
    upstream php {
        server unix:$SOCKET;
        keepalive $FPM_CHILDREN;
    }
    server {
        listen 127.0.0.1:$PORT backlog=4096;
        root $WORK/www;
        location = / { return 200 "up"; }
        location = /hello.php {
            include $REPO_DIR/conf/fastcgi.conf;
            fastcgi_pass unix:$SOCKET;
        }
        location = /kept/hello.php {
            include $REPO_DIR/conf/fastcgi.conf;
            fastcgi_param SCRIPT_FILENAME $WORK/www/hello.php;
            fastcgi_keep_conn on;
            fastcgi_pass php;
        }
        location = /cached/hello.php {
            include $REPO_DIR/conf/fastcgi.conf;
            fastcgi_param SCRIPT_FILENAME $WORK/www/hello.php;
            fastcgi_cache php;
            fastcgi_cache_key \$request_uri;
            fastcgi_cache_valid 200 10m;
            fastcgi_pass unix:$SOCKET;
        }
    }
$WORDPRESS_SERVERS
}
EOF
check_config "$CONF"

url_of() {
    case $1 in
        plain) echo "http://127.0.0.1:$PORT/hello.php" ;;
        kept) echo "http://127.0.0.1:$PORT/kept/hello.php" ;;
        cached) echo "http://127.0.0.1:$PORT/cached/hello.php" ;;
        wordpress | wordpress-kept) echo "http://127.0.0.1:$WP_PORT/" ;;
        *) die "unknown row $1" ;;
    esac
}

# The Host a row's requests name (WordPress's second server is chosen by name).
host_of() {
    case $1 in
        wordpress-kept) echo "kept.wordpress.test:$WP_PORT" ;;
        wordpress) echo "127.0.0.1:$WP_PORT" ;;
        *) echo "127.0.0.1:$PORT" ;;
    esac
}

# Dies unless the row's page is what it should be.
check_row() {
    local kind=$1 row=$2 body
    body=$(curl -s --max-time 10 -H "Host: $(host_of "$row")" "$(url_of "$row")") ||
        die "$kind $row: curl failed"
    case $row in
        wordpress*)
            grep -qF "<title>$WORDPRESS_TITLE</title>" <<<"$body" ||
                die "$kind $row answered without the site's title: $(head -c 2000 <<<"$body")"
            ;;
        *) [ "$body" = "hello world" ] || die "$kind $row answered '$body'" ;;
    esac
}

if [ "$WORDPRESS" = 1 ]; then
    mkdir -p "$WORK/install"
    start_server portico "$WORK/install" "$CONF" "$PORT"
    install_wordpress "$WP_PORT"
    stop_server "$SERVER_PID"
    note "WordPress installed through Portico"
fi

# ---- Runs -----------------------------------------------------------------------------------

declare -A RPS P99 CPU INS
for rep in $(seq "$REPS"); do
    for kind in nginx portico; do
        prefix=$WORK/$kind-$rep
        mkdir -p "$prefix"
        chmod 755 "$prefix"
        start_server "$kind" "$prefix" "$CONF" "$PORT"
        pid=$SERVER_PID
        for row in $ROWS; do
            check_row "$kind" "$row"
            wait_quiet
            SERVER_PID=$pid
            measure_wrk "$WORK/wrk-$kind-$row-$rep.txt" "$DURATION" "$(url_of "$row")" "$CONNECTIONS" \
                "$WRK_THREADS" -H "Host: $(host_of "$row")"
            IFS=$'\t' read -r n rps avg p99 errors server_s cpu_us wrk_s other ins bps <<<"$MEASURED"
            [ "$errors" = 0 ] || die "$kind $row: $errors errors ($(cat "$WORK/wrk-$kind-$row-$rep.txt"))"
            RPS[$kind,$row]+="$rps "
            P99[$kind,$row]+="$p99 "
            CPU[$kind,$row]+="$cpu_us "
            INS[$kind,$row]+="$ins "
            note "rep $rep $kind $row: $rps req/s, p99 ${p99} µs, ${cpu_us} µs CPU/request, other load $other cores"
        done
        stop_server "$pid"
    done
done

# ---- Report ----------------------------------------------------------------------------------

SECTION_FILE=$WORK/section.md
{
    echo "<!-- BEGIN $SECTION -->"
    echo "## fastcgi"
    echo
    echo "\`$COMMAND_LINE\`, $(date -u '+%Y-%m-%d %H:%M UTC'); machine load at the start: $(cut -d' ' -f1-3 /proc/loadavg)"
    echo
    describe_machine
    echo "- PHP-FPM: $FPM_BIN, static pool of $FPM_CHILDREN; wrk -t$WRK_THREADS -c$CONNECTIONS -d${DURATION}s; medians of $REPS"
    if [ "$WORDPRESS" = 1 ]; then
        echo "- WordPress $(wordpress_version) (Debian's) on MariaDB $(mariadb_version); PHP with mysqli and the opcode cache"
    fi
    echo "- Instructions: $INSTRUCTIONS_NOTE"
    echo
    echo "| row | nginx req/s | Portico req/s | ratio | nginx p99 µs | Portico p99 µs | ratio | nginx CPU µs/req | Portico CPU µs/req | ratio |"
    echo "|---|---|---|---|---|---|---|---|---|---|"
    for row in $ROWS; do
        # shellcheck disable=SC2086
        nr=$(median ${RPS[nginx,$row]}); pr=$(median ${RPS[portico,$row]})
        # shellcheck disable=SC2086
        np=$(median ${P99[nginx,$row]}); pp=$(median ${P99[portico,$row]})
        # shellcheck disable=SC2086
        nc=$(median ${CPU[nginx,$row]}); pc=$(median ${CPU[portico,$row]})
        awk -v row="$row" -v nr="$nr" -v pr="$pr" -v np="$np" -v pp="$pp" -v nc="$nc" -v pc="$pc" 'BEGIN {
            printf "| %s | %.0f | %.0f | %.2fx | %.0f | %.0f | %.2fx | %.1f | %.1f | %.2fx |\n",
                row, nr, pr, pr / nr, np, pp, pp / np, nc, pc, pc / nc }'
    done
    echo
    echo "Every run (req/s): "
    for row in $ROWS; do
        echo "- $row: nginx ${RPS[nginx,$row]}; Portico ${RPS[portico,$row]}"
    done
    echo "<!-- END $SECTION -->"
} >"$SECTION_FILE"
cat "$SECTION_FILE"
if [ "$RESULTS" != - ]; then
    splice_section "$RESULTS" "$SECTION" "$SECTION_FILE"
    note "wrote the $SECTION section of $RESULTS"
fi
