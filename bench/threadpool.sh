#!/usr/bin/env bash
# Scenario "threadpool": seed 000, "Thread Pools in NGINX Boost Performance 9x!", under the
# seed's own condition: a data set of 4 MiB files larger than the page cache the server may
# use, on a slow disk, read by a random load, plus a constant load on one hot file that stays
# in page cache because it is hot. What is measured is the hot file's req/s and latency (with
# `aio off` a worker waiting for the disk cannot serve the hot file; with `aio threads` it
# can), the total bytes/s, and Portico's loop stalls (its stall watcher's counts).
#
#   bench/threadpool.sh            (as root: cgroups, drop_caches)
#
# Environment (defaults in brackets):
#   REPS [5]                 repetitions of each configuration (interleaved)
#   DURATION [20]            seconds per run (each run is bounded by it)
#   FILES [512]              data-set files of 4 MiB (512 = 2 GiB)
#   DATA_DIR [/work/bench-data/threadpool]   where the files are made once and kept
#   RANDOM_CONNECTIONS [200] HOT_CONNECTIONS [50]   wrk connections of the two loads (the
#                            seed's: 200 on random files, 50 on the hot one)
#   HOT_THREADS [2]          wrk threads of the hot load; with 1 the single wrk thread
#                            is the ceiling of both servers on a 2-CPU machine (about 1850
#                            req/s of 4 MiB with or without the cold load; bench/README.md)
#   WORKERS [2]              worker_processes
#   SERVER_USER [www-data]   the `user` directive of both servers: their workers' user,
#                            who can read the data set but does not own it (as with
#                            Debian's nginx); "root" measures a server that owns its files
#   USERS [$SERVER_USER]     several users, e.g. "root www-data": every configuration runs
#                            under each, in the same repetition (rows "CONFIG@USER")
#   PRESET                   "hot-tail": issue 34's run of the seed's location, as root and
#                            as www-data (USERS="root www-data", 24 random and 16 hot
#                            connections, CONFIGS="nginx:threads portico:threads nginx:off
#                            portico:off", section threadpool-hot-tail of RESULTS.md)
#   LOCK [/tmp/portico-bench.lock]   held (flock) for each repetition, so that other
#                            benchmarks on the shared machine never overlap one; "-" = none
#   READ_BPS [31457280]      READ_IOPS [200]    the emulated disk: blkio throttle on reads
#   MEMORY_LIMIT [268435456] the servers' memory cgroup limit (page cache included)
#   CONFIGS [all eleven]     e.g. "nginx:off portico:threads"; mode "threads-pin" (Portico
#                            only) adds `pin_hot_files 64m;`; a third part ":alone" runs
#                            the hot load alone, ":cached" the whole data set in page cache
#                            with no memory limit (the old no-pressure rows)
#   METRICS [0]              1: Portico's configuration also has a `portico_metrics`
#                            location, read after each run into the run's prefix
#                            (with KEEP_TMP=1: its pools' waits, residency answers)
#   BASE_BIN                 an earlier Portico build: configurations "base:MODE" run it
#                            (with PRESET=hot-tail, "base:threads" is added to CONFIGS)
#   PORTICO_BIN, CARGO_TARGET_DIR, RESULTS [bench/RESULTS.md] ("-" = don't write), KEEP_TMP [0]
#
# The disk: the servers run in a cgroup v1 blkio group whose read_bps_device and
# read_iops_device limit reads from the device holding DATA_DIR. The memory: they also run in
# a cgroup v1 memory group limited to MEMORY_LIMIT, so their page cache holds a fraction of
# the data set. Page cache is dropped before every run (echo 3 > /proc/sys/vm/drop_caches),
# then the hot file is read back in from inside both groups (charged to the servers'
# memory, which keeps it because the hot load keeps using it).

source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
source "$BENCH_DIR/lib/cache_setup.sh"

if [ "${PRESET:-}" = hot-tail ]; then
    USERS=${USERS:-"root www-data"}
    RANDOM_CONNECTIONS=${RANDOM_CONNECTIONS:-24}
    HOT_CONNECTIONS=${HOT_CONNECTIONS:-16}
    if [ -n "${BASE_BIN:-}" ]; then
        CONFIGS=${CONFIGS:-"nginx:threads portico:threads base:threads nginx:off portico:off"}
    fi
    CONFIGS=${CONFIGS:-"nginx:threads portico:threads nginx:off portico:off"}
    SECTION=${SECTION:-threadpool-hot-tail}
elif [ -n "${PRESET:-}" ]; then
    echo "unknown PRESET=$PRESET" >&2
    exit 1
fi
REPS=${REPS:-5}
DURATION=${DURATION:-20}
FILES=${FILES:-512}
DATA_DIR=${DATA_DIR:-/work/bench-data/threadpool}
RANDOM_CONNECTIONS=${RANDOM_CONNECTIONS:-200}
HOT_CONNECTIONS=${HOT_CONNECTIONS:-50}
HOT_THREADS=${HOT_THREADS:-2}
WORKERS=${WORKERS:-2}
SERVER_USER=${SERVER_USER:-www-data}
USERS=${USERS:-$SERVER_USER}
LOCK=${LOCK:-/tmp/portico-bench.lock}
READ_BPS=${READ_BPS:-31457280}
READ_IOPS=${READ_IOPS:-200}
MEMORY_LIMIT=${MEMORY_LIMIT:-268435456}
CONFIGS=${CONFIGS:-"nginx:off portico:off nginx:threads portico:threads nginx:threads-sendfile-off portico:threads-sendfile-off portico:threads-nowait-off nginx:threads:alone portico:threads:alone nginx:threads:cached portico:threads:cached"}
RESULTS=${RESULTS:-$BENCH_DIR/RESULTS.md}
KEEP_TMP=${KEEP_TMP:-0}
METRICS=${METRICS:-0}
SECTION=${SECTION:-threadpool}
FILE_BYTES=$((4 * 1024 * 1024))
CGROUP=/sys/fs/cgroup/blkio/portico-bench-threadpool
MEMCG=/sys/fs/cgroup/memory/portico-bench-threadpool

[ "$(id -u)" -eq 0 ] || die "run as root: the cgroups and drop_caches need it"
[ -d /sys/fs/cgroup/blkio ] || die "no cgroup v1 blkio hierarchy at /sys/fs/cgroup/blkio"
[ -d /sys/fs/cgroup/memory ] || die "no cgroup v1 memory hierarchy at /sys/fs/cgroup/memory"
ensure_tools
ensure_portico

WORK=$(mktemp -d /tmp/portico-bench-threadpool.XXXXXX)
cleanup() {
    stop_all_started
    if [ -n "${HOT_PID:-}" ]; then kill "$HOT_PID" 2>/dev/null || true; fi
    if [ -n "${RANDOM_PID:-}" ]; then kill "$RANDOM_PID" 2>/dev/null || true; fi
    rmdir "$CGROUP" 2>/dev/null || true
    rmdir "$MEMCG" 2>/dev/null || true
    if [ "$KEEP_TMP" = 1 ]; then note "kept $WORK"; else rm -rf "$WORK"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# ---------------------------------------------------------------- data set ----
make_data() {
    mkdir -p "$DATA_DIR/data"
    local index made=0
    for ((index = 0; index < FILES; index++)); do
        if [ "$(stat -c %s "$DATA_DIR/data/$index.bin" 2>/dev/null || echo 0)" != "$FILE_BYTES" ]; then
            head -c "$FILE_BYTES" /dev/urandom >"$DATA_DIR/data/$index.bin"
            made=$((made + 1))
        fi
    done
    [ -s "$DATA_DIR/hot.bin" ] || head -c "$FILE_BYTES" /dev/urandom >"$DATA_DIR/hot.bin"
    chmod -R a+rX "$DATA_DIR"
    [ "$made" = 0 ] || note "made $made data files in $DATA_DIR"
    sync
}

# ---------------------------------------------------------------- the disk ----
setup_disk() {
    local device major_minor
    device=$(df --output=source "$DATA_DIR" | tail -1)
    major_minor=$(lsblk -no MAJ:MIN "$device" 2>/dev/null | head -1 | tr -d ' ')
    [ -n "$major_minor" ] || major_minor=$(stat -c '%d' "$DATA_DIR" | awk '{ printf "%d:%d", int($1 / 256), $1 % 256 }')
    mkdir -p "$CGROUP"
    echo "$major_minor $READ_BPS" >"$CGROUP/blkio.throttle.read_bps_device"
    echo "$major_minor $READ_IOPS" >"$CGROUP/blkio.throttle.read_iops_device"
    DISK="$device ($major_minor): reads limited to $((READ_BPS / 1048576)) MiB/s and $READ_IOPS IO/s"
    note "emulated disk: $DISK"
    mkdir -p "$MEMCG"
    echo 0 >"$MEMCG/memory.swappiness" 2>/dev/null || true
    # The servers start from a wrapper that joins both groups first, so every thread and
    # child process they make is in them.
    cat >"$WORK/in-cgroups" <<EOF
#!/bin/sh
echo \$\$ > $CGROUP/cgroup.procs || exit 1
echo \$\$ > $MEMCG/cgroup.procs || exit 1
exec "\$@"
EOF
    chmod +x "$WORK/in-cgroups"
    for bin in nginx portico base; do
        local real
        case $bin in
            nginx) real=$NGINX_BIN ;;
            portico) real=$PORTICO_BIN ;;
            base) [ -n "${BASE_BIN:-}" ] || continue; real=$BASE_BIN ;;
        esac
        cat >"$WORK/$bin-in-cgroup" <<EOF
#!/bin/sh
exec $WORK/in-cgroups $real "\$@"
EOF
        chmod +x "$WORK/$bin-in-cgroup"
    done
    NGINX_BIN_REAL=$NGINX_BIN
    NGINX_BIN=$WORK/nginx-in-cgroup
    PORTICO_BIN_REAL=$PORTICO_BIN
    PORTICO_BIN=$WORK/portico-in-cgroup
}

# ---------------------------------------------------------------- configs ----
# Both servers read the same file; only Portico's `aio_nowait off` run has a line nginx lacks.
# A location's `sendfile off` overrides the http level's `sendfile on`.
write_conf() {
    local mode=$1 port=$2 file=$3 user=$4 kind=$5 aio_lines metrics_lines=""
    if [ "$kind" != nginx ] && [ "$METRICS" = 1 ]; then
        metrics_lines="location = /portico-metrics { portico_metrics; }"
    fi
    case $mode in
        off) aio_lines="aio off;" ;;
        threads) aio_lines="aio threads;" ;;
        threads-sendfile-off) aio_lines="aio threads; sendfile off;" ;;
        threads-nowait-off) aio_lines="aio threads; aio_nowait off;" ;;
        threads-pin) aio_lines="aio threads; pin_hot_files 64m;" ;;
        *) die "unknown mode $mode" ;;
    esac
    cat >"$file" <<EOF
user $user;
daemon off;
worker_processes $WORKERS;
error_log logs/error.log notice;
events {
    worker_connections 1024;
    accept_mutex off;
}
http {
    access_log off;
    default_type application/octet-stream;
    sendfile on;
    sendfile_max_chunk 512k;
    server {
        listen 127.0.0.1:$port;
        location / {
            root $DATA_DIR;
            $aio_lines
        }
        $metrics_lines
    }
}
EOF
}

write_random_keys_lua "$WORK/random.lua" "$FILES" /data/ .bin

# Bytes from wrk's "N requests in T, X.YYGB read".
read_bytes() {
    awk '/ requests in / { v = $5; u = v; sub(/[A-Za-z]+$/, "", v); sub(/^[0-9.]+/, "", u)
        m = 1; if (u == "KB") m = 1024; else if (u == "MB") m = 1048576;
        else if (u == "GB") m = 1073741824; else if (u == "TB") m = 1099511627776
        printf "%.0f\n", v * m; exit }' "$1"
}

RUNS=$WORK/runs.tsv
: >"$RUNS"

# SAMPLE_HOT=1: every 100 ms, how much of the hot file page cache holds (fincore, run as
# root, so it sees the real state), to tell a hot file evicted by the memory group from a
# server's own delay. The run's line then ends with the smallest share seen and the number
# of samples under 100 %.
sample_hot() {
    local out=$1 end=$((SECONDS + DURATION))
    while [ $SECONDS -lt $end ]; do
        echo "$(date +%s.%N) $(fincore -b -n -o RES "$DATA_DIR/hot.bin" 2>/dev/null || echo 0)" >>"$out"
        sleep 0.1
    done
}

# SAMPLE_STACKS=1: every 50 ms, the kernel stack of each server thread that is not asleep
# in epoll or a futex (where a worker should be), to find what holds a worker's loop.
sample_stacks() {
    local pid=$1 out=$2 end=$((SECONDS + DURATION)) task
    while [ $SECONDS -lt $end ]; do
        for task in /proc/$pid/task/*; do
            local name state
            name=$(cat "$task/comm" 2>/dev/null) || continue
            case $name in worker*) ;; *) continue ;; esac
            state=$(awk '{ print $3 }' "$task/stat" 2>/dev/null)
            if ! grep -q epoll_wait "$task/stack" 2>/dev/null; then
                { echo "== $name $state $(date +%T.%N)"; cat "$task/stack"; } >>"$out" 2>/dev/null
            fi
        done
        sleep 0.05
    done
}

# Portico's stall counts over its workers, "N10 N100 N1000", from the notice each worker
# writes when it exits; "- - -" for nginx, which has no stall watcher.
stall_counts() {
    local kind=$1 log=$2
    if [ "$kind" = nginx ]; then
        echo "- - -"
        return
    fi
    awk '/worker loop stalls: / {
            sub(/.*worker loop stalls: /, "")
            a += $1; b += $7; c += $13; n++
        }
        END { if (n) printf "%d %d %d\n", a, b, c; else print "? ? ?" }' "$log"
}

# The name of a configuration's rows: "CONFIG", or "CONFIG@USER" when USERS has several.
row_key() {
    if [ "$(wc -w <<<"$USERS")" -gt 1 ]; then echo "$1@$2"; else echo "$1"; fi
}

run_one() {
    local config=$1 user=$2 rep=$3 kind mode variant alone=0 cached=0 port conf prefix hot_out random_out parsed key
    local load_start load_end
    key=$(row_key "$config" "$user")
    IFS=: read -r kind mode variant <<<"$config"
    case $variant in
        "") ;;
        alone) alone=1 ;;
        cached) cached=1 ;;
        *) die "unknown config $config" ;;
    esac
    port=$(free_port)
    prefix=$WORK/${key//[:@]/-}-$rep
    conf=$WORK/$kind-$mode-$user.conf
    mkdir -p "$prefix/logs"
    write_conf "$mode" "$port" "$conf" "$user" "$kind"
    sync
    echo 3 >/proc/sys/vm/drop_caches
    if [ "$cached" = 1 ]; then
        # No pressure: no memory limit, and the whole data set read in first (unthrottled).
        echo -1 >"$MEMCG/memory.limit_in_bytes"
        cat "$DATA_DIR"/data/*.bin >/dev/null
    else
        echo "$MEMORY_LIMIT" >"$MEMCG/memory.limit_in_bytes"
    fi
    "$WORK/in-cgroups" cat "$DATA_DIR/hot.bin" >/dev/null
    if [ "$kind" = base ]; then
        local current=$PORTICO_BIN
        PORTICO_BIN=$WORK/base-in-cgroup
        start_server portico "$prefix" "$conf" "$port"
        PORTICO_BIN=$current
    else
        start_server "$kind" "$prefix" "$conf" "$port"
    fi
    hot_out=$WORK/hot-${key//[:@]/-}-$rep.txt
    random_out=$WORK/random-${key//[:@]/-}-$rep.txt
    load_start=$(cut -d' ' -f1 /proc/loadavg)
    if [ "$alone" = 1 ]; then
        echo "0 requests in ${DURATION}s, 0B read" >"$random_out"
        sleep 0 &
    else
        timeout $((DURATION + 30)) wrk -t2 -c"$RANDOM_CONNECTIONS" -d"${DURATION}s" --timeout 60s \
            -s "$WORK/random.lua" "http://127.0.0.1:$port/" >"$random_out" 2>&1 &
    fi
    RANDOM_PID=$!
    timeout $((DURATION + 30)) wrk -t"$HOT_THREADS" -c"$HOT_CONNECTIONS" -d"${DURATION}s" --timeout 60s --latency \
        "http://127.0.0.1:$port/hot.bin" >"$hot_out" 2>&1 &
    HOT_PID=$!
    if [ -n "${SAMPLE_STACKS:-}" ]; then sample_stacks "$SERVER_PID" "$prefix/stacks.txt" & fi
    if [ -n "${SAMPLE_HOT:-}" ]; then sample_hot "$prefix/hot-resident.txt" & fi
    wait "$HOT_PID" || die "hot wrk failed: $(cat "$hot_out")"
    wait "$RANDOM_PID" || die "random wrk failed: $(cat "$random_out")"
    HOT_PID="" RANDOM_PID=""
    load_end=$(cut -d' ' -f1 /proc/loadavg)
    if [ "$kind" != nginx ] && [ "$METRICS" = 1 ]; then
        curl -s -m 10 "http://127.0.0.1:$port/portico-metrics" >"$prefix/metrics.txt" || true
    fi
    stop_server "$SERVER_PID"
    local stalls
    stalls=$(stall_counts "$kind" "$prefix/logs/error.log")
    parsed=$(parse_wrk "$hot_out") || die "could not parse: $(cat "$hot_out")"
    # shellcheck disable=SC2086
    set -- $parsed
    local hot_bytes random_bytes random_requests
    hot_bytes=$(read_bytes "$hot_out")
    random_bytes=$(read_bytes "$random_out")
    random_requests=$(awk '/ requests in / { print $1; exit }' "$random_out")
    local p50
    p50=$(to_us "$(awk '$1 == "50%" { print $2; exit }' "$hot_out")")
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$key" "$rep" "$2" "$3" "$4" "$5" \
        "$(awk -v h="$hot_bytes" -v r="$random_bytes" -v d="$DURATION" 'BEGIN { printf "%.0f", (h + r) / d }')" \
        "$random_requests" "$1" "${stalls// /$'\t'}" "$load_start" "$load_end" "$p50" >>"$RUNS"
    local hot_resident="" resident_min=- resident_short=-
    if [ -s "$prefix/hot-resident.txt" ]; then
        read -r resident_min resident_short < <(awk -v full="$FILE_BYTES" '
            { if (min == "" || $2 < min) min = $2; if ($2 < full) short++; n++ }
            END { printf "%.1f %d/%d\n", 100 * min / full, short, n }' "$prefix/hot-resident.txt")
        hot_resident="; hot file resident: min $resident_min %, $resident_short samples under 100 %"
    fi
    sed -i "\$s|\$|\t$resident_min\t$resident_short|" "$RUNS"
    note "$key rep $rep: load $load_start-$load_end; hot $2 req/s, p50 $p50 us, avg $3 us, p99 $4 us, errors $5; random $random_requests requests; total $(tail -1 "$RUNS" | cut -f7) B/s; stalls (10 ms, 100 ms, 1 s) $stalls$hot_resident"
}

make_data
setup_disk
note "configs: $CONFIGS; users: $USERS; $REPS reps of ${DURATION}s"
for ((rep = 1; rep <= REPS; rep++)); do
    # One repetition holds the shared benchmark lock, so that its nginx and Portico runs
    # see the same machine and no other benchmark runs between them.
    if [ "$LOCK" != - ]; then
        exec 9>>"$LOCK"
        flock 9
    fi
    for user in $USERS; do
        for config in $CONFIGS; do
            run_one "$config" "$user" "$rep"
        done
    done
    if [ "$LOCK" != - ]; then flock -u 9; fi
done

# ---------------------------------------------------------------- report ----
col_median() {
    local config=$1 column=$2
    # shellcheck disable=SC2046
    median $(awk -F'\t' -v c="$config" -v k="$column" '$1 == c { print $k }' "$RUNS")
}

# The median hot p99 of a configuration. A run that completed no hot request has no latency
# from wrk (it reads as 0): it counts as ABOVE_RUN, above the run's length.
ABOVE_RUN=$(((DURATION + 1) * 1000000))
p99_median() {
    # shellcheck disable=SC2046
    median $(awk -F'\t' -v c="$1" -v above="$ABOVE_RUN" '$1 == c { print ($9 == 0 ? above : $5) }' "$RUNS")
}

# Sum of a stall column over every run of a configuration; "-" for nginx.
col_sum() {
    local config=$1 column=$2
    awk -F'\t' -v c="$config" -v k="$column" '$1 == c { if ($k == "-") dash = 1; else total += $k }
        END { if (dash) print "-"; else print total + 0 }' "$RUNS"
}

SVG_NAME=$SECTION-hot-latency.svg
section=$WORK/section.md
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else if (a > 0) print "unbounded (nginx: 0)"; else print "n/a" }'; }
# "- name: hot req/s R (≥ T1), hot p99 P (≤ T2), total bytes/s B (≥ T3), stalls ≥ 100 ms S"
target_line() {
    local label=$1 mode=$2 rps_target=$3 user=${4:-$SERVER_USER}
    [[ " $CONFIGS " == *" portico:$mode "* && " $CONFIGS " == *" nginx:$mode "* ]] || return 0
    local p99_ratio nginx_idle portico nginx
    portico=$(row_key "portico:$mode" "$user")
    nginx=$(row_key "nginx:$mode" "$user")
    if [ "$(wc -w <<<"$USERS")" -gt 1 ]; then label="$label, \`user $user\`"; fi
    p99_ratio=$(ratio "$(p99_median "$portico")" "$(p99_median "$nginx")")
    # A run in which nginx completed no hot request has no latency from wrk: every hot
    # request it answered took longer than the run. When that is the median run, its p99
    # is only known to be above DURATION, and the ratio is an upper bound.
    nginx_idle=$(awk -F'\t' -v c="$nginx" '$1 == c && $9 == 0 { n++ } END { print n + 0 }' "$RUNS")
    if [ "$(p99_median "$nginx")" = "$ABOVE_RUN" ]; then
        p99_ratio="< $(ratio "$(p99_median "$portico")" "$((DURATION * 1000000))")"
        p99_ratio+=" (nginx completed no hot request in $nginx_idle of $REPS runs: its p99 is above ${DURATION} s)"
    fi
    echo "- $label: hot req/s $(ratio "$(col_median "$portico" 3)" "$(col_median "$nginx" 3)") (≥ $rps_target)," \
        "hot p99 $p99_ratio (≤ 0.5 where req/s ≥ 1.5)," \
        "total bytes/s $(ratio "$(col_median "$portico" 7)" "$(col_median "$nginx" 7)") (≥ 1);" \
        "Portico's loop stalls of 100 ms or more in all $REPS runs: $(col_sum "$portico" 11) (target 0)"
}
ROWS=()
for user in $USERS; do
    for config in $CONFIGS; do
        ROWS+=("$(row_key "$config" "$user")")
    done
done
{
    echo "<!-- BEGIN $SECTION -->"
    echo "## threadpool (seed 000): random load from a slow disk and a small page cache, plus one hot file"
    echo
    echo "Command: \`bench/threadpool.sh\` (${PRESET:+PRESET=$PRESET }REPS=$REPS DURATION=$DURATION FILES=$FILES WORKERS=$WORKERS USERS=\"$USERS\"" \
        "RANDOM_CONNECTIONS=$RANDOM_CONNECTIONS HOT_CONNECTIONS=$HOT_CONNECTIONS HOT_THREADS=$HOT_THREADS READ_BPS=$READ_BPS READ_IOPS=$READ_IOPS" \
        "MEMORY_LIMIT=$MEMORY_LIMIT)," \
        "$(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) CPUs, kernel $(uname -r), $("$NGINX_BIN_REAL" -v 2>&1 | head -1 || true)" \
        "and Portico $(git -C "$REPO_DIR" rev-parse --short HEAD 2>/dev/null || echo '?')."
    echo
    echo "Data set: $FILES files of 4 MiB ($((FILES * 4)) MiB) in \`$DATA_DIR\`; emulated disk: $DISK (cgroup v1 blkio" \
        "throttle on the server processes); memory: the servers' cgroup v1 memory group is limited to $((MEMORY_LIMIT / 1048576)) MiB," \
        "page cache included, so most of the data set cannot stay cached (\`:cached\` rows: no limit, the whole data set read in first);" \
        "page cache dropped before every run, then the hot file read back in from inside the groups." \
        "Both servers: \`user $(echo "$USERS" | sed 's/ / or /g'); worker_processes $WORKERS; sendfile on; sendfile_max_chunk 512k;\` and the \`aio\` line of the row" \
        "(\`threads\`: \`aio threads;\`, the seed's location; \`threads-sendfile-off\`: \`aio threads; sendfile off;\`;" \
        "\`threads-nowait-off\`: Portico's \`aio threads; aio_nowait off;\`)." \
        "Random load: \`wrk -t2 -c$RANDOM_CONNECTIONS\` with a Lua script picking a file at random; hot load:" \
        "\`wrk -t$HOT_THREADS -c$HOT_CONNECTIONS --latency\` on \`/hot.bin\` (4 MiB); both for ${DURATION} s, \`--timeout 60s\`." \
        "Loop stalls: Portico's stall watcher counts, summed over its workers (nginx has no such measure)."
    echo
    echo "Medians of $REPS runs (each run: both loads at once; stalls: the sum over all runs):"
    echo
    echo "| configuration | hot req/s | hot p50 latency | hot avg latency | hot p99 latency | total bytes/s | random requests | stalls ≥ 10 ms | ≥ 100 ms | ≥ 1 s |"
    echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
    for config in "${ROWS[@]}"; do
        awk -v c="$config" -v rps="$(col_median "$config" 3)" -v avg="$(col_median "$config" 4)" -v p50="$(col_median "$config" 15)" \
            -v p99="$(col_median "$config" 5)" -v bytes="$(col_median "$config" 7)" \
            -v random="$(col_median "$config" 8)" -v s10="$(col_sum "$config" 10)" \
            -v s100="$(col_sum "$config" 11)" -v s1000="$(col_sum "$config" 12)" 'BEGIN {
            printf "| %s | %.1f | %.1f ms | %.1f ms | %.1f ms | %.1f MB/s | %d | %s | %s | %s |\n", c, rps, p50 / 1000, avg / 1000, p99 / 1000, bytes / 1e6, random, s10, s100, s1000 }'
    done
    echo
    echo "Ratios, Portico / nginx (medians; the targets in brackets):"
    echo
    for user in $USERS; do
        target_line "\`aio threads\` (the seed's location)" threads 1.5 "$user"
        target_line "\`aio threads; sendfile off\`" threads-sendfile-off 1.5 "$user"
        target_line "\`aio off\`" off 1.0 "$user"
        target_line "\`aio threads\`, the hot file alone" threads:alone 1.0 "$user"
        target_line "\`aio threads\`, the whole data set cached" threads:cached 1.0 "$user"
    done
    for user in $USERS; do
        k() { row_key "$1" "$user"; }
        if [[ " $CONFIGS " == *" portico:threads:alone "* && " $CONFIGS " == *" nginx:threads:alone "* ]]; then
            echo "- The hot file under the cold load, as a share of the hot file alone ($user):" \
                "Portico $(ratio "$(col_median "$(k portico:threads)" 3)" "$(col_median "$(k portico:threads:alone)" 3)")," \
                "nginx $(ratio "$(col_median "$(k nginx:threads)" 3)" "$(col_median "$(k nginx:threads:alone)" 3)")"
        fi
        if [[ " $CONFIGS " == *" base:threads "* && " $CONFIGS " == *" portico:threads "* ]]; then
            echo "- Portico / the base build (\`BASE_BIN\`), \`aio threads\`, $user: hot req/s $(ratio "$(col_median "$(k portico:threads)" 3)" "$(col_median "$(k base:threads)" 3)")," \
                "hot p99 $(ratio "$(p99_median "$(k portico:threads)")" "$(p99_median "$(k base:threads)")");" \
                "base / nginx: hot req/s $(ratio "$(col_median "$(k base:threads)" 3)" "$(col_median "$(k nginx:threads)" 3)")," \
                "hot p99 $(ratio "$(p99_median "$(k base:threads)")" "$(p99_median "$(k nginx:threads)")")"
        fi
        if [[ " $CONFIGS " == *" portico:threads-pin "* && " $CONFIGS " == *" nginx:threads "* ]]; then
            echo "- Portico \`aio threads; pin_hot_files 64m;\` / nginx \`aio threads\` ($user): hot req/s $(ratio "$(col_median "$(k portico:threads-pin)" 3)" "$(col_median "$(k nginx:threads)" 3)")," \
                "hot p99 $(ratio "$(p99_median "$(k portico:threads-pin)")" "$(p99_median "$(k nginx:threads)")")"
        fi
        if [[ " $CONFIGS " == *" portico:threads-nowait-off "* ]]; then
            echo "- Portico \`aio_nowait on\` / \`off\` (both \`aio threads\`, $user): hot req/s $(ratio "$(col_median "$(k portico:threads)" 3)" "$(col_median "$(k portico:threads-nowait-off)" 3)")," \
                "hot p99 $(ratio "$(col_median "$(k portico:threads)" 5)" "$(col_median "$(k portico:threads-nowait-off)" 5)")"
        fi
    done
    echo
    echo "Every run (hot req/s, p50, avg and p99 in µs, socket errors + non-2xx of the hot load, total B/s, random requests, hot requests, Portico's loop stalls of 10 ms, 100 ms and 1 s or more, the machine's 1-minute load average from /proc/loadavg when the loads started and ended, and with SAMPLE_HOT=1 the smallest share of the hot file page cache held and how many 100 ms samples found it short):"
    echo
    echo "| configuration | rep | hot req/s | p50 µs | avg µs | p99 µs | errors | total B/s | random req | hot req | stalls ≥ 10 ms | ≥ 100 ms | ≥ 1 s | load start | load end | hot resident min % | samples < 100 % |"
    echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
    awk -F'\t' '{ printf "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", $1, $2, $3, $15, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $16, $17 }' "$RUNS"
    echo
    echo "![hot-file latency per configuration]($SVG_NAME)"
    echo
    echo "<!-- END $SECTION -->"
} >"$section"

# The plot: hot-file average and p99 latency per configuration, log scale.
svg=$WORK/$SVG_NAME
{
    for config in "${ROWS[@]}"; do
        printf '%s %s %s\n' "$config" "$(col_median "$config" 4)" "$(col_median "$config" 5)"
    done
} | awk -v title="seed 000: hot 4 MiB file latency under a random load from a slow disk and a small page cache (medians of $REPS runs)" '
    { name[NR] = $1; avg[NR] = $2 / 1000; p99[NR] = $3 / 1000; n = NR }
    END {
        width = 140 * n + 120; height = 420; top = 50; bottom = 340; left = 80
        lo = 0; hi = 5   # log10(ms): 1 ms .. 100 s
        printf "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" font-family=\"sans-serif\" font-size=\"12\">\n", width, height
        printf "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n"
        printf "<text x=\"%d\" y=\"24\" font-size=\"14\">%s</text>\n", left, title
        for (e = lo; e <= hi; e++) {
            y = bottom - (e - lo) / (hi - lo) * (bottom - top)
            printf "<line x1=\"%d\" x2=\"%d\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>\n", left, width - 20, y, y
            label = (e < 3) ? sprintf("%d ms", 10 ^ e) : sprintf("%d s", 10 ^ (e - 3))
            printf "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%s</text>\n", left - 6, y + 4, label
        }
        for (i = 1; i <= n; i++) {
            x = left + 20 + (i - 1) * 140
            split("avg p99", kinds, " ")
            for (k = 1; k <= 2; k++) {
                v = (k == 1) ? avg[i] : p99[i]
                lv = (v > 1) ? log(v) / log(10) : 0
                h = (lv - lo) / (hi - lo) * (bottom - top)
                color = (k == 1) ? "#4e79a7" : "#e15759"
                printf "<rect x=\"%d\" y=\"%.1f\" width=\"45\" height=\"%.1f\" fill=\"%s\"/>\n", x + (k - 1) * 50, bottom - h, h, color
                printf "<text x=\"%d\" y=\"%.1f\" text-anchor=\"middle\" font-size=\"10\">%.0f</text>\n", x + (k - 1) * 50 + 22, bottom - h - 4, v
            }
            printf "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">%s</text>\n", x + 47, bottom + 18, name[i]
        }
        printf "<rect x=\"%d\" y=\"%d\" width=\"12\" height=\"12\" fill=\"#4e79a7\"/><text x=\"%d\" y=\"%d\">average (ms)</text>\n", left, bottom + 40, left + 16, bottom + 50
        printf "<rect x=\"%d\" y=\"%d\" width=\"12\" height=\"12\" fill=\"#e15759\"/><text x=\"%d\" y=\"%d\">p99 (ms)</text>\n", left + 130, bottom + 40, left + 146, bottom + 50
        printf "</svg>\n"
    }' >"$svg"

cat "$section"
if [ "$RESULTS" != - ]; then
    splice_section "$RESULTS" "$SECTION" "$section"
    cp "$svg" "$BENCH_DIR/$SVG_NAME"
    note "wrote the $SECTION section of $RESULTS and $BENCH_DIR/$SVG_NAME"
fi
