#!/usr/bin/env bash
# bench/cache_interop.sh -- a warm cache survives switching between nginx and Portico.
#
# Not a benchmark: a check that Portico's cache files are nginx's (version 5 entries, MD5
# names, levels, Vary variants in their own files), in both directions:
#   1. a backend serves a few objects (one of them varies by Accept-Language);
#   2. server A (nginx, then Portico) fills a cache directory through a proxy;
#   3. A stops, the backend stops, and server B (the other one) starts on the same
#      directory with the same configuration: every object, every variant, must be a HIT
#      with the body A stored, although no backend answers.
# Exit status 0 when both directions hold. Usage: bench/cache_interop.sh
source "$(dirname "$0")/lib/common.sh"

ensure_tools
ensure_portico
WORK=$(mktemp -d /tmp/portico-cache-interop.XXXXXX)
# Workers run as the configuration's user (nobody by default): they must reach the cache.
chmod 755 "$WORK"
trap 'stop_all_started; [ -n "${KEEP:-}" ] || rm -rf "$WORK"' EXIT

BACKEND_PORT=$(free_port)
PROXY_PORT=$(free_port)

cat >"$WORK/backend.conf" <<CONF
daemon off;
worker_processes 1;
error_log logs/error.log;
pid logs/backend.pid;
events {}
http {
    access_log off;
    server {
        listen 127.0.0.1:$BACKEND_PORT;
        location / { add_header Cache-Control max-age=3600; return 200 "object \$uri \$msec\n"; }
        location /vary {
            add_header Vary Accept-Language;
            add_header Cache-Control max-age=3600;
            return 200 "variant \$http_accept_language \$msec\n";
        }
    }
}
CONF

proxy_conf() {
    cat >"$WORK/proxy.conf" <<CONF
daemon off;
worker_processes 1;
error_log logs/error.log info;
pid logs/proxy.pid;
events {}
http {
    access_log off;
    proxy_cache_path $1 levels=1:2 keys_zone=interop:1m;
    server {
        listen 127.0.0.1:$PROXY_PORT;
        location / {
            proxy_pass http://127.0.0.1:$BACKEND_PORT;
            proxy_cache interop;
            add_header X-Cache \$upstream_cache_status;
        }
    }
}
CONF
}

REQUESTS=("/a" "/b/c?x=1" "/vary en" "/vary de" "/vary fr")

fetch() {
    local target=${1% *} lang=""
    [ "$1" != "$target" ] && lang=${1#* }
    curl -s --max-time 5 -D "$WORK/head" -H "Accept-Language: $lang" \
        "http://127.0.0.1:$PROXY_PORT$target"
}

direction() {
    local writer=$1 reader=$2 cache="$WORK/cache-$1-to-$2" request body status failures=0
    proxy_conf "$cache"
    start_server nginx "$WORK/backend" "$WORK/backend.conf" "$BACKEND_PORT"
    local backend=$SERVER_PID
    start_server "$writer" "$WORK/$writer-w" "$WORK/proxy.conf" "$PROXY_PORT"
    local server=$SERVER_PID
    declare -A stored
    for request in "${REQUESTS[@]}"; do
        stored[$request]=$(fetch "$request")
    done
    stop_server "$server"
    stop_server "$backend"
    start_server "$reader" "$WORK/$reader-r" "$WORK/proxy.conf" "$PROXY_PORT"
    server=$SERVER_PID
    for request in "${REQUESTS[@]}"; do
        body=$(fetch "$request")
        status=$(sed -n 's/^X-Cache: \([A-Z]*\).*/\1/p' "$WORK/head")
        # A variant's body names its language: a server that mixed variants up fails here
        # even if it did so both times.
        local lang=""
        [ "$request" != "${request% *}" ] && lang=${request#* }
        if [ "$status" = HIT ] && [ "$body" = "${stored[$request]}" ] &&
            { [ -z "$lang" ] || [[ "$body" == "variant $lang "* ]]; }; then
            note "$writer -> $reader: $request HIT"
        else
            note "$writer -> $reader: $request FAILED (status '$status', body '$body', stored '${stored[$request]}')"
            failures=$((failures + 1))
        fi
    done
    stop_server "$server"
    return "$failures"
}

result=0
[ -n "${ONLY:-}" ] && { direction $ONLY || result=1; exit $result; }
direction nginx portico || result=1
direction portico nginx || result=1
if [ $result -eq 0 ]; then
    note "both directions: every entry and variant written by one server is a HIT in the other"
fi
exit $result
