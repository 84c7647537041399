# Run machinery shared by bench/gzip.sh, bench/limits.sh and bench/auth_basic.sh: the
# same steps as bench/static.sh (wait for a quiet machine, warm up, count the server's CPU
# time and, when perf can, its instructions, run wrk, record the other load), in functions.
# Sourced after lib/common.sh, not run. The caller sets WORK, WRK_THREADS, WARMUP,
# QUIET_MAX, QUIET_CORES and INSTRUCTIONS.

# Whether `perf stat -e instructions` counts here (a VM without a PMU says "<not supported>"
# and still exits 0, so the count itself is checked). Sets COUNT_INSTRUCTIONS and
# INSTRUCTIONS_NOTE (how, or why not, for the report).
detect_instructions() {
    COUNT_INSTRUCTIONS=0
    INSTRUCTIONS_NOTE=""
    if [ "${INSTRUCTIONS:-auto}" = 0 ]; then
        INSTRUCTIONS_NOTE="not counted (INSTRUCTIONS=0)"
        return
    fi
    if ! command -v perf >/dev/null; then
        INSTRUCTIONS_NOTE="not counted: perf is not installed"
        return
    fi
    local out
    out=$(perf stat -x, -e instructions true 2>&1 >/dev/null || true)
    if awk -F, '$3 ~ /^instructions/ && $1 ~ /^[0-9]+$/ { found = 1 } END { exit !found }' <<<"$out"; then
        COUNT_INSTRUCTIONS=1
        INSTRUCTIONS_NOTE="\`perf stat -e instructions\` (user+kernel) on the server's processes over each measured run"
    else
        INSTRUCTIONS_NOTE="not counted: \`perf stat -e instructions\` says \"not supported\" on this machine (no hardware counters in the VM)"
    fi
}

# The commit Portico was built from, with a note when the tree has uncommitted changes.
describe_commit() {
    local commit changed
    commit=$(git -C "$REPO_DIR" rev-parse --short HEAD 2>/dev/null || echo unknown)
    changed=$(git -C "$REPO_DIR" --no-optional-locks diff --name-only HEAD -- crates Cargo.toml Cargo.lock 2>/dev/null \
        | paste -sd, - || true)
    if [ -n "$changed" ]; then
        commit="$commit plus uncommitted changes to $changed"
    fi
    echo "$commit"
}

# Runs wrk once and prints wrk's own user+sys CPU ticks; its report goes to $1.
#   run_wrk OUT SECONDS URL CONNECTIONS [THREADS [EXTRA WRK ARGUMENTS...]]
run_wrk() {
    local out=$1 duration=$2 url=$3 connections=$4 threads=${5:-$WRK_THREADS}
    shift 5 2>/dev/null || shift $#
    timeout $((duration + 30)) bash -c '
        out=$1 threads=$2 connections=$3 duration=$4 url=$5
        shift 5
        wrk -t"$threads" -c"$connections" -d"$duration"s --latency "$@" "$url" >"$out" 2>&1 || exit 1
        stat=$(cat /proc/$$/stat); stat=${stat##*) }
        set -- $stat
        echo $(( ${14} + ${15} ))' wrk "$out" "$threads" "$connections" "$duration" "$url" "$@"
}

# Waits (at most QUIET_MAX seconds) until the machine, with no server of ours running, stays
# under QUIET_CORES busy cores for one second. Counts the waits in QUIET_WAITED and the
# give-ups in QUIET_GAVE_UP.
QUIET_WAITED=0
QUIET_GAVE_UP=0
wait_quiet() {
    [ "$QUIET_MAX" -gt 0 ] || return 0
    local deadline=$((SECONDS + QUIET_MAX)) b0 b1 waited=0
    while :; do
        b0=$(machine_busy_ticks)
        sleep 1
        b1=$(machine_busy_ticks)
        if awk -v d=$((b1 - b0)) -v hz="$CLK_TCK" -v max="$QUIET_CORES" 'BEGIN { exit !(d / hz < max) }'; then
            break
        fi
        waited=1
        if [ $SECONDS -ge $deadline ]; then
            note "machine still busy after ${QUIET_MAX}s ($(busy_sample 1)); running anyway"
            QUIET_GAVE_UP=$((QUIET_GAVE_UP + 1))
            break
        fi
    done
    [ "$waited" = 0 ] || QUIET_WAITED=$((QUIET_WAITED + 1))
    return 0
}

# Loads the running server (SERVER_PID and its children) with wrk for SECONDS, after a
# warm-up of WARMUP seconds, and sets MEASURED to one tab-separated record:
#   requests  req/s  avg µs  p99 µs  errors  server CPU s  CPU/request µs  wrk CPU s
#   other load (cores)  instructions/request (or nan)  bytes/s read by wrk
#   measure_wrk OUT SECONDS URL CONNECTIONS [THREADS [EXTRA WRK ARGUMENTS...]]
measure_wrk() {
    local out=$1 duration=$2 url=$3 connections=$4 threads=${5:-$WRK_THREADS}
    shift 5 2>/dev/null || shift $#
    local family cpu0 cpu1 busy0 busy1 t0 t1 wrk_ticks parsed perf_pid="" instructions=nan bytes_per_s
    if [ "$WARMUP" != 0 ]; then
        run_wrk "$WORK/warmup.txt" "$WARMUP" "$url" "$connections" "$threads" "$@" >/dev/null \
            || die "wrk warm-up failed: $(cat "$WORK/warmup.txt")"
    fi
    mapfile -t family < <(process_family "$SERVER_PID")
    if [ "$COUNT_INSTRUCTIONS" = 1 ]; then
        perf stat -x, -e instructions -p "$(IFS=,; echo "${family[*]}")" -o "$WORK/perf.csv" &
        perf_pid=$!
        sleep 0.2
    fi
    cpu0=$(family_cpu_ns "${family[@]}")
    busy0=$(machine_busy_ticks)
    t0=$(date +%s.%N)
    wrk_ticks=$(run_wrk "$out" "$duration" "$url" "$connections" "$threads" "$@") || die "wrk failed: $(cat "$out")"
    t1=$(date +%s.%N)
    busy1=$(machine_busy_ticks)
    cpu1=$(family_cpu_ns "${family[@]}")
    if [ -n "$perf_pid" ]; then
        kill -INT "$perf_pid" 2>/dev/null || true
        wait "$perf_pid" 2>/dev/null || true
        instructions=$(awk -F, '$3 ~ /^instructions/ && $1 ~ /^[0-9]+$/ { print $1 }' "$WORK/perf.csv")
        [ -n "$instructions" ] || instructions=nan
    fi
    [ "$cpu0" != gone ] && [ "$cpu1" != gone ] || die "a server process exited during the run"
    parsed=$(parse_wrk "$out") || die "could not parse wrk output: $(cat "$out")"
    bytes_per_s=$(awk '/^Transfer\/sec:/ { v = $2; u = v; sub(/[A-Za-z]+$/, "", v); sub(/^[0-9.]+/, "", u)
        m = 1; if (u == "KB") m = 1024; else if (u == "MB") m = 1048576; else if (u == "GB") m = 1073741824
        printf "%.0f\n", v * m; exit }' "$out")
    # shellcheck disable=SC2086
    set -- $parsed
    MEASURED=$(awk -v OFS='\t' -v n="$1" -v rps="$2" -v avg="$3" -v p99="$4" -v e="$5" -v sns=$((cpu1 - cpu0)) \
        -v wt="$wrk_ticks" -v busy=$((busy1 - busy0)) -v hz="$CLK_TCK" -v t0="$t0" -v t1="$t1" \
        -v ins="$instructions" -v bps="${bytes_per_s:-0}" 'BEGIN {
            server_s = sns / 1e9
            other = (busy / hz - server_s - wt / hz) / (t1 - t0)
            if (other < 0) other = 0
            print n, rps, avg, p99, e, server_s, (n > 0 ? server_s * 1e6 / n : 0), wt / hz, other,
                (ins == "nan" || n == 0 ? "nan" : ins / n), bps
        }')
}

# The machine, nginx and wrk, for a report's header.
describe_machine() {
    local cpu_model nginx_version wrk_version
    cpu_model=$(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo)
    nginx_version=$("$NGINX_BIN" -v 2>&1 | sed 's/^nginx version: //')
    wrk_version=$( (wrk -v 2>&1 || true) | awk 'NR == 1 { print $2 }')
    echo "- Machine: $(nproc) CPUs ($cpu_model), kernel $(uname -r), $(. /etc/os-release && echo "$PRETTY_NAME");" \
        "shared with other engineers' builds and tests (see \"other load\")"
    echo "- nginx: $nginx_version ($NGINX_BIN); wrk $wrk_version"
    echo "- Portico: commit $(describe_commit), release build ($PORTICO_BIN)"
}

# Checks that the servers named (both by default) accept CONF with -t; dies with the
# server's own message if not.
#   check_config CONF [nginx|portico]
check_config() {
    local conf=$1 kinds=${2:-"nginx portico"} kind bin
    for kind in $kinds; do
        bin=$NGINX_BIN
        [ "$kind" = portico ] && bin=$PORTICO_BIN
        mkdir -p "$WORK/check-$kind/logs"
        "$bin" -p "$WORK/check-$kind/" -e "$WORK/check-$kind/logs/error.log" -t -c "$conf" >/dev/null 2>&1 \
            || { "$bin" -p "$WORK/check-$kind/" -e "$WORK/check-$kind/logs/error.log" -t -c "$conf"; die "$kind -t rejects $conf"; }
    done
}
