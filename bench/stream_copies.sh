#!/usr/bin/env bash
# Scenario "stream_copies": would splice(2) help the `stream` block's plain TCP relay? One
# large transfer (SIZE_MB from a file in /dev/shm, sent by an nginx backend with sendfile)
# read by curl through each relay, `worker_processes 1`:
#
#   direct     curl -> backend
#   nginx      curl -> nginx stream proxy -> backend      (read/write through its buffer)
#   portico    curl -> Portico stream proxy -> backend    (the same)
#   splice     curl -> bench/lib/splice_relay.py -> backend  (splice through a pipe: the
#              relay's memory never holds the bytes)
#
# nginx and Portico read the same configuration (`proxy_buffer_size BUFFER`). Per run:
# MiB/s, the relay's CPU per GiB, user and system (the process's ticks in /proc/PID/stat,
# which keep the time of threads that have exited, as the splice relay's per-connection
# threads have by the time they are read; a 1 GiB transfer is a few hundred ticks), and the
# system calls it made per MiB (`perf stat` tracepoints): the
# data calls (read, write, recvfrom, sendto, readv, writev, recvmsg, sendmsg, splice) and
# epoll waits. A read/write relay copies every byte twice (kernel to its buffer, buffer to
# kernel); a splice relay does neither. With RECORD=1, the relay's CPU profile
# (`perf record -e cpu-clock`) is summarised: the share of samples in the kernel's copy
# routines, which is what splice would save.
#
#   bench/stream_copies.sh
#
# Environment (defaults in brackets): REPS [3] SIZE_MB [1024] BUFFER [16k] RECORD [0] PORTICO_BIN
#   NGINX_STREAM_MODULE [/usr/lib/nginx/modules/ngx_stream_module.so] KEEP_TMP [0]

source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"

REPS=${REPS:-3}
SIZE_MB=${SIZE_MB:-1024}
RECORD=${RECORD:-0}
BUFFER=${BUFFER:-16k}
NGINX_STREAM_MODULE=${NGINX_STREAM_MODULE:-/usr/lib/nginx/modules/ngx_stream_module.so}

ensure_tools
ensure_portico
[ -f "$NGINX_STREAM_MODULE" ] || die "no $NGINX_STREAM_MODULE: apt-get install libnginx-mod-stream"
command -v perf >/dev/null || die "perf is needed (apt-get install linux-perf)"
make_work_dir stream-copies
SHM=$(mktemp -d /dev/shm/portico-bench-stream-copies.XXXXXX)
trap 'kill -TERM "${SPLICE_PID:-}" 2>/dev/null; rm -rf "$SHM"; bench_cleanup' EXIT
head -c $((SIZE_MB * 1024 * 1024)) /dev/urandom >"$SHM/big" 2>/dev/null \
    || die "could not write $SIZE_MB MiB to /dev/shm"
# The backend's worker is not root.
chmod 755 "$SHM"
chmod 644 "$SHM/big"
SIZE=$(stat -c %s "$SHM/big")

BACKEND_PORT=$(free_port)
NGINX_PORT=$(free_port)
PORTICO_PORT=$(free_port)
SPLICE_PORT=$(free_port)
mkdir -p "$WORK/backend/logs" "$WORK/nginx/logs" "$WORK/portico/logs"
cat >"$WORK/backend.conf" <<EOF
worker_processes 1;
daemon off;
pid $WORK/backend/logs/nginx.pid;
events { worker_connections 1024; }
http {
    access_log off;
    sendfile on;
    server {
        listen 127.0.0.1:$BACKEND_PORT;
        root $SHM;
        location = / { return 200 "hello world"; }
    }
}
EOF
stream_conf() {
    cat <<EOF
$2
worker_processes 1;
daemon off;
pid logs/proxy.pid;
events { worker_connections 1024; }
stream {
    server {
        listen 127.0.0.1:$1;
        proxy_pass 127.0.0.1:$BACKEND_PORT;
        proxy_buffer_size $BUFFER;
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
python3 "$BENCH_DIR/lib/splice_relay.py" "$SPLICE_PORT" "$BACKEND_PORT" >"$WORK/splice.log" 2>&1 &
SPLICE_PID=$!
for port in "$BACKEND_PORT" "$NGINX_PORT" "$PORTICO_PORT" "$SPLICE_PORT"; do
    tries=0
    until [ "$(curl -s --max-time 2 "http://127.0.0.1:$port/")" = "hello world" ]; do
        tries=$((tries + 1))
        [ $tries -lt 50 ] || die "no answer on 127.0.0.1:$port"
        sleep 0.1
    done
done

row_pids() {
    case $1 in
        nginx) pgrep -P "$NGINX_PID" | tr '\n' ' ' ;;
        portico) echo "$PORTICO_PID" ;;
        splice) echo "$SPLICE_PID" ;;
        direct) echo "$(pgrep -P "$(cat "$WORK/backend/logs/nginx.pid")" | tr '\n' ' ')" ;;
    esac
}
row_port() {
    case $1 in
        nginx) echo "$NGINX_PORT" ;;
        portico) echo "$PORTICO_PORT" ;;
        splice) echo "$SPLICE_PORT" ;;
        direct) echo "$BACKEND_PORT" ;;
    esac
}

# user and system ticks, summed over the pids given: "USER SYSTEM".
user_system_ticks() {
    local pid user=0 system=0 stat
    for pid in "$@"; do
        stat=$(cat "/proc/$pid/stat")
        stat=${stat##*) }
        read -r u s < <(awk '{ print $12, $13 }' <<<"$stat")
        user=$((user + u))
        system=$((system + s))
    done
    echo "$user $system"
}

DATA_CALLS="read write recvfrom sendto readv writev recvmsg sendmsg splice"
EVENTS=()
for call in $DATA_CALLS epoll_wait epoll_pwait; do
    EVENTS+=(-e "syscalls:sys_enter_$call")
done

declare -A RATE CPU USER SYSTEM CALLS BYTES_PER_CALL WAITS
printf '%-8s %4s %10s %12s %10s %10s %14s %14s %12s\n' row rep MiB/s cpu_ms/GiB user_ms sys_ms \
    data_calls/MiB bytes/data_call waits/MiB
for rep in $(seq 1 "$REPS"); do
    for row in direct nginx portico splice; do
        # shellcheck disable=SC2086
        pids=($(row_pids "$row"))
        pid_list=$(IFS=,; echo "${pids[*]}")
        perf stat -x, "${EVENTS[@]}" -p "$pid_list" -o "$WORK/perf.$row" &
        perf_pid=$!
        record_pid=
        if [ "$RECORD" = 1 ] && [ "$row" != direct ]; then
            perf record -q -e cpu-clock -p "$pid_list" -o "$WORK/record.$row.$rep" >/dev/null 2>&1 &
            record_pid=$!
        fi
        sleep 0.3
        read -r user0 system0 < <(user_system_ticks "${pids[@]}")
        read -r bytes seconds < <(curl -s -o /dev/null -w '%{size_download} %{time_total}\n' \
            "http://127.0.0.1:$(row_port "$row")/big")
        read -r user1 system1 < <(user_system_ticks "${pids[@]}")
        kill -INT "$perf_pid"
        wait "$perf_pid" 2>/dev/null || true
        if [ -n "$record_pid" ]; then
            kill -INT "$record_pid"
            wait "$record_pid" 2>/dev/null || true
        fi
        [ "$bytes" = "$SIZE" ] || die "$row: $bytes bytes of $SIZE"
        calls=0
        waits=0
        while IFS=, read -r count _ event _; do
            [[ "$count" =~ ^[0-9]+$ ]] || continue
            case $event in
                *epoll*) waits=$((waits + count)) ;;
                *) calls=$((calls + count)) ;;
            esac
        done <"$WORK/perf.$row"
        read -r rate cpu user system per_mib per_call per_wait < <(awk -v b="$bytes" -v s="$seconds" \
            -v u="$((user1 - user0))" -v y="$((system1 - system0))" \
            -v tick="$CLK_TCK" -v n="$calls" -v w="$waits" 'BEGIN {
                gib = b / 1073741824; mib = b / 1048576
                printf("%.0f %.0f %.0f %.0f %.1f %.0f %.1f\n", mib / s, (u + y) * 1000 / tick / gib,
                    u * 1000 / tick / gib, y * 1000 / tick / gib, n / mib, n ? 2 * b / n : 0, w / mib)
            }')
        printf '%-8s %4s %10s %12s %10s %10s %14s %14s %12s\n' "$row" "$rep" "$rate" "$cpu" "$user" \
            "$system" "$per_mib" "$per_call" "$per_wait"
        RATE[$row]+="$rate "
        CPU[$row]+="$cpu "
        USER[$row]+="$user "
        SYSTEM[$row]+="$system "
        CALLS[$row]+="$per_mib "
        BYTES_PER_CALL[$row]+="$per_call "
        WAITS[$row]+="$per_wait "
    done
done

echo
echo "medians over $REPS runs of $SIZE_MB MiB, proxy_buffer_size $BUFFER (direct: the backend's own cost;" \
    "bytes/data_call counts each byte twice, once in and once out):"
printf '%-8s %10s %12s %10s %10s %14s %14s %12s\n' row MiB/s cpu_ms/GiB user_ms sys_ms \
    data_calls/MiB bytes/data_call waits/MiB
for row in direct nginx portico splice; do
    # shellcheck disable=SC2086
    printf '%-8s %10s %12s %10s %10s %14s %14s %12s\n' "$row" "$(median ${RATE[$row]})" \
        "$(median ${CPU[$row]})" "$(median ${USER[$row]})" "$(median ${SYSTEM[$row]})" \
        "$(median ${CALLS[$row]})" "$(median ${BYTES_PER_CALL[$row]})" "$(median ${WAITS[$row]})"
done
if [ "$RECORD" = 1 ]; then
    echo
    echo "share of the relay's cpu-clock samples in the kernel's copy routines (last run):"
    for row in nginx portico splice; do
        perf report -i "$WORK/record.$row.$REPS" --stdio --sort symbol 2>/dev/null \
            | awk -v row="$row" '/^ +[0-9.]+%/ {
                share = $1; sub("%", "", share); total += share
                if ($3 ~ /copy|memcpy|memmove/) copy += share
                if ($2 == "[.]") user += share }
                END { printf("%-8s copy routines %.1f%%, user space %.1f%%\n", row, copy, user) }'
    done
fi
