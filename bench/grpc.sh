#!/usr/bin/env bash
# Scenario "grpc": nginx and Portico as gRPC proxies (`grpc_pass`), the same configuration
# file for both, in front of one Go gRPC server (bench/grpc/, google.golang.org/grpc), the
# client ghz over h2c (issue 37):
#
#   unary         bench.Bench/SayHello through `grpc_pass grpc://127.0.0.1:G;`: no upstream
#                 group, so a new upstream connection per call
#   unary-kept    the same through `grpc_pass grpc://grpc_kept;`, an upstream group with
#                 `keepalive 32`
#   stream-kept   bench.Bench/Stream through the group: one request, STREAM_COUNT replies
#                 (server streaming); also reported as messages/s
#   bidi-kept     bench.Bench/Chat through the group: CHAT_COUNT requests, one reply each
#                 (bidirectional); also reported as messages/s (replies)
#   direct        with DIRECT=1, each row's calls straight to the Go server, for reference
#
# Per repetition each server is started once and every row runs against it, nginx first,
# then Portico; REPS repetitions, medians. Each ghz run makes a fixed number of calls (-n)
# after a warm-up of a tenth of them, with -c CONCURRENCY calls in flight over CONNECTIONS
# h2c connections, and is bounded by `timeout`. Reported: calls/s (successful calls over
# ghz's wall time), p50 and p99 (ghz's latency distribution), the proxy's CPU per call
# (run time of every thread of its processes from /proc/PID/task/TID/schedstat, and, as a
# cross-check, utime+stime from /proc/PID/stat in clock ticks), the Go server's CPU per
# call, the ratios Portico/nginx, and the machine's load average.
#
#   bench/grpc.sh
#   PORTICO_BIN=/work/bin/portico-h2up TOOLS_DIR=/work/tools/grpcbench bench/grpc.sh
#
# ghz (github.com/bojand/ghz/cmd/ghz@GHZ_VERSION) and the Go server are built into
# TOOLS_DIR when missing (the server also when a source in bench/grpc/ is newer), with
# GOPATH and GOCACHE there and GOFLAGS=-p=1; this needs `go` and the Go module proxy.
#
# Environment (defaults in brackets):
#   REPS [5]                   repetitions
#   ROWS ["unary unary-kept stream-kept bidi-kept"]
#   DIRECT [1]                 1 adds the direct reference runs (each row once per repetition)
#   CALLS [20000]              unary calls per run
#   STREAM_CALLS [8000] STREAM_COUNT [100] STREAM_SIZE [0]   server-stream calls per run,
#                              replies per call, each reply padded to this many bytes
#   CHAT_CALLS [10000] CHAT_COUNT [10]                         bidi calls per run, messages per call
#   CONCURRENCY [50] CONNECTIONS [5]   ghz -c and --connections
#   RUN_TIMEOUT [120]          seconds, the bound of each ghz run
#   CALLGRIND [0]              N > 0: after the timed runs, each proxy once more under
#                              valgrind's callgrind, N calls per row of CALLGRIND_ROWS
#                              ["unary-kept stream-kept"] (N/10 for stream-kept and bidi-kept):
#                              user-space instructions per call (needs valgrind)
#   PORTICO_FROM               what PORTICO_BIN was built from, for the report (e.g. "main f6749b5")
#   PORTICO_BIN                use this binary instead of building (cargo build --release -p portico-server)
#   CARGO_TARGET_DIR           where cargo builds
#   TOOLS_DIR [${XDG_CACHE_HOME:-$HOME/.cache}/portico-bench-grpc]   where ghz and the server are built
#   GHZ_VERSION [v0.120.0]
#   LOCK [/tmp/portico-bench.lock]   held (flock) while measuring; "-" = none
#   LOCK_WAIT [3600]           seconds to wait for it
#   RESULTS [bench/RESULTS.md] file whose "grpc" section is rewritten; "-" = don't write
#   KEEP_TMP [0]               1 keeps the temporary directory (config, logs, raw ghz JSON)
#   QUIET_MAX [0] QUIET_CORES [0.3]   as in bench/static.sh (checked before each run)
#
# Targets (issue 37): calls/s at least 1.1x nginx's, CPU per call at most 0.9x, p99 no worse.
# See bench/README.md, scenario `grpc`.

source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
source "$BENCH_DIR/lib/runs.sh"

REPS=${REPS:-5}
ROWS=${ROWS:-"unary unary-kept stream-kept bidi-kept"}
DIRECT=${DIRECT:-1}
CALLS=${CALLS:-20000}
STREAM_CALLS=${STREAM_CALLS:-8000}
STREAM_COUNT=${STREAM_COUNT:-100}
STREAM_SIZE=${STREAM_SIZE:-0}
CHAT_CALLS=${CHAT_CALLS:-10000}
CHAT_COUNT=${CHAT_COUNT:-10}
CONCURRENCY=${CONCURRENCY:-50}
CONNECTIONS=${CONNECTIONS:-5}
RUN_TIMEOUT=${RUN_TIMEOUT:-120}
CALLGRIND=${CALLGRIND:-0}
CALLGRIND_ROWS=${CALLGRIND_ROWS:-"unary-kept stream-kept"}
PORTICO_FROM=${PORTICO_FROM:-}
TOOLS_DIR=${TOOLS_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/portico-bench-grpc}
GHZ_VERSION=${GHZ_VERSION:-v0.120.0}
LOCK=${LOCK:-/tmp/portico-bench.lock}
LOCK_WAIT=${LOCK_WAIT:-3600}
RESULTS=${RESULTS:-$BENCH_DIR/RESULTS.md}
KEEP_TMP=${KEEP_TMP:-0}
QUIET_MAX=${QUIET_MAX:-0}
QUIET_CORES=${QUIET_CORES:-0.3}
SECTION=grpc
COMMAND_LINE="bench/grpc.sh"
for variable in REPS ROWS DIRECT CALLS STREAM_CALLS STREAM_COUNT STREAM_SIZE CHAT_CALLS CHAT_COUNT \
    CONCURRENCY CONNECTIONS CALLGRIND CALLGRIND_ROWS QUIET_MAX QUIET_CORES PORTICO_BIN CARGO_TARGET_DIR TOOLS_DIR GHZ_VERSION; do
    if printenv "$variable" >/dev/null; then
        COMMAND_LINE="$variable='${!variable}' $COMMAND_LINE"
    fi
done

ensure_tools
ensure_portico
command -v python3 >/dev/null || die "python3 is needed (it reads ghz's JSON report)"
if [ "$CALLGRIND" != 0 ] && ! command -v callgrind_control >/dev/null; then
    die "CALLGRIND needs valgrind (apt-get install -y valgrind)"
fi

# ---- ghz and the Go server, built outside the repository ------------------------------------

GRPC_SRC=$BENCH_DIR/grpc
PROTO=$GRPC_SRC/bench.proto
GHZ=$TOOLS_DIR/bin/ghz-$GHZ_VERSION
BACKEND_BIN=$TOOLS_DIR/bin/grpcbench-server

go_env() {
    command -v go >/dev/null || die "go is needed to build ghz and the gRPC server (apt-get install golang, or go.dev/dl)"
    mkdir -p "$TOOLS_DIR/bin"
    export GOPATH=$TOOLS_DIR/gopath GOCACHE=$TOOLS_DIR/gocache GOFLAGS="-p=1 -buildvcs=false"
}
if [ ! -x "$GHZ" ]; then
    go_env
    note "building ghz $GHZ_VERSION into $TOOLS_DIR (a few minutes)"
    (GOBIN=$TOOLS_DIR/gobin timeout 1800 nice go install "github.com/bojand/ghz/cmd/ghz@$GHZ_VERSION") \
        || die "go install github.com/bojand/ghz/cmd/ghz@$GHZ_VERSION failed"
    mv "$TOOLS_DIR/gobin/ghz" "$GHZ"
fi
if [ ! -x "$BACKEND_BIN" ] || [ -n "$(find "$GRPC_SRC" -newer "$BACKEND_BIN" -type f)" ]; then
    go_env
    note "building the gRPC server (bench/grpc) into $BACKEND_BIN"
    (cd "$GRPC_SRC" && timeout 1800 nice go build -trimpath -o "$BACKEND_BIN.new" .) || die "go build in bench/grpc failed"
    mv "$BACKEND_BIN.new" "$BACKEND_BIN"
fi

make_work_dir grpc
USER_LINE=""
[ "$(id -u)" -eq 0 ] && USER_LINE="user root;"

# ---- The configuration, the same file for both ------------------------------------------------

BACKEND_PORT=$(free_port)
PORT=$(free_port)
KEPT_PORT=$(free_port)
while [ "$PORT" = "$BACKEND_PORT" ]; do PORT=$(free_port); done
while [ "$KEPT_PORT" = "$BACKEND_PORT" ] || [ "$KEPT_PORT" = "$PORT" ]; do KEPT_PORT=$(free_port); done
CONF=$WORK/grpc.conf
# `listen ... http2` is the form nginx 1.22 reads (Portico warns that it is deprecated).
# keepalive_requests: both servers close a client's HTTP/2 connection after 1000 streams
# by default (GOAWAY), and a call ghz starts as it arrives fails with "the connection is
# draining"; raised so that the runs count no such failures.
cat >"$CONF" <<EOF
# Generated by bench/grpc.sh; nginx and Portico read this file.
$USER_LINE
worker_processes 1;
daemon off;
pid logs/server.pid;
error_log logs/error.log;
events {
    worker_connections 4096;
}
http {
    access_log off;
    keepalive_requests 1000000;
    upstream grpc_kept {
        server 127.0.0.1:$BACKEND_PORT;
        keepalive 32;
    }
    server {
        listen 127.0.0.1:$PORT http2 backlog=4096;
        location = / { return 200 "up"; }
        location / { grpc_pass grpc://127.0.0.1:$BACKEND_PORT; }
    }
    server {
        listen 127.0.0.1:$KEPT_PORT http2 backlog=4096;
        location = / { return 200 "up"; }
        location / { grpc_pass grpc://grpc_kept; }
    }
}
EOF
check_config "$CONF"
PROBE_ARGS="--http2-prior-knowledge"

"$BACKEND_BIN" -listen "127.0.0.1:$BACKEND_PORT" >"$WORK/backend.log" 2>&1 &
BACKEND_PID=$!
STARTED_PIDS+=("$BACKEND_PID")
for _ in $(seq 100); do
    "$BACKEND_BIN" -check "127.0.0.1:$BACKEND_PORT" >/dev/null 2>&1 && break
    alive "$BACKEND_PID" || die "the gRPC server exited: $(cat "$WORK/backend.log")"
    sleep 0.1
done
"$BACKEND_BIN" -check "127.0.0.1:$BACKEND_PORT" || die "the gRPC server does not answer its own check"

# ---- Rows ------------------------------------------------------------------------------------

# The address a row's calls go to: address_of KIND ROW.
address_of() {
    [ "$1" != direct ] || { echo "127.0.0.1:$BACKEND_PORT"; return; }
    case $2 in
        unary) echo "127.0.0.1:$PORT" ;;
        *-kept) echo "127.0.0.1:$KEPT_PORT" ;;
        *) die "unknown row $1" ;;
    esac
}

# "CALLS MESSAGES_PER_CALL METHOD DATA" of a row (MESSAGES_PER_CALL 0: not a stream).
shape_of() {
    case $1 in
        unary | unary-kept) echo "$CALLS 0 bench.Bench.SayHello {\"name\":\"bench\"}" ;;
        stream-kept) echo "$STREAM_CALLS $STREAM_COUNT bench.Bench.Stream {\"name\":\"bench\",\"count\":$STREAM_COUNT,\"size\":$STREAM_SIZE}" ;;
        bidi-kept)
            local data="[" i
            for ((i = 0; i < CHAT_COUNT; i++)); do data+="{\"name\":\"bench$i\"},"; done
            echo "$CHAT_CALLS $CHAT_COUNT bench.Bench.Chat ${data%,}]"
            ;;
        *) die "unknown row $1" ;;
    esac
}

# Runs ghz once: run_ghz OUT CALLS METHOD DATA ADDRESS; prints ghz's own CPU ticks.
run_ghz() {
    local out=$1 calls=$2 method=$3 data=$4 address=$5
    timeout "$RUN_TIMEOUT" bash -c '
        "$1" --insecure --proto "$2" --call "$3" -d "$4" -n "$5" -c "$6" --connections "$7" \
            --timeout 20s -O json "$8" >"$9" 2>"$9.err" || exit 1
        stat=$(cat /proc/$$/stat); stat=${stat##*) }
        set -- $stat
        echo $(( ${14} + ${15} ))' ghz "$GHZ" "$PROTO" "$method" "$data" "$calls" "$CONCURRENCY" \
        "$CONNECTIONS" "$address" "$out"
}

# Reads a ghz JSON report: prints "OK_CALLS OTHER_CALLS SECONDS P50_US P99_US" (OTHER_CALLS:
# calls with any other status; ghz may start a few calls past -n while it shuts down, so
# the successes are what counts).
parse_ghz() {
    python3 - "$1" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
codes = d.get("statusCodeDistribution") or {}
ok = codes.get("OK", 0)
other = sum(v for k, v in codes.items() if k != "OK")
lat = {int(x["percentage"]): x["latency"] / 1000 for x in d.get("latencyDistribution") or []}
print(ok, other, d["total"] / 1e9, lat.get(50, float("nan")), lat.get(99, float("nan")))
EOF
}

# Measures one row against the running proxy (SERVER_PID; none for direct-*) and sets
# MEASURED to "calls/s msgs/s p50 p99 cpu_us/call ticks_us/call backend_us/call ghz_cores other_cores failed".
measure_row() {
    local kind=$1 row=$2 rep=$3 calls per_call method data address out family=() cpu0 cpu1 t0 t1
    local b0 b1 busy0 busy1 ticks0 ticks1 ghz_ticks parsed
    read -r calls per_call method data <<<"$(shape_of "$row")"
    address=$(address_of "$kind" "$row")
    out=$WORK/ghz-$kind-$row-$rep.json
    run_ghz "$WORK/warmup.json" $((calls / 10)) "$method" "$data" "$address" >/dev/null \
        || die "$kind $row: ghz warm-up failed: $(cat "$WORK/warmup.json.err")"
    cpu0=0 cpu1=0 ticks0=0 ticks1=0
    if [ "$kind" != direct ]; then
        mapfile -t family < <(process_family "$SERVER_PID")
        cpu0=$(family_cpu_ns "${family[@]}")
        ticks0=$(family_ticks "${family[@]}")
    fi
    b0=$(family_cpu_ns "$BACKEND_PID")
    busy0=$(machine_busy_ticks)
    t0=$(date +%s.%N)
    ghz_ticks=$(run_ghz "$out" "$calls" "$method" "$data" "$address") \
        || die "$kind $row: ghz failed or timed out: $(cat "$out.err")"
    t1=$(date +%s.%N)
    busy1=$(machine_busy_ticks)
    b1=$(family_cpu_ns "$BACKEND_PID")
    if [ "$kind" != direct ]; then
        ticks1=$(family_ticks "${family[@]}")
        cpu1=$(family_cpu_ns "${family[@]}")
    fi
    [ "$cpu0" != gone ] && [ "$cpu1" != gone ] && [ "$ticks0" != gone ] && [ "$ticks1" != gone ] &&
        [ "$b1" != gone ] || die "$kind $row: a server exited during the run"
    parsed=$(parse_ghz "$out") || die "$kind $row: could not read ghz's report $out"
    # shellcheck disable=SC2086
    set -- $parsed
    [ "$1" -gt 0 ] || die "$kind $row: no call succeeded ($(head -c 2000 "$out"))"
    MEASURED=$(awk -v ok="$1" -v failed="$2" -v secs="$3" -v p50="$4" -v p99="$5" -v per="$per_call" \
        -v sns=$((cpu1 - cpu0)) -v tk=$((ticks1 - ticks0)) -v bns=$((b1 - b0)) -v gt="$ghz_ticks" \
        -v busy=$((busy1 - busy0)) -v hz="$CLK_TCK" -v t0="$t0" -v t1="$t1" 'BEGIN {
            wall = t1 - t0
            other = (busy / hz - sns / 1e9 - bns / 1e9 - gt / hz) / wall
            if (other < 0) other = 0
            printf "%.1f %.1f %.0f %.0f %.2f %.2f %.2f %.2f %.2f %d\n", ok / secs, ok * per / secs, p50, p99,
                sns / 1e3 / ok, tk * 1e6 / hz / ok, bns / 1e3 / ok, gt / hz / wall, other, failed }')
}

# Dies unless both addresses answer every method right (the Go server's own check).
check_proxy() {
    local kind=$1 port
    for port in "$PORT" "$KEPT_PORT"; do
        "$BACKEND_BIN" -check "127.0.0.1:$port" >"$WORK/check.txt" 2>&1 \
            || die "$kind on port $port: $(cat "$WORK/check.txt")"
    done
}

# ---- Runs ------------------------------------------------------------------------------------

if [ "$LOCK" != - ]; then
    exec 9>>"$LOCK"
    if ! flock -n 9; then
        note "waiting for $LOCK (another benchmark is running; at most ${LOCK_WAIT}s)"
        flock -w "$LOCK_WAIT" 9 || die "$LOCK still held after ${LOCK_WAIT}s"
    fi
fi
LOAD_START=$(cut -d' ' -f1-3 /proc/loadavg)
START_DATE=$(date -u '+%Y-%m-%d %H:%M UTC')
KINDS="nginx portico"
[ "$DIRECT" = 1 ] && KINDS="direct $KINDS"
declare -A RATE MSGS P50 P99 CPU TICKS BCPU FAILED OTHER
LOADS=""
for rep in $(seq "$REPS"); do
    for kind in $KINDS; do
        if [ "$kind" != direct ]; then
            prefix=$WORK/$kind-$rep
            mkdir -p "$prefix"
            start_server "$kind" "$prefix" "$CONF" "$PORT"
            pid=$SERVER_PID
            check_proxy "$kind"
        fi
        for row in $ROWS; do
            wait_quiet
            [ "$kind" = direct ] || SERVER_PID=$pid
            key=$kind,$row
            measure_row "$kind" "$row" "$rep"
            read -r rate msgs p50 p99 cpu ticks bcpu ghz_cores other failed <<<"$MEASURED"
            RATE[$key]+="$rate " MSGS[$key]+="$msgs " P50[$key]+="$p50 " P99[$key]+="$p99 "
            CPU[$key]+="$cpu " TICKS[$key]+="$ticks " BCPU[$key]+="$bcpu " FAILED[$key]+="$failed "
            OTHER[$key]+="$other "
            note "rep $rep $kind $row: $rate calls/s, $msgs msgs/s, p50 $p50 µs, p99 $p99 µs," \
                "proxy CPU $cpu µs/call (ticks $ticks), Go server $bcpu µs/call, ghz $ghz_cores cores," \
                "other load $other cores, $failed calls not OK"
        done
        if [ "$kind" != direct ]; then
            check_proxy "$kind"
            stop_server "$pid"
        fi
    done
    LOADS+="$(cut -d' ' -f1 /proc/loadavg) "
done
LOAD_END=$(cut -d' ' -f1-3 /proc/loadavg)

# ---- Instructions per call (callgrind) --------------------------------------------------------
#
# This VM has no hardware counters for perf; valgrind's callgrind counts every user-space
# instruction a process executes, exactly, whatever else the machine runs. Each proxy runs
# once under it (one worker; nginx without its master), gets a warm-up of every row, then
# for each row of CALLGRIND_ROWS the counters are zeroed, ghz makes CALLGRIND calls (a
# tenth as many for stream-kept and bidi-kept) with the same -c and --connections, and the
# counters are dumped. Kernel work is not counted.

CALLGRIND_RUNS=$WORK/callgrind.tsv
: >"$CALLGRIND_RUNS"
callgrind_calls() {
    case $1 in
        stream-kept | bidi-kept) echo $((CALLGRIND / 10)) ;;
        *) echo "$CALLGRIND" ;;
    esac
}
callgrind_pass() {
    local kind=$1 prefix=$WORK/callgrind-$1 pid deadline row dumps=0 total calls method data per_call parsed
    local command=()
    mkdir -p "$prefix/logs"
    if [ "$kind" = nginx ]; then
        command=("$NGINX_BIN" -p "$prefix/" -e "$prefix/logs/error.log" -c "$CONF" -g 'master_process off;')
    else
        command=("$PORTICO_BIN" -p "$prefix/" -e "$prefix/logs/error.log" -c "$CONF")
    fi
    valgrind --tool=callgrind --callgrind-out-file="$prefix/callgrind.out" "${command[@]}" \
        >"$prefix/logs/valgrind.log" 2>&1 &
    pid=$!
    STARTED_PIDS+=("$pid")
    deadline=$((SECONDS + 120))
    until curl -s -o /dev/null --max-time 2 --http2-prior-knowledge "http://127.0.0.1:$KEPT_PORT/"; do
        alive "$pid" && [ $SECONDS -lt $deadline ] || { cat "$prefix/logs/valgrind.log" >&2; die "$kind did not start under valgrind"; }
        sleep 0.5
    done
    for row in $CALLGRIND_ROWS; do
        read -r calls per_call method data <<<"$(shape_of "$row")"
        run_ghz "$prefix/warm.json" 200 "$method" "$data" "$(address_of "$kind" "$row")" >/dev/null \
            || die "$kind $row: warm-up under valgrind failed: $(cat "$prefix/warm.json.err")"
    done
    for row in $CALLGRIND_ROWS; do
        read -r calls per_call method data <<<"$(shape_of "$row")"
        calls=$(callgrind_calls "$row")
        callgrind_control -z "$pid" >/dev/null 2>&1 || die "callgrind_control -z $pid failed"
        run_ghz "$prefix/$row.json" "$calls" "$method" "$data" "$(address_of "$kind" "$row")" >/dev/null \
            || die "$kind $row: ghz under valgrind failed: $(cat "$prefix/$row.json.err")"
        callgrind_control -d "$pid" >/dev/null 2>&1 || die "callgrind_control -d $pid failed"
        dumps=$((dumps + 1))
        total=$(awk '/^totals:/ { print $2; exit }' "$prefix/callgrind.out.$dumps" 2>/dev/null)
        [ -n "$total" ] || die "$kind: no totals in $prefix/callgrind.out.$dumps"
        parsed=$(parse_ghz "$prefix/$row.json")
        # shellcheck disable=SC2086
        set -- $parsed
        [ "$2" = 0 ] || note "callgrind $kind $row: $2 calls not OK"
        printf '%s\t%s\t%s\n' "$kind" "$row" "$(awk -v t="$total" -v n="$1" 'BEGIN { printf "%.0f", t / n }')" >>"$CALLGRIND_RUNS"
        note "callgrind $kind $row: $(tail -n1 "$CALLGRIND_RUNS" | cut -f3) user-space instructions/call"
    done
    stop_server "$pid"
}
if [ "$CALLGRIND" != 0 ]; then
    for kind in nginx portico; do
        callgrind_pass "$kind"
    done
fi

[ "$LOCK" = - ] || flock -u 9

# ---- Report ----------------------------------------------------------------------------------

med() { # med ARRAY KEY
    local -n array=$1
    # shellcheck disable=SC2086
    median ${array[$2]}
}
SECTION_FILE=$WORK/section.md
{
    echo "<!-- BEGIN $SECTION -->"
    echo "## grpc"
    echo
    echo "\`$COMMAND_LINE\`, $START_DATE; load average (1, 5, 15 min) at the start $LOAD_START, at the end $LOAD_END, after each repetition: $LOADS"
    echo
    describe_machine | sed 's/; wrk .*//'
    [ -z "$PORTICO_FROM" ] || echo "- Portico binary built from: $PORTICO_FROM"
    echo "- gRPC: the Go server in bench/grpc (google.golang.org/grpc $(awk '$1 == "google.golang.org/grpc" { print $2 }' "$GRPC_SRC/go.mod")), client ghz $GHZ_VERSION over h2c, -c $CONCURRENCY --connections $CONNECTIONS;" \
        "unary rows $CALLS calls per run, stream-kept $STREAM_CALLS calls of $STREAM_COUNT replies ($STREAM_SIZE-byte padding), bidi-kept $CHAT_CALLS calls of $CHAT_COUNT messages each way;" \
        "each after a warm-up of a tenth as many; medians of $REPS; \`worker_processes 1\`, upstream group \`keepalive 32\` for the -kept rows"
    echo "- CPU per call: the proxy's, every thread of its processes (schedstat run time); \"ticks\": the same from utime+stime (/proc/PID/stat, clock ticks), as a cross-check. The Go server's CPU is not in it"
    echo
    echo "| row | nginx calls/s | Portico calls/s | ratio | nginx p50 / p99 µs | Portico p50 / p99 µs | p99 ratio | nginx CPU µs/call | Portico CPU µs/call | ratio | ticks ratio |"
    echo "|---|---|---|---|---|---|---|---|---|---|---|"
    for row in $ROWS; do
        awk -v row="$row" -v nr="$(med RATE "nginx,$row")" -v pr="$(med RATE "portico,$row")" \
            -v n50="$(med P50 "nginx,$row")" -v p50="$(med P50 "portico,$row")" \
            -v n99="$(med P99 "nginx,$row")" -v p99="$(med P99 "portico,$row")" \
            -v nc="$(med CPU "nginx,$row")" -v pc="$(med CPU "portico,$row")" \
            -v nt="$(med TICKS "nginx,$row")" -v pt="$(med TICKS "portico,$row")" 'BEGIN {
            printf "| %s | %.0f | %.0f | %.2fx | %.0f / %.0f | %.0f / %.0f | %.2fx | %.1f | %.1f | %.2fx | %.2fx |\n",
                row, nr, pr, pr / nr, n50, n99, p50, p99, p99 / n99, nc, pc, pc / nc, (nt > 0 ? pt / nt : 0) }'
    done
    echo
    for row in $ROWS; do
        case $row in
            stream-kept | bidi-kept)
                echo "- $row messages/s (replies): nginx $(med MSGS "nginx,$row"), Portico $(med MSGS "portico,$row")$([ "$DIRECT" = 1 ] && echo ", direct $(med MSGS "direct,$row")")"
                ;;
        esac
    done
    if [ "$DIRECT" = 1 ]; then
        echo "- direct (ghz straight to the Go server), calls/s: $(for row in $ROWS; do printf '%s %s; ' "$row" "$(med RATE "direct,$row")"; done)"
    fi
    echo "- Go server CPU µs/call (median), nginx / Portico: $(for row in $ROWS; do printf '%s %s / %s; ' "$row" "$(med BCPU "nginx,$row")" "$(med BCPU "portico,$row")"; done)"
    echo "- Targets (calls/s >= 1.1x, CPU/call <= 0.9x, p99 <= 1.0x):"
    for row in $ROWS; do
        awk -v row="$row" -v nr="$(med RATE "nginx,$row")" -v pr="$(med RATE "portico,$row")" \
            -v n99="$(med P99 "nginx,$row")" -v p99="$(med P99 "portico,$row")" \
            -v nc="$(med CPU "nginx,$row")" -v pc="$(med CPU "portico,$row")" 'BEGIN {
            printf "  %s: calls/s %s, CPU/call %s, p99 %s\n", row,
                (pr / nr >= 1.1 ? "met" : "not met"), (pc / nc <= 0.9 ? "met" : "not met"), (p99 <= n99 ? "met" : "not met") }'
    done
    if [ -s "$CALLGRIND_RUNS" ]; then
        echo
        echo "User-space instructions per call (callgrind, one pass per server, $CALLGRIND calls per row, a tenth for the stream rows; kernel not counted):"
        echo
        echo "| row | nginx | Portico | ratio |"
        echo "|---|---|---|---|"
        awk -F'\t' '{ v[$1, $2] = $3; if (!($2 in seen)) { seen[$2] = 1; rows[++n] = $2 } }
            END { for (i = 1; i <= n; i++) { r = rows[i]
                printf "| %s | %d | %d | %.2fx |\n", r, v["nginx", r], v["portico", r], v["portico", r] / v["nginx", r] } }' \
            "$CALLGRIND_RUNS"
    fi
    echo
    echo "Every run: calls/s; proxy CPU µs/call; other load (cores busy besides the proxy, the Go server and ghz); calls not OK:"
    echo
    for row in $ROWS; do
        for kind in $KINDS; do
            echo "- $row $kind: ${RATE[$kind,$row]% }; ${CPU[$kind,$row]% }; ${OTHER[$kind,$row]% }; ${FAILED[$kind,$row]% }"
        done
    done
    echo "<!-- END $SECTION -->"
} >"$SECTION_FILE"
cat "$SECTION_FILE"
if [ "$RESULTS" != - ]; then
    splice_section "$RESULTS" "$SECTION" "$SECTION_FILE"
    note "wrote the $SECTION section of $RESULTS"
fi
