#!/usr/bin/env bash
# Scenario "stream": the `stream` block as a TCP, TLS and UDP proxy, nginx and Portico on the
# same configuration, in one run:
#
#   direct     client -> backend
#   nginx      client -> nginx stream proxy -> backend     (load_module ngx_stream_module.so)
#   portico    client -> Portico stream proxy -> backend
#
# Four loads per row:
#   keepalive  wrk, CONNECTIONS long-lived TCP sessions carrying many small request/response
#              exchanges: the relay's cost per exchange
#   close      wrk with `Connection: close`, a new TCP session and upstream connection per
#              request: the cost per session
#   tls        new TLS sessions through the stream `listen ... ssl` server (TLS 1.3, full
#              handshakes, ECDSA P-256) in front of the same backend: TLS_PARALLEL threads of
#              crates/tls/examples/handshakes.rs (`openssl s_time -new` with
#              HANDSHAKE_CLIENT=s_time), each a new connection, handshake, `GET /`, answer,
#              close, one after another; handshakes/s (no direct row: the backend is plain)
#   udp        DNS questions through `listen ... udp` with `proxy_responses 1` (so a session
#              per question, as a DNS proxy runs) to a dnsmasq answering from a hosts file:
#              bench/lib/dns_load.py, DNS_SOCKETS client sockets each with one question
#              outstanding; queries/s (the direct row asks dnsmasq itself)
# The HTTP backend is an nginx answering `return 200 "hello world";`. Both proxies run
# `worker_processes 1` so that the comparison is per core; the CPU each used over a run is
# read from its threads' schedstat.
#
#   bench/stream.sh
#
# Environment (defaults in brackets):
#   REPS [3] CONNECTIONS [50] DURATION [5] (seconds) WRK_THREADS [2]
#   LOADS ["keepalive close tls udp"] TLS_PARALLEL [4] DNS_SOCKETS [32]
#   HANDSHAKE_CLIENT [rust, or s_time without cargo] HANDSHAKES_BIN (a built
#   crates/tls/examples/handshakes)
#   PORTICO_BIN      use this binary instead of building
#   NGINX_STREAM_MODULE [/usr/lib/nginx/modules/ngx_stream_module.so]
#   KEEP_TMP [0]
#
# Prints one line per run and the medians; run it alone on the machine (`flock` the
# shared lock when others benchmark). Without dnsmasq (Debian: dnsmasq-base) the udp load
# is left out with a note.

source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"

REPS=${REPS:-3}
CONNECTIONS=${CONNECTIONS:-50}
DURATION=${DURATION:-5}
WRK_THREADS=${WRK_THREADS:-2}
LOADS=${LOADS:-"keepalive close tls udp"}
TLS_PARALLEL=${TLS_PARALLEL:-4}
DNS_SOCKETS=${DNS_SOCKETS:-32}
NGINX_STREAM_MODULE=${NGINX_STREAM_MODULE:-/usr/lib/nginx/modules/ngx_stream_module.so}
if [ -z "${HANDSHAKE_CLIENT:-}" ]; then
    HANDSHAKE_CLIENT=s_time
    { [ -n "${HANDSHAKES_BIN:-}" ] || command -v cargo >/dev/null; } && HANDSHAKE_CLIENT=rust
fi

ensure_tools
ensure_portico
[ -f "$NGINX_STREAM_MODULE" ] || die "no $NGINX_STREAM_MODULE: apt-get install libnginx-mod-stream"
command -v openssl >/dev/null || die "the openssl command is needed"
DNSMASQ_BIN=$(command -v dnsmasq || echo /usr/sbin/dnsmasq)
if [[ " $LOADS " == *" udp "* ]] && [ ! -x "$DNSMASQ_BIN" ]; then
    note "no dnsmasq (Debian: apt-get install dnsmasq-base): the udp load is left out"
    LOADS=${LOADS//udp/}
fi
make_work_dir stream

if [[ " $LOADS " == *" tls "* ]]; then
    case $HANDSHAKE_CLIENT in
        rust)
            if [ -n "${HANDSHAKES_BIN:-}" ]; then
                cp "$HANDSHAKES_BIN" "$WORK/handshakes" || die "HANDSHAKES_BIN=$HANDSHAKES_BIN not found"
            else
                target=${CARGO_TARGET_DIR:-$REPO_DIR/target}
                (cd "$REPO_DIR" && CARGO_TARGET_DIR=$target cargo build --release --quiet \
                    -p portico-tls --example handshakes) \
                    || die "could not build crates/tls/examples/handshakes.rs"
                cp "$target/release/examples/handshakes" "$WORK/handshakes"
            fi
            ;;
        s_time) ;;
        *) die "HANDSHAKE_CLIENT is rust or s_time" ;;
    esac
    note "handshake load: $HANDSHAKE_CLIENT, $TLS_PARALLEL client threads (s_time: one)"
fi
make_ecdsa_cert "$WORK"

BACKEND_PORT=$(free_port)
DNS_PORT=$(free_port)
NGINX_PORT=$(free_port)
NGINX_TLS_PORT=$(free_port)
NGINX_UDP_PORT=$(free_port)
PORTICO_PORT=$(free_port)
PORTICO_TLS_PORT=$(free_port)
PORTICO_UDP_PORT=$(free_port)
# The name dnsmasq answers and the address it answers with.
DNS_NAME=db.portico.test
DNS_ADDRESS=192.0.2.42

mkdir -p "$WORK/backend/logs" "$WORK/nginx/logs" "$WORK/portico/logs" "$WORK/dnsmasq"
cat >"$WORK/backend.conf" <<EOF
worker_processes 1;
daemon off;
pid $WORK/backend/logs/nginx.pid;
events { worker_connections 4096; }
http {
    access_log off;
    server {
        listen 127.0.0.1:$BACKEND_PORT backlog=4096;
        keepalive_requests 1000000;
        location / { return 200 "hello world"; }
    }
}
EOF

# One stream configuration, written for each server with its own ports.
stream_conf() {
    local port=$1 tls_port=$2 udp_port=$3 module=$4
    cat <<EOF
$module
worker_processes 1;
daemon off;
pid logs/proxy.pid;
events { worker_connections 8192; }
stream {
    upstream backend {
        server 127.0.0.1:$BACKEND_PORT;
    }
    server {
        listen 127.0.0.1:$port backlog=4096;
        proxy_pass backend;
        proxy_connect_timeout 2s;
    }
    server {
        listen 127.0.0.1:$tls_port ssl backlog=4096;
        ssl_certificate $WORK/ecdsa.crt;
        ssl_certificate_key $WORK/ecdsa.key;
        # Debian's nginx 1.22 leaves TLS 1.3 out by default.
        ssl_protocols TLSv1.2 TLSv1.3;
        proxy_pass backend;
        proxy_connect_timeout 2s;
    }
    server {
        listen 127.0.0.1:$udp_port udp;
        proxy_pass 127.0.0.1:$DNS_PORT;
        proxy_responses 1;
        proxy_timeout 5s;
    }
}
EOF
}
stream_conf "$NGINX_PORT" "$NGINX_TLS_PORT" "$NGINX_UDP_PORT" \
    "load_module $NGINX_STREAM_MODULE;" >"$WORK/nginx.conf"
stream_conf "$PORTICO_PORT" "$PORTICO_TLS_PORT" "$PORTICO_UDP_PORT" "" >"$WORK/portico.conf"

start_server nginx "$WORK/backend" "$WORK/backend.conf" "$BACKEND_PORT"
start_server nginx "$WORK/nginx" "$WORK/nginx.conf" "$NGINX_PORT"
NGINX_PID=$SERVER_PID
start_server portico "$WORK/portico" "$WORK/portico.conf" "$PORTICO_PORT"
PORTICO_PID=$SERVER_PID
for port in "$BACKEND_PORT" "$NGINX_PORT" "$PORTICO_PORT"; do
    check_answer "$port" "hello world" "127.0.0.1:$port"
done
for port in "$NGINX_TLS_PORT" "$PORTICO_TLS_PORT"; do
    answer=$(curl -sk --max-time 5 "https://127.0.0.1:$port/") || die "no TLS answer on $port"
    [ "$answer" = "hello world" ] || die "127.0.0.1:$port answered '$answer' over TLS"
done

if [[ " $LOADS " == *" udp "* ]]; then
    echo "$DNS_ADDRESS $DNS_NAME" >"$WORK/dnsmasq/hosts"
    # dnsmasq stops on TERM (stop_server's QUIT would make it dump core), so it is stopped
    # here, by its pid, before the servers.
    user=()
    [ "$(id -u)" = 0 ] && user=(--user=root)
    "$DNSMASQ_BIN" --keep-in-foreground --conf-file=/dev/null --log-facility=- \
        --no-resolv --no-hosts --no-poll --addn-hosts="$WORK/dnsmasq/hosts" \
        --listen-address=127.0.0.1 --bind-interfaces --port="$DNS_PORT" \
        --local=/portico.test/ --pid-file="$WORK/dnsmasq/pid" "${user[@]}" \
        >"$WORK/dnsmasq/log" 2>&1 &
    DNSMASQ_PID=$!
    trap 'kill -TERM "$DNSMASQ_PID" 2>/dev/null; wait "$DNSMASQ_PID" 2>/dev/null; bench_cleanup' EXIT
    for port in "$DNS_PORT" "$NGINX_UDP_PORT" "$PORTICO_UDP_PORT"; do
        tries=0
        until python3 "$BENCH_DIR/lib/dns_load.py" "$port" "$DNS_NAME" "$DNS_ADDRESS" 0.3 1 \
            | grep -qv '^answered 0 '; do
            tries=$((tries + 1))
            [ $tries -lt 20 ] || die "no DNS answer on 127.0.0.1:$port: $(cat "$WORK/dnsmasq/log")"
        done
    done
fi

# The pids whose CPU a row is charged with (nginx: the master's children too).
row_pids() {
    case $1 in
        nginx) echo "$NGINX_PID $(pgrep -P "$NGINX_PID" | tr '\n' ' ')" ;;
        portico) echo "$PORTICO_PID" ;;
        direct) echo "" ;;
    esac
}

# row_port ROW LOAD
row_port() {
    case $1.$2 in
        nginx.tls) echo "$NGINX_TLS_PORT" ;;
        nginx.udp) echo "$NGINX_UDP_PORT" ;;
        nginx.*) echo "$NGINX_PORT" ;;
        portico.tls) echo "$PORTICO_TLS_PORT" ;;
        portico.udp) echo "$PORTICO_UDP_PORT" ;;
        portico.*) echo "$PORTICO_PORT" ;;
        direct.udp) echo "$DNS_PORT" ;;
        direct.*) echo "$BACKEND_PORT" ;;
    esac
}

# run_load LOAD PORT: runs one load against 127.0.0.1:PORT and sets COUNT (operations
# done), RATE (per second), P99 (µs, or "-") and ERRORS.
run_load() {
    local load=$1 port=$2 out=$WORK/load.out seconds lost wrong
    case $load in
        keepalive | close)
            local header=()
            [ "$load" = close ] && header=(-H "Connection: close")
            wrk -t "$WRK_THREADS" -c "$CONNECTIONS" -d "${DURATION}s" --latency "${header[@]}" \
                "http://127.0.0.1:$port/" >"$out" 2>&1 || true
            read -r COUNT RATE _ P99 ERRORS < <(parse_wrk "$out") \
                || die "could not read wrk's output: $(cat "$out")"
            ;;
        tls)
            if [ "$HANDSHAKE_CLIENT" = s_time ]; then
                timeout $((DURATION + 30)) openssl s_time -connect "127.0.0.1:$port" -new \
                    -time "$DURATION" -www / >"$out" 2>&1 || die "s_time failed: $(tail -3 "$out")"
            else
                timeout $((DURATION + 30)) "$WORK/handshakes" --connect "127.0.0.1:$port" \
                    --time "$DURATION" --parallel "$TLS_PARALLEL" >"$out" 2>&1 \
                    || die "handshakes failed: $(tail -3 "$out")"
            fi
            # "N connections in S real seconds"
            read -r COUNT seconds < <(awk '/connections in .* real seconds/ { print $1, $4 }' "$out" | tail -1) \
                || die "could not read the handshake client's output: $(cat "$out")"
            RATE=$(awk -v n="$COUNT" -v s="$seconds" 'BEGIN { printf("%.2f", n / s) }')
            P99=-
            ERRORS=0
            ;;
        udp)
            python3 "$BENCH_DIR/lib/dns_load.py" "$port" "$DNS_NAME" "$DNS_ADDRESS" "$DURATION" \
                "$DNS_SOCKETS" >"$out" 2>&1 || die "dns_load.py failed: $(cat "$out")"
            # "answered N seconds S lost L wrong W p99_us P"
            read -r COUNT seconds lost wrong P99 < <(awk '{ print $2, $4, $6, $8, $10 }' "$out")
            RATE=$(awk -v n="$COUNT" -v s="$seconds" 'BEGIN { printf("%.2f", n / s) }')
            ERRORS=$((lost + wrong))
            ;;
    esac
}

declare -A RATES P99S CPUS
LOAD_AT_START=$(cut -d' ' -f1-3 /proc/loadavg)
printf '%-8s %-10s %4s %12s %10s %10s\n' row load rep ops/s p99_us cpu_us/op
for rep in $(seq 1 "$REPS"); do
    for load in $LOADS; do
        for row in direct nginx portico; do
            [ "$row.$load" = direct.tls ] && continue
            port=$(row_port "$row" "$load")
            pids=$(row_pids "$row")
            # shellcheck disable=SC2086
            before=$([ -n "$pids" ] && family_cpu_ns $pids || echo 0)
            run_load "$load" "$port"
            # shellcheck disable=SC2086
            after=$([ -n "$pids" ] && family_cpu_ns $pids || echo 0)
            cpu=$(awk -v a="$after" -v b="$before" -v n="$COUNT" 'BEGIN { printf("%.2f", (a - b) / 1000 / n) }')
            printf '%-8s %-10s %4s %12s %10s %10s%s\n' "$row" "$load" "$rep" "$RATE" "$P99" "$cpu" \
                "$([ "$ERRORS" != 0 ] && echo " ($ERRORS errors)")"
            RATES[$row.$load]+="$RATE "
            P99S[$row.$load]+="$P99 "
            CPUS[$row.$load]+="$cpu "
        done
    done
done

echo
echo "load average (1, 5, 15 min) at the start: $LOAD_AT_START, at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "medians over $REPS runs (CONNECTIONS=$CONNECTIONS, DURATION=${DURATION}s," \
    "TLS_PARALLEL=$TLS_PARALLEL, DNS_SOCKETS=$DNS_SOCKETS, HANDSHAKE_CLIENT=$HANDSHAKE_CLIENT):"
printf '%-10s %-8s %12s %10s %10s\n' load row ops/s p99_us cpu_us/op
for load in $LOADS; do
    for row in direct nginx portico; do
        [ "$row.$load" = direct.tls ] && continue
        p99=-
        # shellcheck disable=SC2086
        [ "$load" = tls ] || p99=$(median ${P99S[$row.$load]})
        # shellcheck disable=SC2086
        printf '%-10s %-8s %12s %10s %10s\n' "$load" "$row" \
            "$(median ${RATES[$row.$load]})" "$p99" "$(median ${CPUS[$row.$load]})"
    done
    # shellcheck disable=SC2086
    awk -v p="$(median ${RATES[portico.$load]})" -v n="$(median ${RATES[nginx.$load]})" \
        -v pc="$(median ${CPUS[portico.$load]})" -v nc="$(median ${CPUS[nginx.$load]})" -v l="$load" \
        'BEGIN { printf("%-10s portico/nginx: ops/s %.2fx, CPU per op %.2fx\n", l, p / n, pc / nc) }'
done
