# Shared helpers for the macro benchmarks in bench/. Sourced, not run.
#
# Every scenario follows the same rules (see bench/README.md):
# - nginx and Portico read the same configuration file, each with its own prefix directory;
# - servers listen on 127.0.0.1 only, on a port that nothing listens on;
# - only the processes a script started are stopped, by pid (QUIT, then TERM, then KILL);
# - runs of the two servers are interleaved and repeated, and medians are reported.

set -euo pipefail

BENCH_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
REPO_DIR=$(cd "$BENCH_DIR/.." && pwd)
CLK_TCK=$(getconf CLK_TCK)

note() { printf '[bench] %s\n' "$*" >&2; }
die() { printf '[bench] error: %s\n' "$*" >&2; exit 1; }

# Installs nginx, wrk and curl with apt-get when one is missing (root only).
ensure_tools() {
    local missing=()
    command -v nginx >/dev/null || [ -x /usr/sbin/nginx ] || missing+=(nginx-core)
    command -v wrk >/dev/null || missing+=(wrk)
    command -v curl >/dev/null || missing+=(curl)
    if [ ${#missing[@]} -gt 0 ]; then
        [ "$(id -u)" -eq 0 ] || die "missing ${missing[*]}: run 'apt-get install -y ${missing[*]}' as root"
        note "installing ${missing[*]}"
        apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
        # The Debian package starts a system nginx on port 80; it is not ours to stop, and
        # it does not use our ports.
    fi
    NGINX_BIN=${NGINX_BIN:-$(command -v nginx || echo /usr/sbin/nginx)}
}

# Builds Portico in release mode unless PORTICO_BIN names a binary already.
ensure_portico() {
    if [ -n "${PORTICO_BIN:-}" ]; then
        [ -x "$PORTICO_BIN" ] || die "PORTICO_BIN=$PORTICO_BIN is not executable"
        return
    fi
    command -v cargo >/dev/null || die "cargo not found: install Rust (https://rustup.rs) first"
    local target=${CARGO_TARGET_DIR:-$REPO_DIR/target}
    note "building Portico (cargo build --release -p portico-server, target dir $target)"
    (cd "$REPO_DIR" && CARGO_TARGET_DIR=$target cargo build --release -p portico-server --quiet) \
        || die "cargo build failed"
    PORTICO_BIN=$target/release/portico
}

# Prints a TCP port that no socket uses, in any state (a listener, or a connection's local
# end), chosen below the ephemeral range so that the clients' own ports never take it.
free_port() {
    local low=10000 high port hex tries=0
    high=$(awk '{ print $1 - 1 }' /proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || echo 32767)
    [ "$high" -gt $((low + 1000)) ] || { low=20000; high=29999; }
    while [ $tries -lt 200 ]; do
        port=$((low + RANDOM % (high - low + 1)))
        hex=$(printf '%04X' "$port")
        # The local address is field 2, "ADDR:PORT" in hex.
        if ! awk -v p="$hex" 'FNR > 1 { split($2, a, ":"); if (a[2] == p) found = 1 } END { exit !found }' \
            /proc/net/tcp /proc/net/tcp6 2>/dev/null; then
            echo "$port"
            return
        fi
        tries=$((tries + 1))
    done
    die "no free port found"
}

# user+sys CPU ticks of one process (all its threads), from /proc/PID/stat fields 14 and 15.
# The command name (field 2) may contain spaces, so fields are counted after the last ')'.
proc_ticks() {
    local stat
    stat=$(cat "/proc/$1/stat" 2>/dev/null) || { echo "gone"; return; }
    stat=${stat##*) }
    # After "comm)": field 3 is the first word, so utime (14) is word 12, stime (15) word 13.
    awk '{ print $12 + $13 }' <<<"$stat"
}

# The pid and the pids of its direct children (nginx's master and workers).
process_family() {
    local parent=$1 pid stat
    echo "$parent"
    for stat in /proc/[0-9]*/stat; do
        pid=${stat#/proc/}
        pid=${pid%/stat}
        [ "$pid" = "$parent" ] && continue
        local line
        line=$(cat "$stat" 2>/dev/null) || continue
        line=${line##*) }
        # Word 2 after "comm)" is field 4, the parent pid.
        [ "$(awk '{ print $2 }' <<<"$line")" = "$parent" ] && echo "$pid"
    done
    return 0
}

# The sum of Pss (kB) over a server's processes (the pid and its children).
pss_kb() {
    local total=0 pid value
    for pid in $(process_family "$1"); do
        value=$(awk '/^Pss:/ { print $2 }' "/proc/$pid/smaps_rollup" 2>/dev/null || echo 0)
        total=$((total + ${value:-0}))
    done
    echo "$total"
}

# Sum of user+sys CPU ticks over the pids given; fails if one of them has exited.
family_ticks() {
    local total=0 pid ticks
    for pid in "$@"; do
        ticks=$(proc_ticks "$pid")
        [ "$ticks" = gone ] && { echo gone; return; }
        total=$((total + ticks))
    done
    echo "$total"
}

# Nanoseconds on a CPU, summed over every thread of the pids given (the first field of
# /proc/PID/task/TID/schedstat: the scheduler's own run-time accounting). Unlike the tick
# counts of /proc/PID/stat, which charge a whole tick to whichever task runs when the timer
# fires, this is exact even for threads that switch tens of thousands of times a second.
# Fails ("gone") if one of the pids has exited.
family_cpu_ns() {
    local pid
    for pid in "$@"; do
        [ -d "/proc/$pid/task" ] || { echo gone; return; }
    done
    local files=()
    for pid in "$@"; do
        files+=("/proc/$pid"/task/*/schedstat)
    done
    cat "${files[@]}" 2>/dev/null | awk '{ total += $1 } END { printf("%.0f\n", total) }'
}

# Busy ticks of the whole machine (all CPUs), from the first line of /proc/stat.
machine_busy_ticks() {
    awk '/^cpu / { print $2 + $3 + $4 + $7 + $8 + $9; exit }' /proc/stat
}

# Waits until http://127.0.0.1:PORT/ answers (any status) or the deadline passes; PROBE_ARGS,
# if set, are added to curl's arguments (`--http2-prior-knowledge` for an h2c-only address).
wait_listening() {
    local port=$1 pid=$2 deadline=$((SECONDS + 20))
    while [ $SECONDS -lt $deadline ]; do
        alive "$pid" || return 1
        # shellcheck disable=SC2086
        if curl -s -o /dev/null --max-time 1 ${PROBE_ARGS:-} "http://127.0.0.1:$port/"; then
            return 0
        fi
        sleep 0.1
    done
    return 1
}

# Starts a server in the foreground of a background job (the configuration says
# `daemon off;`) and sets SERVER_PID to its master's pid.
#   start_server KIND PREFIX CONF PORT     KIND is nginx or portico
start_server() {
    local kind=$1 prefix=$2 conf=$3 port=$4 bin
    case $kind in
        nginx) bin=$NGINX_BIN ;;
        portico) bin=$PORTICO_BIN ;;
        *) die "unknown server $kind" ;;
    esac
    mkdir -p "$prefix/logs"
    "$bin" -p "$prefix/" -e "$prefix/logs/error.log" -c "$conf" \
        >>"$prefix/logs/stdout.log" 2>>"$prefix/logs/stderr.log" &
    SERVER_PID=$!
    STARTED_PIDS+=("$SERVER_PID")
    if ! wait_listening "$port" "$SERVER_PID"; then
        note "$kind did not start; its logs:"
        cat "$prefix/logs/stderr.log" "$prefix/logs/error.log" >&2 2>/dev/null || true
        stop_server "$SERVER_PID"
        die "$kind failed to start on 127.0.0.1:$port"
    fi
}

# Whether PID is a live process (a zombie waiting to be reaped counts as gone).
alive() {
    local state
    state=$(ps -o stat= -p "$1" 2>/dev/null) || return 1
    [ -n "$state" ] && [ "${state:0:1}" != Z ]
}

# Stops a server this script started: QUIT (graceful), then TERM, then KILL, by pid only.
stop_server() {
    local pid=$1 signal deadline other
    for signal in QUIT TERM KILL; do
        alive "$pid" || break
        kill "-$signal" "$pid" 2>/dev/null || true
        deadline=$((SECONDS + 15))
        while alive "$pid" && [ $SECONDS -lt $deadline ]; do
            sleep 0.1
        done
        if alive "$pid"; then
            note "pid $pid still running 15 s after SIG$signal"
        fi
    done
    wait "$pid" 2>/dev/null || true
    local kept=()
    for other in "${STARTED_PIDS[@]+"${STARTED_PIDS[@]}"}"; do
        [ "$other" = "$pid" ] || kept+=("$other")
    done
    STARTED_PIDS=("${kept[@]+"${kept[@]}"}")
}

STARTED_PIDS=()
# make_work_dir NAME: a fresh WORK=/tmp/portico-bench-NAME.XXXXXX, removed at exit (kept
# with KEEP_TMP=1) after every server this script started is stopped.
make_work_dir() {
    WORK=$(mktemp -d "/tmp/portico-bench-$1.XXXXXX")
    trap bench_cleanup EXIT
    trap 'exit 130' INT TERM
}
bench_cleanup() {
    stop_all_started
    if [ "${KEEP_TMP:-0}" = 1 ]; then note "kept $WORK"; else rm -rf "$WORK"; fi
}

# make_ecdsa_cert DIR: a self-signed P-256 certificate for localhost, DIR/ecdsa.{crt,key}.
make_ecdsa_cert() {
    openssl req -x509 -nodes -days 2 -newkey ec -pkeyopt ec_paramgen_curve:P-256 \
        -subj /CN=localhost -keyout "$1/ecdsa.key" -out "$1/ecdsa.crt" 2>/dev/null
}

stop_all_started() {
    local pid
    for pid in "${STARTED_PIDS[@]+"${STARTED_PIDS[@]}"}"; do
        stop_server "$pid"
    done
}

# Checks that GET / answers 200 with exactly the expected body.
check_answer() {
    local port=$1 expected=$2 kind=$3 body status
    body=$(curl -s --max-time 5 -w '\n%{http_code}' "http://127.0.0.1:$port/") || die "$kind: curl failed"
    status=${body##*$'\n'}
    body=${body%$'\n'*}
    [ "$status" = 200 ] || die "$kind answered status $status, expected 200"
    [ "$body" = "$expected" ] || die "$kind answered '$body', expected '$expected'"
}

# Converts a wrk duration (e.g. 812.00us, 1.20ms, 2.01s, 1.00m) to microseconds.
to_us() {
    awk -v v="$1" 'BEGIN {
        if (v ~ /us$/) { sub(/us$/, "", v); print v + 0 }
        else if (v ~ /ms$/) { sub(/ms$/, "", v); print v * 1000 }
        else if (v ~ /m$/) { sub(/m$/, "", v); print v * 60000000 }
        else if (v ~ /s$/) { sub(/s$/, "", v); print v * 1000000 }
        else if (v ~ /h$/) { sub(/h$/, "", v); print v * 3600000000 }
        else { print "nan" }
    }'
}

# Parses wrk --latency output into "REQUESTS RPS AVG_US P99_US ERRORS".
# ERRORS counts socket errors plus non-2xx/3xx responses.
parse_wrk() {
    local file=$1 requests rps avg p99 errors
    requests=$(awk '/ requests in / { print $1; exit }' "$file")
    rps=$(awk '/^Requests\/sec:/ { print $2; exit }' "$file")
    avg=$(awk '$1 == "Latency" { print $2; exit }' "$file")
    p99=$(awk '$1 == "99%" { print $2; exit }' "$file")
    errors=$(awk '
        /Socket errors:/ { gsub(/,/, ""); n += $4 + $6 + $8 + $10 }
        /Non-2xx or 3xx responses:/ { n += $5 }
        END { print n + 0 }' "$file")
    [ -n "$requests" ] && [ -n "$rps" ] && [ -n "$avg" ] && [ -n "$p99" ] || return 1
    echo "$requests $rps $(to_us "$avg") $(to_us "$p99") $errors"
}

# Median of the numbers given as arguments.
median() {
    printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END {
        if (NR == 0) { print "nan"; exit }
        if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

# Replaces the part of FILE between "<!-- BEGIN NAME -->" and "<!-- END NAME -->" with the
# contents of SECTION (markers included in SECTION's output), or appends it.
splice_section() {
    local file=$1 name=$2 section=$3 begin end
    begin="<!-- BEGIN $name -->"
    end="<!-- END $name -->"
    if [ ! -f "$file" ]; then
        printf '# Benchmark results\n\nGenerated by the scripts in `bench/`; see `bench/README.md`.\n\n' >"$file"
    fi
    if grep -qF "$begin" "$file"; then
        awk -v begin="$begin" -v end="$end" -v section="$section" '
            $0 == begin { while ((getline line < section) > 0) print line; skip = 1; next }
            $0 == end { skip = 0; next }
            !skip { print }' "$file" >"$file.new"
        mv "$file.new" "$file"
    else
        cat "$section" >>"$file"
    fi
}

# Samples the machine for SECONDS and prints how many cores were busy and the three
# busiest processes over that interval, e.g. "1.62 cores busy; rustc 0.95, cc1 0.40, ...".
busy_sample() {
    local seconds=${1:-1} before after b0 b1
    # "pid comm ticks" for every process; comm may hold spaces, so split at the last ')'.
    snapshot() {
        cat /proc/[0-9]*/stat 2>/dev/null | awk '{
            op = index($0, "("); cl = 0
            for (i = length($0); i > 0; i--) if (substr($0, i, 1) == ")") { cl = i; break }
            comm = substr($0, op + 1, cl - op - 1); gsub(/ /, "_", comm)
            split(substr($0, cl + 2), f, " ")
            print $1, comm, f[12] + f[13]
        }'
    }
    b0=$(machine_busy_ticks)
    before=$(snapshot)
    sleep "$seconds"
    after=$(snapshot)
    b1=$(machine_busy_ticks)
    awk -v hz="$CLK_TCK" -v s="$seconds" -v busy=$((b1 - b0)) '
        FNR == NR { t[$1] = $3; next }
        ($1 in t) && $3 > t[$1] { d[$2 " (" $1 ")"] = ($3 - t[$1]) / hz / s }
        END {
            printf "%.2f cores busy", busy / hz / s
            n = 0
            for (k in d) { keys[++n] = k }
            for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (d[keys[j]] > d[keys[i]]) { x = keys[i]; keys[i] = keys[j]; keys[j] = x }
            for (i = 1; i <= n && i <= 3; i++) printf "%s %s %.2f", (i == 1 ? "; busiest:" : ","), keys[i], d[keys[i]]
            print ""
        }' <(echo "$before") <(echo "$after")
}
