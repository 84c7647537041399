#!/usr/bin/env bash
# User-space instructions per request, counted by valgrind's callgrind: a count that does not
# depend on what else the machine runs (this machine has no hardware counters for `perf`).
# nginx (`master_process off`) and Portico (and, with BASE_BIN, an earlier Portico build)
# run one worker each under callgrind with the same configuration but the port; h2load
# sends WARM requests, the counters are zeroed, then REQUESTS more are counted.
#
#   bench/instructions.sh
#   BASE_BIN=/path/to/older/portico bench/instructions.sh
#
# Scenarios: return200 (`return 200 'hello world'`), static-1k (a 1 KiB file, sendfile on),
# proxy-ka (proxy_pass to an upstream with keepalive 32 in front of an nginx backend),
# h2c-return200 (the same `return 200` over HTTP/2 with prior knowledge, 10 streams per
# connection). Each over CONNECTIONS [10] keep-alive connections.
#
# Environment (defaults in brackets): SCENARIOS ["return200 static-1k proxy-ka
# h2c-return200"], REQUESTS [20000], WARM [2000], CONNECTIONS [10], PORTICO_BIN, BASE_BIN,
# KEEP_TMP [0], SERVERS ["nginx portico", and "base" with BASE_BIN]: which servers run, in
# order (without nginx, the last column compares with the first server instead).

source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"

SCENARIOS=${SCENARIOS:-"return200 static-1k proxy-ka h2c-return200"}
REQUESTS=${REQUESTS:-20000}
WARM=${WARM:-2000}
CONNECTIONS=${CONNECTIONS:-10}
BASE_BIN=${BASE_BIN:-}
KEEP_TMP=${KEEP_TMP:-0}

command -v valgrind >/dev/null || die "valgrind not found: apt-get install -y valgrind"
command -v callgrind_control >/dev/null || die "callgrind_control not found (valgrind)"
command -v h2load >/dev/null || die "h2load not found: apt-get install -y nghttp2-client"
ensure_tools
ensure_portico
make_work_dir instructions

if [ -z "${SERVERS:-}" ]; then
    SERVERS="nginx portico"
    [ -n "$BASE_BIN" ] && SERVERS="$SERVERS base"
fi
case " $SERVERS " in *" base "*) [ -n "$BASE_BIN" ] || die "SERVERS names base: set BASE_BIN" ;; esac
USER_LINE=""
[ "$(id -u)" -eq 0 ] && USER_LINE="user root;"
BACKEND_PORT=$(free_port)
mkdir -p "$WORK/html"
head -c 1024 /dev/zero | tr '\0' 'x' >"$WORK/html/1k.bin"

cat >"$WORK/backend.conf" <<EOF
$USER_LINE
worker_processes 1;
daemon off;
pid logs/server.pid;
error_log logs/error.log;
events { worker_connections 1024; }
http {
    access_log off;
    server {
        listen 127.0.0.1:$BACKEND_PORT;
        keepalive_requests 1000000;
        location / { return 200 'hello world'; }
    }
}
EOF
start_server nginx "$WORK/backend" "$WORK/backend.conf" "$BACKEND_PORT"

# One configuration per server, the same but for the port; nginx runs without a master.
write_conf() {
    local kind=$1 port=$2 file=$3 master="" h2_port=$(($2 + 1))
    [ "$kind" = nginx ] && master="master_process off;"
    cat >"$file" <<EOF
$USER_LINE
$master
worker_processes 1;
daemon off;
pid logs/server.pid;
error_log logs/error.log;
events { worker_connections 1024; }
http {
    access_log off;
    sendfile on;
    keepalive_requests 1000000;
    upstream keepalive_backend {
        server 127.0.0.1:$BACKEND_PORT;
        keepalive 32;
    }
    server {
        listen 127.0.0.1:$port;
        root $WORK/html;
        location = / { return 200 'hello world'; }
        location = /1k.bin { }
        location /ka/ {
            proxy_pass http://keepalive_backend;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
        }
    }
    # h2c with prior knowledge, as nginx 1.22 spells it.
    server {
        listen 127.0.0.1:$h2_port http2;
        location = / { return 200 'hello world'; }
    }
}
EOF
}

scenario_load() {
    local scenario=$1 port=$2 count=$3
    case $scenario in
        return200) h2load --h1 -n "$count" -c "$CONNECTIONS" "http://127.0.0.1:$port/" ;;
        static-1k) h2load --h1 -n "$count" -c "$CONNECTIONS" "http://127.0.0.1:$port/1k.bin" ;;
        proxy-ka) h2load --h1 -n "$count" -c "$CONNECTIONS" "http://127.0.0.1:$port/ka/" ;;
        h2c-return200) h2load -n "$count" -c "$CONNECTIONS" -m 10 "http://127.0.0.1:$((port + 1))/" ;;
        *) die "unknown scenario $scenario" ;;
    esac
}

# Counts one server's instructions for one scenario; prints instructions per request.
count_one() {
    local kind=$1 scenario=$2 port prefix conf bin out pid total done_count
    # The h2c server listens on the port after this one.
    port=$(free_port)
    while ss -ltn "sport = :$((port + 1))" | grep -q LISTEN; do
        port=$(free_port)
    done
    prefix=$WORK/$kind-$scenario
    conf=$WORK/$kind-$scenario.conf
    mkdir -p "$prefix/logs"
    write_conf "$kind" "$port" "$conf"
    case $kind in
        nginx) bin=$NGINX_BIN ;;
        portico) bin=$PORTICO_BIN ;;
        base) bin=$BASE_BIN ;;
    esac
    out=$prefix/callgrind.out
    valgrind --tool=callgrind --callgrind-out-file="$out" --trace-children=no \
        "$bin" -p "$prefix/" -e "$prefix/logs/error.log" -c "$conf" \
        >>"$prefix/logs/stdout.log" 2>>"$prefix/logs/valgrind.log" &
    pid=$!
    STARTED_PIDS+=("$pid")
    wait_listening "$port" "$pid" || die "$kind did not start under valgrind: $(tail -5 "$prefix/logs/valgrind.log")"
    scenario_load "$scenario" "$port" "$WARM" >"$prefix/warm.txt" 2>&1 || die "$kind warm-up failed"
    callgrind_control -z "$pid" >/dev/null
    scenario_load "$scenario" "$port" "$REQUESTS" >"$prefix/load.txt" 2>&1 || die "$kind load failed"
    done_count=$(awk '/^requests:/ { print $8; exit }' "$prefix/load.txt")
    [ "$done_count" = "$REQUESTS" ] || die "$kind $scenario: $done_count of $REQUESTS requests succeeded"
    callgrind_control -d "$pid" >/dev/null
    sleep 0.5
    stop_server "$pid"
    # The dump after zeroing is the highest-numbered part file (callgrind.out.N).
    total=$(cat "$out".* 2>/dev/null | awk '/^summary:/ { s = $2 } END { print s + 0 }')
    if [ "$total" = 0 ]; then
        total=$(ls -1 "$out"* | sort -V | tail -1 | xargs awk '/^summary:/ { print $2 }')
    fi
    awk -v t="$total" -v n="$REQUESTS" 'BEGIN { printf "%.0f\n", t / n }'
}

printf '%-15s %-8s %14s %9s\n' scenario server instr/request vs_nginx
for scenario in $SCENARIOS; do
    nginx_count=""
    for kind in $SERVERS; do
        count=$(count_one "$kind" "$scenario")
        [ -z "$nginx_count" ] && nginx_count=$count
        [ "$kind" = nginx ] && nginx_count=$count
        printf '%-15s %-8s %14s %8sx\n' "$scenario" "$kind" "$count" \
            "$(awk -v a="$count" -v b="$nginx_count" 'BEGIN { printf "%.2f", a / b }')"
    done
done
echo "- Portico: $(git -C "$REPO_DIR" rev-parse --short HEAD 2>/dev/null) ($PORTICO_BIN)${BASE_BIN:+; base: $BASE_BIN}"
echo "- callgrind counts user-space instructions only (no kernel), with valgrind's own cost excluded"
