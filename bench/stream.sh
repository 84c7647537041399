#!/usr/bin/env bash
# Scenario "stream": the `stream` block as a TCP proxy in front of an HTTP backend, nginx
# and Portico on the same configuration, in one run:
#
#   direct     wrk -> backend
#   nginx      wrk -> nginx stream proxy -> backend     (load_module ngx_stream_module.so)
#   portico    wrk -> Portico stream proxy -> backend
#
# Two loads per row: "keepalive" (CONNECTIONS long-lived TCP sessions carrying many small
# request/response exchanges: the relay's cost per exchange) and "close" (`Connection:
# close`, a new TCP session and upstream connection per request: the cost per session).
# The backend is an nginx answering `return 200 "hello world";`. Both proxies run
# `worker_processes 1` so that the comparison is per core; the CPU each used over a run is
# read from its threads' schedstat.
#
#   bench/stream.sh
#
# Environment (defaults in brackets):
#   REPS [3] CONNECTIONS [50] DURATION [5] (seconds) WRK_THREADS [2]
#   PORTICO_BIN      use this binary instead of building
#   NGINX_STREAM_MODULE [/usr/lib/nginx/modules/ngx_stream_module.so]
#   KEEP_TMP [0]
#
# Prints one line per run and the medians; run it alone on the machine (`flock` the
# shared lock when others benchmark).

source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"

REPS=${REPS:-3}
CONNECTIONS=${CONNECTIONS:-50}
DURATION=${DURATION:-5}
WRK_THREADS=${WRK_THREADS:-2}
NGINX_STREAM_MODULE=${NGINX_STREAM_MODULE:-/usr/lib/nginx/modules/ngx_stream_module.so}

ensure_tools
ensure_portico
[ -f "$NGINX_STREAM_MODULE" ] || die "no $NGINX_STREAM_MODULE: apt-get install libnginx-mod-stream"
make_work_dir stream

BACKEND_PORT=$(free_port)
NGINX_PORT=$(free_port)
PORTICO_PORT=$(free_port)

mkdir -p "$WORK/backend/logs" "$WORK/nginx/logs" "$WORK/portico/logs"
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

# One stream configuration, written for each server with its own port.
stream_conf() {
    local port=$1 module=$2
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
}
EOF
}
stream_conf "$NGINX_PORT" "load_module $NGINX_STREAM_MODULE;" >"$WORK/nginx.conf"
stream_conf "$PORTICO_PORT" "" >"$WORK/portico.conf"

start_server nginx "$WORK/backend" "$WORK/backend.conf" "$BACKEND_PORT"
start_server nginx "$WORK/nginx" "$WORK/nginx.conf" "$NGINX_PORT"
NGINX_PID=$SERVER_PID
start_server portico "$WORK/portico" "$WORK/portico.conf" "$PORTICO_PORT"
PORTICO_PID=$SERVER_PID
for port in "$BACKEND_PORT" "$NGINX_PORT" "$PORTICO_PORT"; do
    check_answer "$port" "hello world" "127.0.0.1:$port"
done

# The pids whose CPU a row is charged with (nginx: the master's children too).
row_pids() {
    case $1 in
        nginx) echo "$NGINX_PID $(pgrep -P "$NGINX_PID" | tr '\n' ' ')" ;;
        portico) echo "$PORTICO_PID" ;;
        direct) echo "" ;;
    esac
}

row_port() {
    case $1 in
        nginx) echo "$NGINX_PORT" ;;
        portico) echo "$PORTICO_PORT" ;;
        direct) echo "$BACKEND_PORT" ;;
    esac
}

declare -A RPS P99 CPU
printf '%-8s %-10s %4s %12s %10s %14s\n' row load rep req/s p99_us cpu_us/request
for rep in $(seq 1 "$REPS"); do
    for load in keepalive close; do
        for row in direct nginx portico; do
            port=$(row_port "$row")
            header=()
            [ "$load" = close ] && header=(-H "Connection: close")
            pids=$(row_pids "$row")
            # shellcheck disable=SC2086
            before=$([ -n "$pids" ] && family_cpu_ns $pids || echo 0)
            wrk -t "$WRK_THREADS" -c "$CONNECTIONS" -d "${DURATION}s" --latency "${header[@]}" \
                "http://127.0.0.1:$port/" >"$WORK/wrk.out" 2>&1 || true
            # shellcheck disable=SC2086
            after=$([ -n "$pids" ] && family_cpu_ns $pids || echo 0)
            read -r requests rps _avg p99 errors < <(parse_wrk "$WORK/wrk.out") \
                || die "could not read wrk's output: $(cat "$WORK/wrk.out")"
            cpu=$(awk -v a="$after" -v b="$before" -v n="$requests" 'BEGIN { printf("%.2f", (a - b) / 1000 / n) }')
            printf '%-8s %-10s %4s %12s %10s %14s%s\n' "$row" "$load" "$rep" "$rps" "$p99" "$cpu" \
                "$([ "$errors" != 0 ] && echo " ($errors errors)")"
            RPS[$row.$load]+="$rps "
            P99[$row.$load]+="$p99 "
            CPU[$row.$load]+="$cpu "
        done
    done
done

echo
echo "medians over $REPS runs (CONNECTIONS=$CONNECTIONS, DURATION=${DURATION}s):"
printf '%-10s %-8s %12s %10s %14s\n' load row req/s p99_us cpu_us/request
for load in keepalive close; do
    for row in direct nginx portico; do
        # shellcheck disable=SC2086
        printf '%-10s %-8s %12s %10s %14s\n' "$load" "$row" \
            "$(median ${RPS[$row.$load]})" "$(median ${P99[$row.$load]})" "$(median ${CPU[$row.$load]})"
    done
    # shellcheck disable=SC2086
    awk -v p="$(median ${RPS[portico.$load]})" -v n="$(median ${RPS[nginx.$load]})" \
        -v pc="$(median ${CPU[portico.$load]})" -v nc="$(median ${CPU[nginx.$load]})" -v l="$load" \
        'BEGIN { printf("%-10s portico/nginx: req/s %.2fx, CPU per request %.2fx\n", l, p / n, pc / nc) }'
done
