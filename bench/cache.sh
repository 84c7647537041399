#!/usr/bin/env bash
# Scenario "cache": the proxy cache, nginx vs Portico with the same configuration file, in the
# same run (issue 12, spec cache.md section 7):
#
#   b1   HIT of one 1 KiB object, keep-alive                         req/s, CPU/request
#   b2   HIT over KEYS keys of 4 KiB, picked at random by a Lua script  req/s, CPU/request, syscalls/request
#   b3   HIT of one 1 MiB object, sendfile on                        bytes/s, CPU/request
#   b4   MISS and store: a new key per request, 64 KiB each          req/s, CPU/request, entries stored
#   b5a  coalescing, fast origin: CLIENTS ask one new key at once, proxy_cache_lock on; the
#        origin waits 1 s, then sends 8 MiB at 20 MB/s               upstream requests, TTFB, TTLB
#   b5b  the same with the origin sending at 1 MB/s (8 s, longer than proxy_cache_lock_timeout)
#   b6   the seed's three-cache configuration (split_clients over three caches, a thread pool
#        each) on a throttled disk, the servers in a memory cgroup smaller than the data set:
#        random HITs over the set plus a hot key                     hot req/s, hot p99, total bytes/s, loop stalls
#
#   bench/cache.sh                          (as root: b6 needs cgroups and drop_caches)
#
# Environment (defaults in brackets):
#   SCENARIOS ["b1 b2 b3 b4 b5a b5b b6"]  which scenarios, in this order
#   REPS [5]               repetitions per server and scenario (nginx and Portico alternating)
#   B5_REPS [REPS] B6_REPS [REPS]   repetitions of the coalescing and seed scenarios
#   DURATION [10] WARMUP [1] (seconds) WRK_THREADS [nproc]    b1-b4 load runs
#   CONNECTIONS_1K [100] CONNECTIONS_4K [100] CONNECTIONS_1M [20] CONNECTIONS_STORE [100]
#   KEYS [100000]          b2's keys (4 KiB each; every key is stored through both servers first)
#   WORKER_PROCESSES [auto] WORKER_CONNECTIONS [4096]
#   B5_CLIENTS [200] B5_BYTES [8388608] B5_DELAY [1] B5A_RATE [20000000] B5B_RATE [1000000]
#   B6_OBJECTS [768]       b6's random keys, 4 MiB each (768 = 3 GiB), over three caches
#   B6_DURATION [20] B6_RANDOM_CONNECTIONS [200] B6_HOT_CONNECTIONS [50] B6_HOT_THREADS [2]
#   B6_WORKERS [2] B6_USER [www-data] READ_BPS [31457280] READ_IOPS [200]
#   MEMORY_LIMIT [268435456]   b6's memory cgroup limit (page cache included)
#   B6_DATA_DIR [/work/bench-data/cache-seed]   b6's caches, filled once through each server and kept
#   LOADER_WAIT [30]       seconds to wait, after each start, for Portico's cache loaders
#   B4_STORE [tmpfs]       where b4's cache directory is: "tmpfs" (a directory in /dev/shm,
#                          linked from the prefix) or "disk" (the prefix's file system). The
#                          root file system here is ext4 mounted with `discard`: deleting the
#                          ~30,000 entries of one b4 run once they are written back takes about
#                          1 ms each, half a minute per run, and deleting them later leaves
#                          gigabytes of writeback and discards running under the next runs.
#   QUIET_MAX [0] QUIET_CORES [0.3] RETRY_NOISY [0]   as in bench/static.sh (b1-b4)
#   PORTICO_BIN, CARGO_TARGET_DIR, RESULTS [bench/RESULTS.md] ("-" = don't write), KEEP_TMP [0]
#
# See bench/README.md, scenario `cache`, for what each number means.

source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
source "$BENCH_DIR/lib/cache_setup.sh"

SCENARIOS=${SCENARIOS:-"b1 b2 b3 b4 b5a b5b b6"}
REPS=${REPS:-5}
B5_REPS=${B5_REPS:-$REPS}
B6_REPS=${B6_REPS:-$REPS}
DURATION=${DURATION:-10}
WARMUP=${WARMUP:-1}
WRK_THREADS=${WRK_THREADS:-$(nproc)}
CONNECTIONS_1K=${CONNECTIONS_1K:-100}
CONNECTIONS_4K=${CONNECTIONS_4K:-100}
CONNECTIONS_1M=${CONNECTIONS_1M:-20}
CONNECTIONS_STORE=${CONNECTIONS_STORE:-100}
KEYS=${KEYS:-100000}
WORKER_PROCESSES=${WORKER_PROCESSES:-auto}
WORKER_CONNECTIONS=${WORKER_CONNECTIONS:-4096}
B5_CLIENTS=${B5_CLIENTS:-200}
B5_BYTES=${B5_BYTES:-8388608}
B5_DELAY=${B5_DELAY:-1}
B5A_RATE=${B5A_RATE:-20000000}
B5B_RATE=${B5B_RATE:-1000000}
B6_OBJECTS=${B6_OBJECTS:-768}
B6_DURATION=${B6_DURATION:-20}
B6_RANDOM_CONNECTIONS=${B6_RANDOM_CONNECTIONS:-200}
B6_HOT_CONNECTIONS=${B6_HOT_CONNECTIONS:-50}
B6_HOT_THREADS=${B6_HOT_THREADS:-2}
B6_WORKERS=${B6_WORKERS:-2}
B6_USER=${B6_USER:-www-data}
READ_BPS=${READ_BPS:-31457280}
READ_IOPS=${READ_IOPS:-200}
MEMORY_LIMIT=${MEMORY_LIMIT:-268435456}
B6_DATA_DIR=${B6_DATA_DIR:-/work/bench-data/cache-seed}
LOADER_WAIT=${LOADER_WAIT:-30}
B4_STORE=${B4_STORE:-tmpfs}
QUIET_MAX=${QUIET_MAX:-0}
QUIET_CORES=${QUIET_CORES:-0.3}
RETRY_NOISY=${RETRY_NOISY:-0}
RESULTS=${RESULTS:-$BENCH_DIR/RESULTS.md}
KEEP_TMP=${KEEP_TMP:-0}
SECTION=cache
B6_OBJECT_BYTES=$((4 * 1024 * 1024))
CGROUP=/sys/fs/cgroup/blkio/portico-bench-cache
MEMCG=/sys/fs/cgroup/memory/portico-bench-cache
COMMAND_LINE="bench/cache.sh"
for variable in SCENARIOS REPS B5_REPS B6_REPS DURATION WARMUP WRK_THREADS CONNECTIONS_1K CONNECTIONS_4K CONNECTIONS_1M \
    CONNECTIONS_STORE KEYS B4_STORE WORKER_PROCESSES WORKER_CONNECTIONS B5_CLIENTS B5_BYTES B5_DELAY B5A_RATE B5B_RATE \
    B6_OBJECTS B6_DURATION B6_RANDOM_CONNECTIONS B6_HOT_CONNECTIONS B6_HOT_THREADS B6_WORKERS B6_USER READ_BPS \
    READ_IOPS MEMORY_LIMIT B6_DATA_DIR LOADER_WAIT QUIET_MAX QUIET_CORES RETRY_NOISY PORTICO_BIN CARGO_TARGET_DIR; do
    if printenv "$variable" >/dev/null; then
        COMMAND_LINE="$variable='${!variable}' $COMMAND_LINE"
    fi
done
has() { [[ " $SCENARIOS " == *" $1 "* ]]; }
for scenario in $SCENARIOS; do
    case $scenario in b1 | b2 | b3 | b4 | b5a | b5b | b6) ;; *) die "unknown scenario $scenario" ;; esac
done
if has b6; then
    [ "$(id -u)" -eq 0 ] || die "b6 needs root (cgroups, drop_caches); run as root or leave b6 out of SCENARIOS"
    [ -d /sys/fs/cgroup/blkio ] || die "no cgroup v1 blkio hierarchy at /sys/fs/cgroup/blkio (b6)"
    [ -d /sys/fs/cgroup/memory ] || die "no cgroup v1 memory hierarchy at /sys/fs/cgroup/memory (b6)"
fi
command -v python3 >/dev/null || die "python3 is needed for b5's origin and clients"

ensure_tools
ensure_portico
NGINX_BIN_REAL=$NGINX_BIN
PORTICO_BIN_REAL=$PORTICO_BIN
COUNT_SYSCALLS=0
if command -v perf >/dev/null && perf stat -e raw_syscalls:sys_enter true >/dev/null 2>&1; then
    COUNT_SYSCALLS=1
fi
commit=$(git -C "$REPO_DIR" rev-parse --short HEAD 2>/dev/null || echo unknown)
changed=$(git -C "$REPO_DIR" --no-optional-locks diff --name-only HEAD -- crates Cargo.toml Cargo.lock 2>/dev/null | paste -sd, - || true)
[ -z "$changed" ] || commit="$commit plus uncommitted changes to $changed"
code_commit=$(git -C "$REPO_DIR" log -1 --format=%h -- crates Cargo.toml Cargo.lock 2>/dev/null || echo unknown)
commit="$commit (its crates last changed in $code_commit)"

# The caches and files live on the machine's ordinary file system (ext4 here), not tmpfs.
WORK=$(mktemp -d /tmp/portico-bench-cache.XXXXXX)
chmod 755 "$WORK"
case $B4_STORE in tmpfs | disk) ;; *) die "B4_STORE must be tmpfs or disk" ;; esac
STORE_TMPFS=""
if has b4 && [ "$B4_STORE" = tmpfs ]; then
    STORE_TMPFS=$(mktemp -d /dev/shm/portico-bench-cache-store.XXXXXX)
    chmod 755 "$STORE_TMPFS"
fi
HOT_PID="" RANDOM_PID=""
cleanup() {
    # The slow origin ignores QUIT (a background job of a non-interactive shell): TERM it.
    [ -z "${SLOW_PID:-}" ] || kill -TERM "$SLOW_PID" 2>/dev/null || true
    [ -z "$HOT_PID" ] || kill "$HOT_PID" 2>/dev/null || true
    [ -z "$RANDOM_PID" ] || kill "$RANDOM_PID" 2>/dev/null || true
    stop_all_started
    local kind
    for kind in nginx portico; do
        rmdir "$CGROUP-$kind" 2>/dev/null || true
        rmdir "$MEMCG-$kind" 2>/dev/null || true
    done
    [ -z "$STORE_TMPFS" ] || rm -rf "$STORE_TMPFS"
    if [ "$KEEP_TMP" = 1 ]; then note "kept $WORK"; else rm -rf "$WORK"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM
mkdir -p "$WORK/logs" "$WORK/conf"

user_line=""
[ "$(id -u)" -eq 0 ] && user_line="user root;"

# ---- The origins -------------------------------------------------------------------------

# The static backend: nginx serving files of random bytes; `expires 1d` makes every response
# cacheable for a day (Cache-Control: max-age=86400), so the proxies need no proxy_cache_valid.
DOCROOT=$WORK/origin
mkdir -p "$DOCROOT/hit" "$DOCROOT/keys" "$DOCROOT/store" "$DOCROOT/b6"
head -c 1024 /dev/urandom >"$DOCROOT/hit/1k.bin"
head -c $((1024 * 1024)) /dev/urandom >"$DOCROOT/hit/1m.bin"
head -c 4096 /dev/urandom >"$DOCROOT/keys/4k.bin"
head -c 65536 /dev/urandom >"$DOCROOT/store/64k.bin"
if has b6; then
    # b6's caches outlive this run (B6_DATA_DIR), so its origin file does too.
    mkdir -p "$B6_DATA_DIR"
    [ "$(stat -c %s "$B6_DATA_DIR/origin-obj.bin" 2>/dev/null || echo 0)" = "$B6_OBJECT_BYTES" ] \
        || head -c "$B6_OBJECT_BYTES" /dev/urandom >"$B6_DATA_DIR/origin-obj.bin"
    cp "$B6_DATA_DIR/origin-obj.bin" "$DOCROOT/b6/obj.bin"
fi
head -c "$B5_BYTES" /dev/urandom >"$WORK/slow-body.bin"
chmod -R a+rX "$DOCROOT"
BACKEND_PORT=$(free_port)
write_origin_conf "$WORK/conf/backend.conf" "$BACKEND_PORT" "$DOCROOT" bench/cache.sh
start_server nginx "$WORK/backend" "$WORK/conf/backend.conf" "$BACKEND_PORT"
BACKEND_PID=$SERVER_PID
# Requests the backend has answered so far (stub_status), not counting this one.
backend_requests() {
    curl -s --max-time 5 "http://127.0.0.1:$BACKEND_PORT/__status" | awk 'NR == 3 { print $3 - 1 }'
}

SLOW_PORT=""
SLOW_PID=""
if has b5a || has b5b; then
    SLOW_PORT=$(free_port)
    while [ "$SLOW_PORT" = "$BACKEND_PORT" ]; do SLOW_PORT=$(free_port); done
    SLOW_ORIGIN_DELAY=$B5_DELAY python3 "$BENCH_DIR/lib/slow_origin.py" "$SLOW_PORT" "$WORK/slow-body.bin" \
        >"$WORK/logs/slow-origin.log" 2>&1 &
    SLOW_PID=$!
    STARTED_PIDS+=("$SLOW_PID")
    for _ in $(seq 1 50); do
        curl -s --max-time 1 -o /dev/null "http://127.0.0.1:$SLOW_PORT/__stats" && break
        sleep 0.1
    done
    curl -s --max-time 1 -o /dev/null "http://127.0.0.1:$SLOW_PORT/__stats" || die "the slow origin did not start: $(cat "$WORK/logs/slow-origin.log")"
fi
# "REQUESTS BYTES" the slow origin has had and sent so far.
slow_stats() { curl -s --max-time 5 "http://127.0.0.1:$SLOW_PORT/__stats"; }

# ---- The configurations, each read by both servers ---------------------------------------

PORT=$(free_port)
while [ "$PORT" = "$BACKEND_PORT" ] || [ "$PORT" = "$SLOW_PORT" ]; do PORT=$(free_port); done
# Every relative path (logs, pid, cache directories) resolves under the server's -p prefix,
# so one file gives each server its own caches.
LOG_LINES=$CACHE_LOG_LINES
HIT_CONF=$WORK/conf/hit.conf
write_hit_conf "$HIT_CONF" "$BACKEND_PORT" bench/cache.sh
LOCK_CONF=$WORK/conf/lock.conf
cat >"$LOCK_CONF" <<EOF
# Generated by bench/cache.sh (b5a, b5b); nginx and Portico both read this file.
$user_line
worker_processes $WORKER_PROCESSES;
daemon off;
pid logs/server.pid;
error_log logs/error.log notice;
events {
    worker_connections $WORKER_CONNECTIONS;
}
http {
    $LOG_LINES
    sendfile on;
    proxy_http_version 1.1;
    proxy_set_header Connection "";
    proxy_cache_path cache/lock levels=1:2 keys_zone=lock:10m inactive=1d use_temp_path=off;
    upstream origin {
        server 127.0.0.1:${SLOW_PORT:-1};
        keepalive 32;
    }
    server {
        listen 127.0.0.1:$PORT;
        location = / { return 200 "ok\n"; }
        location /slow/ {
            proxy_pass http://origin;
            proxy_cache lock;
            proxy_cache_lock on;
            add_header X-Cache-Status \$upstream_cache_status;
        }
    }
}
EOF
# The seed's configuration (seed 000, its last example), with what it lacks to load at all
# (events, the upstream, a listen port), the paths replaced by three directories under the
# prefix, and inactive=1d: the caches are filled well before the runs, and nginx's default
# inactive=10m would let each server's manager delete entries the random load has not touched
# for ten minutes. Both servers run at once through the whole script (see "b6" below), so
# each has its own file; the two differ in the listen port only.
SEED_PORT_nginx=$(free_port)
SEED_PORT_portico=$(free_port)
[ "$(printf '%s\n' "$PORT" "$BACKEND_PORT" "${SLOW_PORT:-0}" "$SEED_PORT_nginx" "$SEED_PORT_portico" | sort -u | wc -l)" = 5 ] \
    || die "free_port gave the same port twice; run again"
write_seed_conf() {
    cat >"$1" <<EOF
# Generated by bench/cache.sh (b6): seed 000's three-disk cache; the nginx and Portico files differ in the port only.
user $B6_USER;
worker_processes $B6_WORKERS;
daemon off;
pid logs/server.pid;
error_log logs/error.log notice;
thread_pool pool_1 threads=16;
thread_pool pool_2 threads=16;
thread_pool pool_3 threads=16;
events {
    worker_connections 4096;
}
http {
    $LOG_LINES
    proxy_cache_path disk1 levels=1:2 keys_zone=cache_1:256m max_size=1024G inactive=1d use_temp_path=off;
    proxy_cache_path disk2 levels=1:2 keys_zone=cache_2:256m max_size=1024G inactive=1d use_temp_path=off;
    proxy_cache_path disk3 levels=1:2 keys_zone=cache_3:256m max_size=1024G inactive=1d use_temp_path=off;
    split_clients \$request_uri \$disk {
        33.3% 1;
        33.3% 2;
        * 3;
    }
    upstream backend {
        server 127.0.0.1:$BACKEND_PORT;
    }
    server {
        listen 127.0.0.1:$2;
        location = / { return 200 "ok\n"; }
        location / {
            proxy_pass http://backend;
            proxy_cache_key \$request_uri;
            proxy_cache cache_\$disk;
            aio threads=pool_\$disk;
            sendfile on;
        }
    }
}
EOF
}
write_seed_conf "$WORK/conf/seed-nginx.conf" "$SEED_PORT_nginx"
write_seed_conf "$WORK/conf/seed-portico.conf" "$SEED_PORT_portico"
for conf in "$HIT_CONF" "$LOCK_CONF" "$WORK/conf/seed-nginx.conf"; do
    # nginx makes only the last component of a cache path: the "cache" directory must exist.
    mkdir -p "$WORK/check/nginx/logs" "$WORK/check/portico/logs" "$WORK/check/nginx/cache" "$WORK/check/portico/cache"
    "$NGINX_BIN" -t -q -p "$WORK/check/nginx/" -e "$WORK/check/nginx/logs/error.log" -c "$conf" >"$WORK/check/out" 2>&1 \
        || die "nginx -t rejects $conf: $(cat "$WORK/check/out")"
    "$PORTICO_BIN" -t -q -p "$WORK/check/portico/" -e "$WORK/check/portico/logs/error.log" -c "$conf" >"$WORK/check/out" 2>&1 \
        || die "portico -t rejects $conf: $(cat "$WORK/check/out")"
    rm -rf "$WORK/check"
done
note "servers on 127.0.0.1:$PORT, static origin :$BACKEND_PORT${SLOW_PORT:+, slow origin :$SLOW_PORT}; work dir $WORK"

# ---- Helpers -----------------------------------------------------------------------------

# Waits (at most LOADER_WAIT s) until Portico's error log has N "http file cache:" notices
# past byte FROM (its size before this start: the log is kept across starts, and the
# notices of earlier starts must not count): every zone's index is loaded (from the
# snapshot of the last clean stop, or by its walk), so that no loader runs during the
# measurement. nginx's loader starts a minute after the start, after each b1-b4 run has
# ended, so nginx is not waited for.
wait_loaders() {
    local log=$1 zones=$2 from=$3 deadline=$((SECONDS + LOADER_WAIT)) n
    while :; do
        n=$(tail -c +$((from + 1)) "$log" 2>/dev/null | grep -c 'http file cache: ' || true)
        [ "${n:-0}" -ge "$zones" ] && return 0
        if [ $SECONDS -ge $deadline ]; then
            note "portico: ${n:-0} of $zones cache loaders done after ${LOADER_WAIT}s; measuring anyway"
            return 0
        fi
        sleep 0.1
    done
}



# Entry files (32 hex digits) under a cache directory, not counting temp files or Portico's
# .portico sidecar.
count_entries() {
    find -H "$@" -name .portico -prune -o -type f -print 2>/dev/null | grep -cE '/[0-9a-f]{32}$' || true
}

# "TOTAL HIT MISS OTHER SUMMARY" of the access-log lines whose URI starts with PREFIX,
# past the first SKIP lines (0); SUMMARY is e.g. "HIT=123,MISS=1".
tally() {
    local log=$1 prefix=$2 skip=${3:-0}
    awk -v p="$prefix" -v skip="$skip" 'NR > skip && index($4, p) == 1 { n++; s[$1]++ }
        END {
            list = ""; for (k in s) list = list (list == "" ? "" : ",") k "=" s[k]
            printf "%d %d %d %d %s\n", n, s["HIT"] + 0, s["MISS"] + 0, n - s["HIT"] - s["MISS"], (list == "" ? "-" : list)
        }' "$log" 2>/dev/null || echo "0 0 0 0 -"
}

# Runs wrk once; prints wrk's own user+sys ticks; its report goes to OUT.
#   run_wrk OUT DURATION URL CONNECTIONS [LUA_SCRIPT] [THREADS]
run_wrk() {
    local out=$1 duration=$2 url=$3 connections=$4 script=${5:-} threads=${6:-$WRK_THREADS}
    timeout $((duration + 30)) bash -c '
        if [ -n "$6" ]; then
            wrk -t"$1" -c"$2" -d"$3"s --latency -s "$6" "$4" >"$5" 2>&1 || exit 1
        else
            wrk -t"$1" -c"$2" -d"$3"s --latency "$4" >"$5" 2>&1 || exit 1
        fi
        stat=$(cat /proc/$$/stat); stat=${stat##*) }
        set -- $stat
        echo $(( ${14} + ${15} ))' wrk "$threads" "$connections" "$duration" "$url" "$out" "$script"
}

# Bytes from wrk's "N requests in T, X.YYMB read".
read_bytes() {
    awk '/ requests in / { v = $5; u = v; sub(/[A-Za-z]+$/, "", v); sub(/^[0-9.]+/, "", u)
        m = 1; if (u == "KB") m = 1024; else if (u == "MB") m = 1048576;
        else if (u == "GB") m = 1073741824; else if (u == "TB") m = 1099511627776
        printf "%.0f\n", v * m; exit }' "$1"
}

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

# Lua scripts for wrk. Keys are query strings on one origin file: the default key
# ($scheme$proxy_host$request_uri) differs, the body is the same.
write_random_keys_lua "$WORK/random-keys.lua" "$KEYS"
cat >"$WORK/unique-keys.lua" <<EOF
-- b4: a key no request asked for before, per request (thread id, counter, run tag).
local counter = 0
function setup(thread)
    counter = counter + 1
    thread:set("id", counter)
end
function init(args)
    n = 0
    tag = os.time()
end
function request()
    n = n + 1
    return wrk.format("GET", "/store/64k.bin?" .. tag .. "-" .. id .. "-" .. n)
end
EOF
# ---- b1-b4: HITs and stores, CPU per request ---------------------------------------------

RUNS=$WORK/runs.tsv
: >"$RUNS"
# Columns: 1 scenario, 2 rep, 3 server, 4 requests, 5 req/s, 6 avg us, 7 p99 us, 8 errors,
# 9 server CPU s, 10 CPU/request us, 11 wrk CPU s, 12 other load (cores), 13 in medians,
# 14 syscalls/request (warm-up), 15 bytes/s, 16 log lines, 17 HIT, 18 MISS, 19 log summary,
# 20 entries stored (b4), 21 upstream requests (b4), 22 note, 23 MISS responses sent whole (b4)

scenario_path() {
    case $1 in
        b1) echo /hit/1k.bin ;;
        b2) echo /keys/ ;;
        b3) echo /hit/1m.bin ;;
        b4) echo /store/ ;;
    esac
}
scenario_connections() {
    case $1 in
        b1) echo "$CONNECTIONS_1K" ;;
        b2) echo "$CONNECTIONS_4K" ;;
        b3) echo "$CONNECTIONS_1M" ;;
        b4) echo "$CONNECTIONS_STORE" ;;
    esac
}

# Starts KIND on the b1-b4 configuration with a fresh access log.
start_hit_server() {
    local kind=$1 prefix=$WORK/$kind from
    rm -f "$prefix/logs/access.log"
    mkdir -p "$prefix/cache"
    from=$(stat -c %s "$prefix/logs/error.log" 2>/dev/null || echo 0)
    start_server "$kind" "$prefix" "$HIT_CONF" "$PORT"
    [ "$kind" != portico ] || wait_loaders "$prefix/logs/error.log" 3 "$from"
}

# b2's caches: every key stored once through each server before any b2 run.
fill_keys() {
    local kind=$1 prefix=$WORK/$1 stored attempt result
    for attempt in 1 2; do
        start_hit_server "$kind"
        result=$(timeout 900 python3 "$BENCH_DIR/lib/fill_keys.py" "$PORT" "/keys/4k.bin?" "$KEYS" 50 "$DOCROOT/keys/4k.bin") \
            || die "$kind: filling b2's keys failed"
        stop_server "$SERVER_PID"
        mv "$prefix/logs/access.log" "$WORK/logs/fill-keys-$kind-$attempt.access.log" 2>/dev/null || true
        stored=$(count_entries "$prefix/cache/keys")
        note "$kind: b2 fill pass $attempt: $result; $stored of $KEYS keys stored"
        [ "$stored" -lt "$KEYS" ] || break
    done
    FILLED[$kind]="$stored"
}
declare -A FILLED

run_hit() {
    local kind=$1 scen=$2 rep=$3 prefix=$WORK/$1
    local path url script="" connections out=$WORK/logs/wrk-$2-$3-$1.txt family cpu0 cpu1 busy0 busy1 t0 t1
    local wrk_ticks parsed perf_pid="" syscalls=nan warm_requests=0 up0=0 up1=0 stored=0 check_path check_file
    path=$(scenario_path "$scen")
    connections=$(scenario_connections "$scen")
    url="http://127.0.0.1:$PORT$path"
    case $scen in
        b1) check_path=$path check_file=$DOCROOT/hit/1k.bin ;;
        b3) check_path=$path check_file=$DOCROOT/hit/1m.bin ;;
        b2) check_path="/keys/4k.bin?$(( (RANDOM * 32768 + RANDOM) % KEYS ))" check_file=$DOCROOT/keys/4k.bin
            script=$WORK/random-keys.lua url="http://127.0.0.1:$PORT/" ;;
        b4) check_path="/store/64k.bin?check-$rep" check_file=$DOCROOT/store/64k.bin
            script=$WORK/unique-keys.lua url="http://127.0.0.1:$PORT/"
            # Empty at the start of every run; on tmpfs unless B4_STORE=disk (see the head).
            rm -rf "$prefix/cache/store" "$STORE_TMPFS/$kind"
            if [ "$B4_STORE" = tmpfs ]; then
                mkdir -p "$STORE_TMPFS/$kind" "$prefix/cache"
                ln -s "$STORE_TMPFS/$kind" "$prefix/cache/store"
            fi ;;
    esac
    wait_quiet
    start_hit_server "$kind"
    [ "$scen" != b4 ] || up0=$(backend_requests)
    check_body "$kind" "$check_path" "$check_file"
    local pass_lines=0 pass_summary
    if [ "$scen" = b2 ]; then
        # Every key once before the warm-up, eight at a time and never two of one key at
        # once: each server's index then knows every key when the measured requests come.
        # Without it nginx, started moments ago with its loader a minute away, answered up
        # to three of a run's 100,000 first requests of a key from the origin (MISS) in some
        # runs, and such a run was not counted. The pass's lines, on disk once the log's
        # buffer is flushed (flush=1s), are not counted.
        pass_summary=$(timeout 300 python3 "$BENCH_DIR/lib/fill_keys.py" "$PORT" "/keys/4k.bin?" "$KEYS" 8 \
            "$DOCROOT/keys/4k.bin") || die "$kind: b2's pass over every key failed"
        sleep 2
        pass_lines=$(wc -l <"$prefix/logs/access.log")
        note "$kind b2 rep $rep: pass over every key: $pass_summary; $(tally "$prefix/logs/access.log" /keys/ | cut -d' ' -f5)"
    fi
    mapfile -t family < <(family_of "$SERVER_PID")
    if [ "$WARMUP" != 0 ]; then
        if [ "$COUNT_SYSCALLS" = 1 ]; then
            perf stat -x, -e raw_syscalls:sys_enter -p "$(IFS=,; echo "${family[*]}")" -o "$WORK/perf.csv" &
            perf_pid=$!
            sleep 0.2
        fi
        run_wrk "$WORK/warmup.txt" "$WARMUP" "$url" "$connections" "$script" >/dev/null || die "wrk warmup failed: $(cat "$WORK/warmup.txt")"
        if [ -n "$perf_pid" ]; then
            kill -INT "$perf_pid" 2>/dev/null || true
            wait "$perf_pid" 2>/dev/null || true
            warm_requests=$(awk '/ requests in / { print $1; exit }' "$WORK/warmup.txt")
            syscalls=$(awk -F, -v n="${warm_requests:-0}" '$3 ~ /sys_enter/ && $1 ~ /^[0-9]+$/ && n > 0 { printf "%.2f\n", $1 / n }' "$WORK/perf.csv")
            [ -n "$syscalls" ] || syscalls=nan
        fi
    fi
    cpu0=$(family_cpu_ns "${family[@]}")
    busy0=$(machine_busy_ticks)
    t0=$(date +%s.%N)
    wrk_ticks=$(run_wrk "$out" "$DURATION" "$url" "$connections" "$script") || die "wrk failed: $(cat "$out")"
    t1=$(date +%s.%N)
    busy1=$(machine_busy_ticks)
    cpu1=$(family_cpu_ns "${family[@]}")
    [ "$cpu0" != gone ] && [ "$cpu1" != gone ] || die "$kind: a server process exited during the run"
    # b4's second check asks for another new key: the first one's is a HIT by now.
    [ "$scen" != b4 ] || check_path="$check_path-after"
    check_body "$kind" "$check_path" "$check_file"
    [ "$scen" != b4 ] || up1=$(backend_requests)
    stop_server "$SERVER_PID"
    mv "$prefix/logs/access.log" "$WORK/logs/$scen-$rep-$kind.access.log" 2>/dev/null || true
    local complete=0
    if [ "$scen" = b4 ]; then
        stored=$(count_entries "$prefix/cache/store")
        # Responses a client received whole (wrk cuts the ones in flight when it stops).
        complete=$(awk '$1 == "MISS" && $2 == 200 && $3 == 65536 && index($4, "/store/") == 1 { n++ } END { print n + 0 }' \
            "$WORK/logs/$scen-$rep-$kind.access.log")
        rm -rf "$prefix/cache/store" "$STORE_TMPFS/$kind"
    fi
    local lines hits misses others summary counted=yes why=""
    read -r lines hits misses others summary < <(tally "$WORK/logs/$scen-$rep-$kind.access.log" "$path" "$pass_lines")
    case $scen in
        b1 | b3)
            # The first check of the first run stored the object (one MISS); all else HIT.
            if [ $((lines - hits)) -gt 1 ] || { [ "$rep" != 1 ] && [ "$hits" != "$lines" ]; }; then counted=no why="not all HIT"; fi ;;
        b2) [ "$hits" = "$lines" ] || { counted=no; why="not all HIT"; } ;;
        b4) [ "$misses" = "$lines" ] || { counted=no; why="not all MISS"; } ;;
    esac
    parsed=$(parse_wrk "$out") || die "could not parse wrk output: $(cat "$out")"
    # shellcheck disable=SC2086
    set -- $parsed
    local requests=$1 rps=$2 avg=$3 p99=$4 errors=$5
    [ "$errors" = 0 ] || { counted=no; why="${why:+$why, }wrk errors"; }
    awk -v OFS='\t' -v s="$scen" -v r="$rep" -v k="$kind" -v n="$requests" -v rps="$rps" \
        -v avg="$avg" -v p99="$p99" -v e="$errors" -v sns=$((cpu1 - cpu0)) -v wt="$wrk_ticks" \
        -v busy=$((busy1 - busy0)) -v hz="$CLK_TCK" -v t0="$t0" -v t1="$t1" -v c="$counted" \
        -v sc="$syscalls" -v bps="$(read_bytes "$out")" -v d="$DURATION" -v lines="$lines" -v hits="$hits" \
        -v misses="$misses" -v summary="$summary" -v stored="$stored" -v up=$((up1 - up0)) -v why="${why:--}" -v complete="$complete" 'BEGIN {
            server_s = sns / 1e9
            other = (busy / hz - server_s - wt / hz) / (t1 - t0)
            if (other < 0) other = 0
            print s, r, k, n, rps, avg, p99, e, server_s, server_s * 1e6 / n, wt / hz, other, c, sc, bps / d,
                lines, hits, misses, summary, stored, up, why, complete
        }' >>"$RUNS"
    note "$(tail -n1 "$RUNS" | awk -F'\t' '{ printf "%s rep %s %-7s %9.0f req/s  %7.1f MB/s  p99 %8.0f us  cpu %7.2f us/req  syscalls/req %s  other load %.2f  log %s%s  counted %s",
        $1, $2, $3, $5, $15 / 1e6, $7, $10, $14, $12, $19, ($1 == "b4" ? "  stored " $20 " of " $21 " upstream requests, " $23 " sent whole" : ""), $13 }')"
}

# ---- b5: coalescing ---------------------------------------------------------------------

BURSTS=$WORK/bursts.tsv
: >"$BURSTS"
# Columns: 1 scenario, 2 rep, 3 server, 4 upstream requests, 5 upstream body bytes, 6 clients,
# 7 clients ok, 8 statuses, 9 filler TTFB s, 10 filler TTLB s, 11 waiters, 12 waiters' TTFB p50,
# 13 p99, 14 max, 15 waiters' TTLB p50, 16 p99, 17 entries stored, 18 log summary
run_burst() {
    local kind=$1 scen=$2 rep=$3 prefix=$WORK/$1-lock rate s0 s1 summary path from
    case $scen in b5a) rate=$B5A_RATE ;; b5b) rate=$B5B_RATE ;; esac
    path=/slow/$rate/object-$scen-$rep
    rm -rf "$prefix/cache" "$prefix/logs/access.log"
    mkdir -p "$prefix/cache"
    from=$(stat -c %s "$prefix/logs/error.log" 2>/dev/null || echo 0)
    start_server "$kind" "$prefix" "$LOCK_CONF" "$PORT"
    [ "$kind" != portico ] || wait_loaders "$prefix/logs/error.log" 1 "$from"
    s0=$(slow_stats)
    summary=$(timeout 120 python3 "$BENCH_DIR/lib/burst_client.py" "$PORT" "$path" "$B5_CLIENTS" "$WORK/slow-body.bin" 90 \
        "$WORK/logs/burst-$scen-$rep-$kind.tsv") || die "$kind: the burst client failed"
    sleep 0.5
    s1=$(slow_stats)
    stop_server "$SERVER_PID"
    mv "$prefix/logs/access.log" "$WORK/logs/$scen-$rep-$kind.access.log" 2>/dev/null || true
    local lines hits misses others log_summary
    read -r lines hits misses others log_summary < <(tally "$WORK/logs/$scen-$rep-$kind.access.log" /slow/)
    # shellcheck disable=SC2086
    local $summary
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$scen" "$rep" "$kind" \
        $(( ${s1% *} - ${s0% *} )) $(( ${s1#* } - ${s0#* } )) "$clients" "$ok" "$statuses" "$filler_ttfb" "$filler_ttlb" \
        "$waiters" "$ttfb_p50" "$ttfb_p99" "$ttfb_max" "$ttlb_p50" "$ttlb_p99" "$(count_entries "$prefix/cache")" "$log_summary" >>"$BURSTS"
    note "$(tail -n1 "$BURSTS" | awk -F'\t' '{ printf "%s rep %s %-7s upstream %s requests, %.1f MB; %s/%s clients ok (%s); filler TTFB %.3f s TTLB %.3f s; waiters TTFB p50 %.3f p99 %.3f, TTLB p50 %.3f p99 %.3f; stored %s; log %s",
        $1, $2, $3, $4, $5 / 1e6, $7, $6, $8, $9, $10, $12, $13, $15, $16, $17, $18 }')"
}

# ---- b6: the seed's configuration under memory pressure, on a throttled disk ------------
#
# A cache server that restarts is cold: nginx's loader indexes the cache a minute after the
# start, and until then concurrent first requests for one key go to the origin (MISS), so a
# restart per run would measure nginx's cold state. Both servers therefore start once, before
# the other scenarios, each in its own cgroup v1 blkio group (the same read throttle) and
# memory group (no limit yet); their caches are filled unless a former run left them full;
# by the time b6 runs, both have indexed their caches. Each b6 run then syncs, drops the page
# cache, limits the server's memory group, and loads the server; the other server stays idle.

SEED_RUNS=$WORK/seed.tsv
: >"$SEED_RUNS"
DISK=""
declare -A SEED_PID SEED_FILLED SEED_STARTED
setup_cgroups() {
    local device major_minor kind real
    mkdir -p "$B6_DATA_DIR"
    device=$(df --output=source "$B6_DATA_DIR" | tail -1)
    major_minor=$(lsblk -no MAJ:MIN "$device" 2>/dev/null | head -1 | tr -d ' ')
    [ -n "$major_minor" ] || major_minor=$(stat -c '%d' "$B6_DATA_DIR" | awk '{ printf "%d:%d", int($1 / 256), $1 % 256 }')
    DISK="$device ($major_minor): reads limited to $((READ_BPS / 1048576)) MiB/s and $READ_IOPS IO/s"
    note "emulated disk: $DISK; the three caches are directories on it"
    for kind in nginx portico; do
        mkdir -p "$CGROUP-$kind" "$MEMCG-$kind"
        echo "$major_minor $READ_BPS" >"$CGROUP-$kind/blkio.throttle.read_bps_device"
        echo "$major_minor $READ_IOPS" >"$CGROUP-$kind/blkio.throttle.read_iops_device"
        echo 0 >"$MEMCG-$kind/memory.swappiness" 2>/dev/null || true
        echo -1 >"$MEMCG-$kind/memory.limit_in_bytes"
        if [ "$kind" = nginx ]; then real=$NGINX_BIN_REAL; else real=$PORTICO_BIN_REAL; fi
        # The wrapper joins both groups first, so every thread and child the server makes is in them.
        cat >"$WORK/$kind-in-cgroup" <<EOF
#!/bin/sh
echo \$\$ > $CGROUP-$kind/cgroup.procs || exit 1
echo \$\$ > $MEMCG-$kind/cgroup.procs || exit 1
exec $real "\$@"
EOF
        chmod +x "$WORK/$kind-in-cgroup"
    done
}

seed_prefix() { echo "$B6_DATA_DIR/$1"; }

# Starts KIND on the seed configuration in its cgroups, and fills its caches when they are not
# full: the B6_OBJECTS random keys and the hot key, each asked once through the server.
seed_start_and_fill() {
    local kind=$1 prefix port stored result
    prefix=$(seed_prefix "$kind")
    port=$(seed_port "$kind")
    mkdir -p "$prefix/logs" "$prefix/disk1" "$prefix/disk2" "$prefix/disk3"
    chown "$B6_USER" "$prefix/disk1" "$prefix/disk2" "$prefix/disk3"
    rm -f "$prefix/logs/access.log" "$prefix/logs/error.log"
    if [ "$kind" = nginx ]; then NGINX_BIN=$WORK/nginx-in-cgroup; else PORTICO_BIN=$WORK/portico-in-cgroup; fi
    start_server "$kind" "$prefix" "$WORK/conf/seed-$kind.conf" "$port"
    NGINX_BIN=$NGINX_BIN_REAL PORTICO_BIN=$PORTICO_BIN_REAL
    SEED_PID[$kind]=$SERVER_PID
    SEED_STARTED[$kind]=$SECONDS
    stored=$(count_entries "$prefix/disk1" "$prefix/disk2" "$prefix/disk3")
    if [ "$stored" -ge $((B6_OBJECTS + 1)) ]; then
        note "$kind: b6's $stored entries were kept in $prefix from an earlier run"
        SEED_FILLED[$kind]="$stored, kept from an earlier run"
        return
    fi
    result=$(timeout 1200 python3 "$BENCH_DIR/lib/fill_keys.py" "$port" "/b6/obj.bin?" "$B6_OBJECTS" 8 "$DOCROOT/b6/obj.bin" "/b6/obj.bin?hot") \
        || die "$kind: filling b6's caches failed"
    sync
    stored=$(count_entries "$prefix/disk1" "$prefix/disk2" "$prefix/disk3")
    note "$kind: b6 fill: $result; $stored of $((B6_OBJECTS + 1)) entries stored"
    SEED_FILLED[$kind]="$stored, filled by this run"
}
seed_port() { if [ "$1" = nginx ]; then echo "$SEED_PORT_nginx"; else echo "$SEED_PORT_portico"; fi; }

# Waits, at most until 200 s after the server's start, for its three loaders' notices.
seed_wait_loaders() {
    local kind=$1 log n
    log=$(seed_prefix "$kind")/logs/error.log
    while :; do
        n=$(grep -c 'http file cache: ' "$log" 2>/dev/null || true)
        [ "${n:-0}" -lt 3 ] || return 0
        if [ $((SECONDS - SEED_STARTED[$kind])) -ge 200 ]; then
            note "$kind: ${n:-0} of 3 cache loaders done 200 s after the start; running b6 anyway"
            return 0
        fi
        sleep 1
    done
}

write_random_keys_lua "$WORK/seed-random.lua" "$B6_OBJECTS" "/b6/obj.bin?"

cat >"$WORK/hot-latency.lua" <<'LUA'
-- b6's hot key: after the run, wrk's latency (us) at every 0.01 percentile from 90 to 100,
-- so that the report can rank the requests wrk never completed above the others.
function done(summary, latency, requests)
    for i = 9000, 10000 do
        io.write(string.format("percentile %.2f %d\n", i / 100, latency:percentile(i / 100)))
    end
end
LUA

# The hot key's p99 (us) counting the requests wrk never completed (still waiting when it
# stopped): ranked above every completed one, each lasting at least from its start (by the
# access log: $msec - $request_time) to wrk's end. Their number is the log's hot lines,
# less the check fetch before the run, less wrk's completed requests; they are the log's
# last-ending hot lines. Otherwise wrk's own percentile, at the rank among its requests.
#   full_p99 WRK_REPORT ACCESS_LOG COMPLETED WRK_END
full_p99() {
    local report=$1 log=$2 completed=$3 wrk_end=$4
    awk 'index($4, "?hot") > 0 && $5 != "" { printf "%s %.3f\n", $6, $6 - $5 }' "$log" | sort -n |
        awk -v n="$completed" -v end="$wrk_end" -v report="$report" '
            { line[NR] = $2 }
            END {
                while ((getline row < report) > 0) {
                    split(row, f, " ")
                    if (f[1] == "percentile") v[f[2]] = f[3]
                }
                stuck = NR - 1 - n
                if (stuck < 0) stuck = 0
                total = n + stuck
                if (total == 0) { print "nan"; exit }
                rank = int(total * 0.99 + 0.999999)
                if (rank > n) {
                    # Among the stuck: their waits until wrk stopped, shortest first.
                    k = 0
                    for (i = NR - stuck + 1; i <= NR; i++) { w = end - line[i]; if (w < 0) w = 0; waits[++k] = w }
                    for (i = 2; i <= k; i++) { x = waits[i]; for (j = i - 1; j >= 1 && waits[j] > x; j--) waits[j + 1] = waits[j]; waits[j + 1] = x }
                    printf "%.0f\n", waits[rank - n] * 1e6
                    exit
                }
                q = int(10000 * rank / n + 0.999999) / 100
                if (q > 100) q = 100
                printf "%d\n", v[sprintf("%.2f", q)]
            }'
}

# Portico's loop stalls of 100 ms or more in a piece of its error log: the sum of the counts
# its stall warnings give ("(N stalls of 100 ms or more since the last report)"); "-" for nginx.
stalls_100() {
    [ "$1" = portico ] || { echo -; return; }
    awk '/worker loop stalled for / { if (match($0, /\([0-9]+ stalls? of 100 ms/)) { v = substr($0, RSTART + 1); n += v + 0 } else n++ }
        END { print n + 0 }' "$2"
}
# Portico's stall counts over its workers, "N10 N100 N1000", from the notice each worker writes
# when it exits (as bench/threadpool.sh reads them); "- - -" for nginx.
stall_counts() {
    local kind=$1 log=$2
    if [ "$kind" != portico ]; then
        echo "- - -"
        return
    fi
    awk '/worker loop stalls: / {
            sub(/.*worker loop stalls: /, "")
            a += $1; b += $7; c += $13; n++
        }
        END { if (n) printf "%d %d %d\n", a, b, c; else print "? ? ?" }' "$log"
}

# Columns: 1 rep, 2 server, 3 hot req/s, 4 hot avg us, 5 hot p99 us, 6 hot errors, 7 total B/s,
# 8 random requests, 9 hot requests, 10 stalls >= 100 ms (warnings during the run), 11 log lines,
# 12 HIT, 13 log summary, 14 random errors, 15 memory group's peak usage (bytes), 16 major
# page faults in the memory group during the run (pgmajfault: pages, the binary's included,
# read back from the throttled disk after the group's reclaim dropped them), 17 hot p99 us by
# the access log, 18 hot p99 us by wrk counting the requests it never completed (the verdict's)
run_seed() {
    local kind=$1 rep=$2 prefix port hot_out=$WORK/logs/b6-hot-$2-$1.txt random_out=$WORK/logs/b6-random-$2-$1.txt parsed
    local access_at error_at
    prefix=$(seed_prefix "$kind")
    port=$(seed_port "$kind")
    alive "${SEED_PID[$kind]}" || die "$kind (b6) exited; see $prefix/logs/error.log"
    sync
    echo 3 >/proc/sys/vm/drop_caches
    echo "$MEMORY_LIMIT" >"$MEMCG-$kind/memory.limit_in_bytes" || die "could not limit $kind's memory group to $MEMORY_LIMIT"
    echo 0 >"$MEMCG-$kind/memory.max_usage_in_bytes" 2>/dev/null || true
    local faults0 faults1
    faults0=$(awk '$1 == "pgmajfault" { print $2; exit }' "$MEMCG-$kind/memory.stat" 2>/dev/null || echo 0)
    sleep 1.5   # the access log's flush=1s: earlier lines are written by now
    access_at=$(stat -c %s "$prefix/logs/access.log" 2>/dev/null || echo 0)
    error_at=$(stat -c %s "$prefix/logs/error.log" 2>/dev/null || echo 0)
    # The hot key read once through the server: its pages are charged to the server's group.
    PORT=$port check_body "$kind" "/b6/obj.bin?hot" "$DOCROOT/b6/obj.bin"
    timeout $((B6_DURATION + 30)) wrk -t2 -c"$B6_RANDOM_CONNECTIONS" -d"${B6_DURATION}s" --timeout 60s \
        -s "$WORK/seed-random.lua" "http://127.0.0.1:$port/" >"$random_out" 2>&1 &
    RANDOM_PID=$!
    timeout $((B6_DURATION + 30)) wrk -t"$B6_HOT_THREADS" -c"$B6_HOT_CONNECTIONS" -d"${B6_DURATION}s" --timeout 60s --latency \
        -s "$WORK/hot-latency.lua" "http://127.0.0.1:$port/b6/obj.bin?hot" >"$hot_out" 2>&1 &
    HOT_PID=$!
    wait "$HOT_PID" || die "hot wrk failed: $(cat "$hot_out")"
    local wrk_end
    wrk_end=$(date +%s.%N)
    wait "$RANDOM_PID" || die "random wrk failed: $(cat "$random_out")"
    HOT_PID="" RANDOM_PID=""
    PORT=$port check_body "$kind" "/b6/obj.bin?$((RANDOM % B6_OBJECTS))" "$DOCROOT/b6/obj.bin"
    local peak
    peak=$(cat "$MEMCG-$kind/memory.max_usage_in_bytes" 2>/dev/null || echo 0)
    faults1=$(awk '$1 == "pgmajfault" { print $2; exit }' "$MEMCG-$kind/memory.stat" 2>/dev/null || echo 0)
    echo -1 >"$MEMCG-$kind/memory.limit_in_bytes"
    sleep 1.5
    tail -c +$((access_at + 1)) "$prefix/logs/access.log" >"$WORK/logs/b6-$rep-$kind.access.log"
    tail -c +$((error_at + 1)) "$prefix/logs/error.log" >"$WORK/logs/b6-$rep-$kind.error.log"
    local lines hits misses others summary
    read -r lines hits misses others summary < <(tally "$WORK/logs/b6-$rep-$kind.access.log" /b6/)
    parsed=$(parse_wrk "$hot_out") || die "could not parse: $(cat "$hot_out")"
    # shellcheck disable=SC2086
    set -- $parsed
    # No hot request completed: wrk prints latencies of 0, which are no latencies.
    [ "$1" != 0 ] || set -- 0 0 nan nan "$5"
    local random_requests random_errors
    random_requests=$(awk '/ requests in / { print $1; exit }' "$random_out")
    random_errors=$(awk '/Socket errors:/ { gsub(/,/, ""); n += $4 + $6 + $8 + $10 } /Non-2xx or 3xx responses:/ { n += $5 } END { print n + 0 }' "$random_out")
    # The hot key's p99 by the access log ($request_time, in µs as wrk's): it counts the
    # requests still running when wrk stopped, but not the time before the server read a
    # request nor the client's reading after the last byte was in the socket.
    local log_p99 counted_p99
    counted_p99=$(full_p99 "$hot_out" "$WORK/logs/b6-$rep-$kind.access.log" "$1" "$wrk_end")
    log_p99=$(awk 'index($4, "?hot") > 0 && $5 != "" { print $5 * 1e6 }' "$WORK/logs/b6-$rep-$kind.access.log" |
        sort -n | awk '{ v[NR] = $1 } END { if (NR == 0) { print "nan"; exit } i = int(NR * 0.99 + 0.999999); if (i < 1) i = 1; if (i > NR) i = NR; printf "%.0f\n", v[i] }')
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$rep" "$kind" "$2" "$3" "$4" "$5" \
        "$(awk -v h="$(read_bytes "$hot_out")" -v r="$(read_bytes "$random_out")" -v d="$B6_DURATION" 'BEGIN { printf "%.0f", (h + r) / d }')" \
        "$random_requests" "$1" "$(stalls_100 "$kind" "$WORK/logs/b6-$rep-$kind.error.log")" "$lines" "$hits" "$summary" "$random_errors" "$peak" \
        "$(( ${faults1:-0} - ${faults0:-0} ))" "$log_p99" "$counted_p99" >>"$SEED_RUNS"
    note "$(tail -n1 "$SEED_RUNS" | awk -F'\t' '{ printf "b6 rep %s %-7s hot %.1f req/s, avg %.1f ms, p99 %.1f ms (counting the uncompleted %.1f ms, access log %.1f ms), errors %s; random %s requests (errors %s); total %.1f MB/s; stalls >= 100 ms %s; memory peak %.0f MiB; major faults %s; log %s",
        $1, $2, $3, $4 / 1000, $5 / 1000, $18 / 1000, $17 / 1000, $6, $8, $14, $7 / 1e6, $10, $15 / 1048576, $16, $13 }')"
}

# After the last b6 run: stops both servers and keeps their whole error logs.
SEED_STALLS="- - -"
seed_stop() {
    local kind
    for kind in nginx portico; do
        [ -n "${SEED_PID[$kind]:-}" ] || continue
        stop_server "${SEED_PID[$kind]}"
        cp "$(seed_prefix "$kind")/logs/error.log" "$WORK/logs/b6-$kind.error.log" 2>/dev/null || true
    done
    SEED_STALLS=$(stall_counts portico "$WORK/logs/b6-portico.error.log")
}

# ---- The runs ----------------------------------------------------------------------------

LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)
BUSY_BEFORE=$(busy_sample 2)
STARTED_AT=$(date -u '+%Y-%m-%d %H:%M UTC')
SCENARIO_TIMES=""
if has b6; then
    setup_start=$SECONDS
    setup_cgroups
    for kind in nginx portico; do seed_start_and_fill "$kind"; done
    SCENARIO_TIMES="b6 start and fill $((SECONDS - setup_start)) s"
fi

for scen in $SCENARIOS; do
    scenario_start=$SECONDS
    case $scen in
        b1 | b2 | b3 | b4)
            if [ "$scen" = b2 ]; then
                for kind in nginx portico; do fill_keys "$kind"; done
            fi
            for rep in $(seq 1 "$REPS"); do
                for kind in nginx portico; do
                    attempt=0
                    while :; do
                        run_hit "$kind" "$scen" "$rep"
                        noisy=$(tail -n1 "$RUNS" | awk -F'\t' -v max="$QUIET_CORES" '{ print ($12 > max) ? 1 : 0 }')
                        [ "$noisy" = 1 ] && [ "$attempt" -lt "$RETRY_NOISY" ] || break
                        awk -F'\t' -v OFS='\t' -v last="$(wc -l <"$RUNS")" 'NR == last { $13 = "no"; $22 = "noisy, repeated" } { print }' "$RUNS" >"$RUNS.new"
                        mv "$RUNS.new" "$RUNS"
                        attempt=$((attempt + 1))
                        note "other load above $QUIET_CORES cores: run kept out of the medians, repeating ($attempt/$RETRY_NOISY)"
                    done
                done
            done ;;
        b5a | b5b)
            for rep in $(seq 1 "$B5_REPS"); do
                for kind in nginx portico; do run_burst "$kind" "$scen" "$rep"; done
            done ;;
        b6)
            for kind in nginx portico; do seed_wait_loaders "$kind"; done
            for rep in $(seq 1 "$B6_REPS"); do
                for kind in nginx portico; do run_seed "$kind" "$rep"; done
            done
            seed_stop ;;
    esac
    SCENARIO_TIMES="$SCENARIO_TIMES${SCENARIO_TIMES:+, }$scen $((SECONDS - scenario_start)) s"
done

LOAD_AFTER=$(cut -d' ' -f1-3 /proc/loadavg)
BUSY_AFTER=$(busy_sample 2)

# Error-log lines of the servers at warn or worse, by server (count, most frequent first).
LOG_LINES_FILE=$WORK/log-lines.txt
: >"$LOG_LINES_FILE"
for kind in nginx portico; do
    cat "$WORK/$kind/logs/error.log" "$WORK/$kind-lock/logs/error.log" "$WORK/logs/b6-$kind.error.log" 2>/dev/null \
        | grep -E '\[(warn|error|crit|alert|emerg)\]' \
        | sed -E 's/^[0-9\/]+ [0-9:]+ //; s/[0-9]+#[0-9]+: (\*[0-9]+ )?//; s/, client: .*//' \
        | sort | uniq -c | sort -rn | head -n 6 | sed "s/^ */$kind: /" >>"$LOG_LINES_FILE" || true
done

# ---- Report -------------------------------------------------------------------------------

section=$WORK/section.md
nginx_version=$("$NGINX_BIN_REAL" -v 2>&1 | sed 's/^nginx version: //')
wrk_version=$( (wrk -v 2>&1 || true) | awk 'NR == 1 { print $2 }')
cpu_model=$(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo)

col() { awk -F'\t' -v s="$1" -v k="$2" -v c="$3" '$1 == s && $3 == k && $13 == "yes" && $c != "nan" { print $c }' "$RUNS"; }
# shellcheck disable=SC2046
med() { median $(col "$1" "$2" "$3"); }
# Median over the repetitions of Portico's value / nginx's value in the same repetition.
# shellcheck disable=SC2046
pair_ratio() {
    median $(awk -F'\t' -v s="$1" -v c="$2" '$1 == s && $13 == "yes" { v[$2, $3] = $c; reps[$2] = 1 }
        END { for (r in reps) if ((r, "nginx") in v && (r, "portico") in v && v[r, "nginx"] > 0) print v[r, "portico"] / v[r, "nginx"] }' "$RUNS")
}
# A / B to two decimals; "inf" when B is 0 and A is not; "n/a" when either is missing.
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "nan" || b == "nan" || a == "" || b == "" || a + 0 >= 1e17 || b + 0 >= 1e17) print "n/a"; else if (b > 0) printf "%.2f", a / b; else if (a > 0) print "inf"; else print "n/a" }'; }
verdict() { awk -v r="$1" -v t="$2" -v dir="$3" 'BEGIN { if (r == "n/a") print "n/a"; else if (r == "inf") print (dir == "ge" ? "PASS" : "FAIL"); else if ((dir == "ge" && r + 0 >= t) || (dir == "le" && r + 0 <= t)) print "PASS"; else print "FAIL" }'; }
describe() {
    case $1 in
        b1) echo "b1: HIT, 1 KiB, \`-c$CONNECTIONS_1K\`" ;;
        b2) echo "b2: HIT, $KEYS keys of 4 KiB at random, \`-c$CONNECTIONS_4K\`" ;;
        b3) echo "b3: HIT, 1 MiB, \`-c$CONNECTIONS_1M\`" ;;
        b4) echo "b4: MISS+store, 64 KiB, \`-c$CONNECTIONS_STORE\`" ;;
    esac
}
bcol() { awk -F'\t' -v s="$1" -v k="$2" -v c="$3" '$1 == s && $3 == k && $c != "nan" { print $c }' "$BURSTS"; }
# shellcheck disable=SC2046
bmed() { median $(bcol "$1" "$2" "$3"); }
bmax() { bcol "$1" "$2" "$3" | sort -g | tail -1; }
bmin() { bcol "$1" "$2" "$3" | sort -g | head -1; }
# A run in which no hot request completed has no latency: for the medians it counts as longer
# than any (1e18), and a median that lands on it is shown as such.
scol() { awk -F'\t' -v k="$1" -v c="$2" '$2 == k && $c != "-" { print ($c == "nan" ? 1e18 : $c) }' "$SEED_RUNS"; }
# shellcheck disable=SC2046
smed() { median $(scol "$1" "$2"); }
ssum() { awk -F'\t' -v k="$1" -v c="$2" '$2 == k { if ($c == "-") dash = 1; else t += $c } END { if (dash) print "-"; else print t + 0 }' "$SEED_RUNS"; }

HIT_SCENARIOS=""
for scen in b1 b2 b3 b4; do has "$scen" && HIT_SCENARIOS="$HIT_SCENARIOS $scen"; done
{
    echo "<!-- BEGIN $SECTION -->"
    echo "## cache: the proxy cache (issue 12, spec cache.md section 7)"
    echo
    echo "Generated by \`$COMMAND_LINE\`, started $STARTED_AT; time per scenario: $SCENARIO_TIMES."
    echo
    echo "- Machine: $(nproc) CPUs ($cpu_model), kernel $(uname -r), $(. /etc/os-release && echo "$PRETTY_NAME")"
    echo "- nginx: $nginx_version ($NGINX_BIN_REAL); wrk $wrk_version; Portico: commit $commit, release build ($PORTICO_BIN_REAL)"
    echo "- Origins: nginx serving files of random bytes with \`expires 1d\` (b1-b4, b6; keys differ by query string, bodies do not); for b5 \`bench/lib/slow_origin.py\`"
    echo "- Every configuration file is read by both servers, each with its own \`-p\` prefix and so its own cache directories (relative \`proxy_cache_path\`s); both log \`\$upstream_cache_status \$status \$body_bytes_sent \$request_uri\` (buffer=64k flush=1s), and a run counts only when those lines say what the scenario expects"
    echo "- Other load: load average $LOAD_BEFORE before, $LOAD_AFTER after; 2 s samples (cores): before: $BUSY_BEFORE; after: $BUSY_AFTER"
    if [ -n "$HIT_SCENARIOS" ]; then
        echo
        echo "### b1-b4: HIT and MISS+store"
        echo
        echo "Config: \`worker_processes $WORKER_PROCESSES; sendfile on; proxy_http_version 1.1; proxy_set_header Connection \"\"; upstream backend { server ...; keepalive 32; }\`,"
        echo "\`proxy_cache_path cache/{hit,keys,store} levels=1:2 keys_zone=...:{10m,64m,64m} inactive=1d use_temp_path=off;\`, one location per zone."
        echo "Each run starts the server, checks the body of one response (\`/hit/1k.bin\`, \`/hit/1m.bin\`, a random b2 key, a new b4 key),"
        echo "runs \`wrk -t$WRK_THREADS -cN --latency\` for ${WARMUP} s (warm-up) and ${DURATION} s (measured), checks again and stops it (nginx's cache loader, a minute after"
        echo "its start, never runs during a run; Portico's loaders finish, from the index snapshot of the last stop, before the warm-up). Before b2's warm-up each"
        echo "server is asked for every key once, eight connections at a time (\`lib/fill_keys.py\`, bodies checked; not counted), so that its index knows"
        echo "every key when the measured requests come (nginx, started moments before, otherwise answered up to three of a run's first requests of a key"
        echo "from the origin in some runs, and a run with a MISS is not counted). b2's keys were stored"
        echo "by each server first (entries on disk: nginx ${FILLED[nginx]:-n/a}, Portico ${FILLED[portico]:-n/a} of $KEYS). b4 starts each run with an empty cache,"
        if [ "$B4_STORE" = tmpfs ]; then
            echo 'on tmpfs (`B4_STORE=tmpfs`: deleting the entries of a run from this ext4, mounted with `discard`, takes about 1 ms each once written back).'
        else
            echo 'on the prefix'"'"'s file system (`B4_STORE=disk`).'
        fi
        echo "CPU/request: schedstat over every thread of the server's processes during the measured run, per request wrk completed."
        if [ "$COUNT_SYSCALLS" = 1 ]; then
            echo "Syscalls/request: \`perf stat -e raw_syscalls:sys_enter\` on the server's processes during the warm-up only (not the measured run), per warm-up request."
        fi
        echo "$REPS repetitions, nginx then Portico in each; \"per pair\" is the median of Portico's run over the nginx run just before it."
        echo
        echo "| scenario | server | req/s | MB/s | p99 (ms) | CPU/request (µs) | syscalls/request | entries stored / origin requests / MISS sent whole |"
        echo "|---|---|---:|---:|---:|---:|---:|---:|"
        for scen in $HIT_SCENARIOS; do
            for kind in nginx portico; do
                awk -v f="$(describe "$scen")" -v k="$kind" -v rps="$(med "$scen" "$kind" 5)" -v bps="$(med "$scen" "$kind" 15)" \
                    -v p99="$(med "$scen" "$kind" 7)" -v cpu="$(med "$scen" "$kind" 10)" -v sc="$(med "$scen" "$kind" 14)" \
                    -v st="$(med "$scen" "$kind" 20)" -v up="$(med "$scen" "$kind" 21)" -v wh="$(med "$scen" "$kind" 23)" -v b4="$([ "$scen" = b4 ] && echo 1 || echo 0)" 'BEGIN {
                    printf "| %s | %s | %.0f | %.1f | %.3f | %.2f | %s | %s |\n", f, k, rps, bps / 1e6, p99 / 1000, cpu,
                        (sc == "nan" ? "-" : sprintf("%.2f", sc)), (b4 ? sprintf("%.0f / %.0f / %.0f (medians)", st, up, wh) : "-") }'
            done
        done
        echo
        echo "Ratios Portico/nginx (of the medians; per pair in brackets) and the targets of spec section 7. b4's \"all stored\": in every counted"
        echo "Portico run, the entry files are at least the MISS responses sent whole (wrk cuts the responses in flight when it stops; those may or may not be stored)."
        echo
        echo "| scenario | req/s | bytes/s | p99 | CPU/request | target | verdict |"
        echo "|---|---:|---:|---:|---:|---|---|"
        for scen in $HIT_SCENARIOS; do
            r=$(ratio "$(med "$scen" portico 5)" "$(med "$scen" nginx 5)")
            b=$(ratio "$(med "$scen" portico 15)" "$(med "$scen" nginx 15)")
            p=$(ratio "$(med "$scen" portico 7)" "$(med "$scen" nginx 7)")
            c=$(ratio "$(med "$scen" portico 10)" "$(med "$scen" nginx 10)")
            rp=$(pair_ratio "$scen" 5 | awk '{ printf "%.2f", $1 }')
            cp=$(pair_ratio "$scen" 10 | awk '{ printf "%.2f", $1 }')
            case $scen in
                b1) target="req/s ≥ 1.2, CPU ≤ 0.85"; v="$(verdict "$r" 1.2 ge) / $(verdict "$c" 0.85 le)" ;;
                b2) target="req/s ≥ 1.2"; v=$(verdict "$r" 1.2 ge) ;;
                b3) target="bytes/s ≥ 1.0, CPU ≤ 0.9"; v="$(verdict "$b" 1.0 ge) / $(verdict "$c" 0.9 le)" ;;
                b4) target="req/s ≥ 1.0, all stored"
                    # "All stored": in every counted run, at least every response sent whole became an entry.
                    all_stored=$(awk -F'\t' '$1 == "b4" && $3 == "portico" && $13 == "yes" && $20 < $23 { bad = 1 } END { print bad ? "not all stored" : "all stored" }' "$RUNS")
                    v="$(verdict "$r" 1.0 ge) / $all_stored" ;;
            esac
            echo "| $(describe "$scen") | $r ($rp) | $b | $p | $c ($cp) | $target | $v |"
        done
        echo
        echo "Every run (\"log\": the access-log lines of the scenario's URIs by \`\$upstream_cache_status\`, checks and warm-up included, b2's pass over every key not):"
        echo
        echo "| scenario | rep | server | requests | req/s | MB/s | avg (ms) | p99 (ms) | errors | CPU/request (µs) | syscalls/request | wrk CPU (s) | other load (cores) | log | stored / origin requests / sent whole | counted |"
        echo "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---|---|"
        awk -F'\t' '{ printf "| %s | %s | %s | %d | %.0f | %.1f | %.3f | %.3f | %d | %.2f | %s | %.2f | %.2f | %s | %s | %s |\n",
            $1, $2, $3, $4, $5, $15 / 1e6, $6 / 1000, $7 / 1000, $8, $10, ($14 == "nan" ? "-" : $14), $11, $12, $19,
            ($1 == "b4" ? $20 " / " $21 " / " $23 : "-"), ($13 == "yes" ? "yes" : "no (" $22 ")") }' "$RUNS"
    fi
    if has b5a || has b5b; then
        echo
        echo "### b5: coalescing, \`proxy_cache_lock on\` (defaults otherwise: \`proxy_cache_lock_timeout 5s\`, \`proxy_cache_lock_age 5s\`)"
        echo
        echo "$B5_CLIENTS clients (\`bench/lib/burst_client.py\`) open their connections, then all send \`GET\` for one new key at once; the origin waits ${B5_DELAY} s,"
        echo "then sends $((B5_BYTES / 1048576)) MiB with Content-Length, paced (b5a: $B5A_RATE B/s, b5b: $B5B_RATE B/s). Times are from the moment the"
        echo "requests were sent; the filler is the client whose response said \`X-Cache-Status: MISS\` (the earliest first byte if several did), the waiters all the others. Every body is compared with"
        echo "the origin's (SHA-256). $B5_REPS repetitions, each with an empty cache; medians over them (the largest upstream count in brackets)."
        echo
        echo "| scenario | server | upstream requests | MB from origin | clients with the right body | filler TTFB (s) | waiters' TTFB p50 (s) | p99 (s) | waiters' TTFB p50 − filler's (ms) | waiters' TTLB p50 (s) | p99 (s) | entries stored |"
        echo "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
        for scen in b5a b5b; do
            has "$scen" || continue
            for kind in nginx portico; do
                awk -v s="$scen" -v k="$kind" -v up="$(bmed "$scen" "$kind" 4)" -v upmax="$(bmax "$scen" "$kind" 4)" -v mb="$(bmed "$scen" "$kind" 5)" \
                    -v ok="$(bmin "$scen" "$kind" 7)" -v n="$B5_CLIENTS" -v f="$(bmed "$scen" "$kind" 9)" -v t50="$(bmed "$scen" "$kind" 12)" \
                    -v t99="$(bmed "$scen" "$kind" 13)" -v l50="$(bmed "$scen" "$kind" 15)" -v l99="$(bmed "$scen" "$kind" 16)" \
                    -v st="$(bmed "$scen" "$kind" 17)" 'BEGIN {
                    printf "| %s | %s | %g (%g) | %.1f | ≥ %d of %d | %.3f | %.3f | %.3f | %.0f | %.3f | %.3f | %g |\n",
                        s, k, up, upmax, mb / 1e6, ok, n, f, t50, t99, (t50 - f) * 1000, l50, l99, st }'
            done
        done
        echo
        echo "Targets (spec section 7): one upstream request for both; Portico's waiters' TTFB p50 within 50 ms of the filler's (b5a);"
        echo "b5b: Portico one upstream request and $((B5_BYTES / 1048576)) MiB fetched. nginx's numbers are reported, not judged."
        echo
        echo "| scenario | rep | server | upstream requests | MB from origin | clients ok | responses (status:X-Cache-Status=count) | filler TTFB | filler TTLB | waiters' TTFB p50 / p99 / max | TTLB p50 / p99 | stored | log |"
        echo "|---|---|---|---:|---:|---:|---|---:|---:|---|---|---:|---|"
        awk -F'\t' '{ printf "| %s | %s | %s | %s | %.1f | %s/%s | %s | %.3f | %.3f | %.3f / %.3f / %.3f | %.3f / %.3f | %s | %s |\n",
            $1, $2, $3, $4, $5 / 1e6, $7, $6, $8, $9, $10, $12, $13, $14, $15, $16, $17, $18 }' "$BURSTS"
    fi
    if has b6; then
        echo
        echo "### b6: the seed's three-cache configuration, under memory pressure, on a throttled disk"
        echo
        echo "The seed's \`thread_pool pool_{1,2,3} threads=16\`, three \`proxy_cache_path diskN levels=1:2 keys_zone=cache_N:256m max_size=1024G use_temp_path=off\`,"
        echo "\`split_clients \$request_uri \$disk { 33.3% 1; 33.3% 2; * 3; }\` and \`location / { proxy_pass http://backend; proxy_cache_key \$request_uri;"
        echo "proxy_cache cache_\$disk; aio threads=pool_\$disk; sendfile on; }\`, plus \`inactive=1d\` on each path, \`user $B6_USER; worker_processes $B6_WORKERS;\`,"
        echo "events, the upstream and a listen port (the two servers' files differ in the port only: both run at once)."
        echo "**The three caches are three directories on one device, not three disks**: $DISK, one cgroup v1 blkio group per server"
        echo "(as in \`bench/threadpool.sh\`), so per-disk isolation is not shown. Memory: during each run the server's cgroup v1 memory group is limited to"
        echo "$((MEMORY_LIMIT / 1048576)) MiB, page cache included, against $B6_OBJECTS objects of 4 MiB ($((B6_OBJECTS * 4)) MiB) plus the hot key, stored through each server"
        echo "(entries: nginx ${SEED_FILLED[nginx]:-n/a}; Portico ${SEED_FILLED[portico]:-n/a}) in \`$B6_DATA_DIR\`."
        echo "Both servers start once, before the other scenarios, and have indexed their caches before b6 (a restart per run would measure nginx cold: its"
        echo "loader starts a minute after the start, and until then concurrent first requests for a key go to the origin). Each run: sync, drop the page cache,"
        echo "limit the server's memory group, fetch the hot key once (body checked), then \`wrk -t2 -c$B6_RANDOM_CONNECTIONS\` on random keys and"
        echo "\`wrk -t$B6_HOT_THREADS -c$B6_HOT_CONNECTIONS --latency\` on the hot key, together, for $B6_DURATION s (\`--timeout 60s\`), then a random key's body checked."
        echo "$B6_REPS repetitions, nginx then Portico in each; medians. Stalls ≥ 100 ms: Portico's stall warnings during the runs, summed;"
        echo "its exit notice over the server's whole life (fill, idle time, runs) counted $(echo "$SEED_STALLS" | awk '{ printf "%s of 10 ms or more, %s of 100 ms or more, %s of 1 s or more", $1, $2, $3 }')."
        echo
        echo "Hot p99: wrk's counting the requests it never completed (the verdict's: ranked above the completed ones, each lasting from its"
        echo "start in the access log to wrk's end); wrk's own (completed requests only); the access log's (\$request_time: from the request's"
        echo "first byte read to its last byte in the socket, still-waiting requests included)."
        echo
        echo "| server | hot req/s | hot avg (ms) | hot p99, counting the uncompleted (ms) | hot p99, wrk (ms) | hot p99, access log (ms) | total MB/s | random requests | stalls ≥ 100 ms (all runs) |"
        echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|"
        for kind in nginx portico; do
            awk -v k="$kind" -v rps="$(smed "$kind" 3)" -v avg="$(smed "$kind" 4)" -v p99="$(smed "$kind" 5)" -v b="$(smed "$kind" 7)" \
                -v rr="$(smed "$kind" 8)" -v s2="$(ssum "$kind" 10)" -v lp="$(smed "$kind" 17)" -v fp="$(smed "$kind" 18)" 'BEGIN {
                printf "| %s | %.1f | %s | %s | %s | %s | %.1f | %.0f | %s |\n", k, rps, (avg + 0 >= 1e17 ? "none completed" : sprintf("%.1f", avg / 1000)),
                    (fp + 0 >= 1e17 ? "-" : sprintf("%.1f", fp / 1000)),
                    (p99 + 0 >= 1e17 ? "none completed" : sprintf("%.1f", p99 / 1000)), (lp + 0 >= 1e17 ? "-" : sprintf("%.1f", lp / 1000)), b / 1e6, rr, s2 }'
        done
        echo
        r=$(ratio "$(smed portico 3)" "$(smed nginx 3)")
        p=$(ratio "$(smed portico 5)" "$(smed nginx 5)")
        pl=$(ratio "$(smed portico 17)" "$(smed nginx 17)")
        pf=$(ratio "$(smed portico 18)" "$(smed nginx 18)")
        b=$(ratio "$(smed portico 7)" "$(smed nginx 7)")
        echo "Portico/nginx: hot req/s $r (target ≥ 1.5: $(verdict "$r" 1.5 ge)), hot p99 counting the uncompleted $pf (≤ 0.5: $(verdict "$pf" 0.5 le); wrk's own $p, the access log's $pl),"
        echo "total bytes/s $b (≥ 1.0: $(verdict "$b" 1.0 ge)); Portico's loop stalls of 100 ms or more during the runs: $(ssum portico 10) (target 0)."
        echo
        echo "| rep | server | hot req/s | hot avg (ms) | hot p99, counting the uncompleted (ms) | hot p99, wrk (ms) | hot p99, access log (ms) | hot errors | total MB/s | random requests | random errors | stalls ≥ 100 ms | memory peak (MiB) | major page faults | log |"
        echo "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"
        awk -F'\t' '{ printf "| %s | %s | %.1f | %s | %s | %s | %s | %s | %.1f | %s | %s | %s | %.0f | %s | %s |\n",
            $1, $2, $3, ($4 == "nan" ? "-" : sprintf("%.1f", $4 / 1000)), ($18 == "nan" ? "-" : sprintf("%.1f", $18 / 1000)),
            ($5 == "nan" ? "-" : sprintf("%.1f", $5 / 1000)),
            ($17 == "nan" ? "-" : sprintf("%.1f", $17 / 1000)), $6, $7 / 1e6, $8, $14, $10, $15 / 1048576, $16, $13 }' "$SEED_RUNS"
        echo
        echo "Major page faults: \`pgmajfault\` of the server's memory group over the run, pages read back from the disk on"
        echo "access (the binary's and libraries' code included) after the group's reclaim dropped them; a worker thread"
        echo "that takes one waits for the throttled disk without making any file call."
    fi
    if [ -s "$LOG_LINES_FILE" ]; then
        echo
        echo "Error-log lines at warn or above (count, most frequent first, times and ids removed):"
        echo
        sed 's/^/    /' "$LOG_LINES_FILE"
    fi
    echo "<!-- END $SECTION -->"
} >"$section"

cat "$section"
if [ "$RESULTS" != - ]; then
    splice_section "$RESULTS" "$SECTION" "$section"
    note "wrote the $SECTION section of $RESULTS"
fi
