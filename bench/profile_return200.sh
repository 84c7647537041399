#!/usr/bin/env bash
# Where the time per request goes in the return200 scenario, nginx vs Portico: system calls
# per request (kernel tracepoints, counted by perf: no strace slowdown), instructions and
# cycles per request split user/kernel, context switches; optionally a perf profile.
#
#   bench/profile_return200.sh
#
# Each repetition loads each server twice (syscall tracepoints, then instruction and cycle
# counters: an enabled tracepoint adds kernel instructions to every system call).
#
# Environment (defaults in brackets): SETTINGS ["1 auto"], REPS [2], DURATION [10],
# WRK_THREADS [nproc], CONNECTIONS [100], WORKER_CONNECTIONS [1024], PORTICO_BIN,
# CARGO_TARGET_DIR, RECORD [0] (1 also runs `perf record -g` for each server and prints the
# top symbols), KEEP_TMP [0].
#
# Needs perf (apt-get install linux-perf) with working counters: `perf stat -e instructions true`.
# The same configuration as bench/return200.sh; see bench/README.md.

source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"

SETTINGS=${SETTINGS:-"1 auto"}
REPS=${REPS:-2}
DURATION=${DURATION:-10}
WRK_THREADS=${WRK_THREADS:-$(nproc)}
CONNECTIONS=${CONNECTIONS:-100}
WORKER_CONNECTIONS=${WORKER_CONNECTIONS:-1024}
RECORD=${RECORD:-0}
KEEP_TMP=${KEEP_TMP:-0}
EXPECTED='hello world'

command -v perf >/dev/null || die "perf not found: apt-get install -y linux-perf"
perf stat -e instructions true >/dev/null 2>&1 || die "perf counters do not work here"
ensure_tools
ensure_portico

make_work_dir profile

# The same file as bench/return200.sh writes.
write_conf() {
    local workers=$1 port=$2 file=$3 user_line=""
    [ "$(id -u)" -eq 0 ] && user_line="user root;"
    cat >"$file" <<EOF
$user_line
worker_processes $workers;
daemon off;
pid logs/server.pid;
error_log logs/error.log;
events {
    worker_connections $WORKER_CONNECTIONS;
}
http {
    access_log off;
    server {
        listen 127.0.0.1:$port;
        location / {
            return 200 '$EXPECTED';
        }
    }
}
EOF
}

SYSCALLS="read recvfrom readv write writev sendto sendmsg epoll_wait epoll_pwait epoll_ctl accept4 close futex setsockopt getsockname sched_yield"
# Two measured runs per repetition, because an enabled tracepoint runs perf's handler in the
# kernel at every system call, which the instruction counters would count too.
SYSCALL_EVENTS=(-e raw_syscalls:sys_enter)
for call in $SYSCALLS; do
    SYSCALL_EVENTS+=(-e "syscalls:sys_enter_$call")
done
# Reads that found nothing to read (EAGAIN): the exit tracepoints, filtered on the result.
SYSCALL_EVENTS+=(-e syscalls:sys_exit_read --filter 'ret == -11' -e syscalls:sys_exit_recvfrom --filter 'ret == -11')
SYSCALL_EVENTS+=(-e context-switches -e cpu-migrations)
COUNTER_EVENTS=(-e instructions:u -e instructions:k -e cycles:u -e cycles:k)

# "tid comm ticks voluntary_switches involuntary_switches" for every thread of the pids given.
task_ticks() {
    local pid task line
    for pid in $1; do
        for task in /proc/"$pid"/task/*; do
            line=$(cat "$task/stat" 2>/dev/null) || continue
            local comm=${line#*(}
            comm=${comm%)*}
            line=${line##*) }
            awk -v t="${task##*/}" -v c="${comm// /_}" -v f="$task/status" -v p="$pid" '{
                ticks = $12 + $13
                while ((getline l < f) > 0) {
                    split(l, a, /[: \t]+/)
                    if (a[1] == "voluntary_ctxt_switches") v = a[2]
                    if (a[1] == "nonvoluntary_ctxt_switches") n = a[2]
                }
                print t, c "(" p ")", ticks, v + 0, n + 0
            }' <<<"$line"
        done
    done
}

TABLE=$WORK/table.tsv
: >"$TABLE"

profile_one() {
    local kind=$1 setting=$2 rep=$3 port=$4 conf=$5
    local prefix=$WORK/$kind-$setting pids pass
    start_server "$kind" "$prefix" "$conf" "$port"
    check_answer "$port" "$EXPECTED" "$kind"
    wrk -t"$WRK_THREADS" -c"$CONNECTIONS" -d1s "http://127.0.0.1:$port/" >/dev/null
    pids=$(process_family "$SERVER_PID" | paste -sd, -)
    for pass in syscalls counters; do
        task_ticks "${pids//,/ }" >"$WORK/tasks0"
        if [ $pass = syscalls ]; then
            measured_run "$kind" "$setting" "$rep" "$port" "$pids" "${SYSCALL_EVENTS[@]}"
        else
            measured_run "$kind" "$setting" "$rep" "$port" "$pids" "${COUNTER_EVENTS[@]}"
        fi
    done
    task_ticks "${pids//,/ }" >"$WORK/tasks1"
    # CPU per thread (Portico) or process (nginx) over the second run, to see how the load spreads.
    # join prints: tid, then the other fields of the first file, then those of the second.
    join <(sort "$WORK/tasks0") <(sort "$WORK/tasks1") | awk -v k="$kind" -v s="$setting" -v r="$rep" -v hz="$CLK_TCK" '
        $7 - $3 > 1 { printf "%s worker_processes %s rep %s: %s %s %.2f s CPU, %d voluntary + %d involuntary context switches\n",
            k, s, r, $1, $2, ($7 - $3) / hz, $8 - $4, $9 - $5 }' >>"$WORK/tasks.txt"
    if [ "$RECORD" = 1 ] && [ "$rep" = 1 ]; then
        local data=$WORK/perf-$kind-$setting.data
        timeout $((DURATION + 30)) wrk -t"$WRK_THREADS" -c"$CONNECTIONS" -d"${DURATION}s" \
            "http://127.0.0.1:$port/" >/dev/null &
        local wrk_pid=$!
        sleep 1
        perf record -q -g -F 999 -p "$pids" -o "$data" -- sleep 5 2>/dev/null
        wait "$wrk_pid" || true
        {
            echo "## perf report: $kind, worker_processes $setting (top symbols, self time)"
            perf report -i "$data" --no-children --sort dso --stdio -g none 2>/dev/null | grep '%' | head -n 5
            perf report -i "$data" --no-children --sort dso,sym --percent-limit 0.5 --stdio -g none 2>/dev/null \
                | grep '%' | head -n 40
        } >>"$WORK/report.txt"
    fi
    stop_server "$SERVER_PID"
}

# One wrk run with `perf stat EVENTS...` attached to PIDS; appends per-request counts to $TABLE.
#   measured_run KIND SETTING REP PORT PIDS EVENTS...
measured_run() {
    local kind=$1 setting=$2 rep=$3 port=$4 pids=$5 perf_pid requests
    shift 5
    local out=$WORK/wrk.txt stat=$WORK/perf.csv
    # perf stat -p counts every thread of each process given.
    perf stat -x, "$@" -p "$pids" -o "$stat" &
    perf_pid=$!
    sleep 0.2
    timeout $((DURATION + 30)) wrk -t"$WRK_THREADS" -c"$CONNECTIONS" -d"${DURATION}s" \
        "http://127.0.0.1:$port/" >"$out"
    kill -INT "$perf_pid"
    wait "$perf_pid" || true
    requests=$(awk '/ requests in / { print $1; exit }' "$out")
    awk -F, -v k="$kind" -v s="$setting" -v r="$rep" -v n="$requests" -v OFS='\t' '
        $1 ~ /^[0-9.]+$/ {
            e = $3
            if (e ~ /^syscalls:sys_exit_/) { sub(/^syscalls:sys_exit_/, "", e); e = e " returning EAGAIN" }
            print s, r, k, n, e, $1 / n
        }' "$stat" >>"$TABLE"
    note "$kind worker_processes $setting rep $rep: $requests requests ($*)"
}

for setting in $SETTINGS; do
    port=$(free_port)
    conf=$WORK/return200-$setting.conf
    write_conf "$setting" "$port" "$conf"
    for rep in $(seq 1 "$REPS"); do
        profile_one nginx "$setting" "$rep" "$port" "$conf"
        profile_one portico "$setting" "$rep" "$port" "$conf"
    done
done

# Per-request counts: mean over the repetitions, nginx and Portico side by side.
echo "# Per request (mean of $REPS runs of wrk -t$WRK_THREADS -c$CONNECTIONS -d${DURATION}s); Portico $PORTICO_BIN"
for setting in $SETTINGS; do
    echo
    echo "worker_processes $setting"
    printf '%-36s %12s %12s %8s\n' event nginx portico ratio
    awk -F'\t' -v s="$setting" '
        $1 == s { sum[$5, $3] += $6; cnt[$5, $3]++; if (!($5 in seen)) { seen[$5] = 1; order[++n] = $5 } }
        END {
            for (i = 1; i <= n; i++) {
                e = order[i]
                a = cnt[e, "nginx"] ? sum[e, "nginx"] / cnt[e, "nginx"] : 0
                b = cnt[e, "portico"] ? sum[e, "portico"] / cnt[e, "portico"] : 0
                if (a == 0 && b == 0) continue
                printf "%-36s %12.3f %12.3f %8s\n", e, a, b, (a > 0 ? sprintf("%.2f", b / a) : "-")
            }
        }' "$TABLE"
done
echo
echo "# CPU per thread/process during each measured run (busy ones only)"
cat "$WORK/tasks.txt"
if [ -f "$WORK/report.txt" ]; then
    echo
    cat "$WORK/report.txt"
fi
