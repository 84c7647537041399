#!/usr/bin/env bash
# Scenario "cache_floor": how low CPU per request can go on bench/cache.sh's b2 and b3 loads.
# nginx and Portico read the same configuration (cache.sh's b1-b4 file: buffered access log,
# `sendfile on`, the default key); a third program, bench/floor/hit_floor.c, answers the same
# requests from nginx's cache files with only the system calls a HIT cannot do without:
#
#   b3   one 1 MiB entry, `-c20`: read the request, send the stored head (MSG_MORE), one
#        sendfile of the body from a descriptor kept open
#   b2   KEYS entries of 4 KiB at random, `-c100`: read the request, md5 of the key, openat,
#        one pread, close, one send of head and body
#
# The floor logs nothing, rewrites no header and keeps no index, so no server with this
# configuration does less: its CPU per request bounds what a server can reach, and the
# ratio floor / nginx bounds the ratio Portico / nginx (cache.sh's targets: b3's CPU at most
# 0.9x, b2's req/s at least 1.2x). The three run one after another in each repetition.
#
#   bench/cache_floor.sh
#
# Environment (defaults in brackets):
#   SCENARIOS ["b2 b3"]  REPS [5]  DURATION [8]  WARMUP [2] (seconds)  WRK_THREADS [nproc]
#   KEYS [100000]  CONNECTIONS_4K [100]  CONNECTIONS_1M [20]
#   PORTICO_BIN, CARGO_TARGET_DIR, RESULTS [bench/RESULTS.md] ("-" = don't write), KEEP_TMP [0]
# Needs a C compiler and OpenSSL's headers (gcc, libssl-dev; installed with apt-get as root).

source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
source "$BENCH_DIR/lib/runs.sh"
source "$BENCH_DIR/lib/cache_setup.sh"

SCENARIOS=${SCENARIOS:-"b2 b3"}
REPS=${REPS:-5}
DURATION=${DURATION:-8}
WARMUP=${WARMUP:-2}
WRK_THREADS=${WRK_THREADS:-$(nproc)}
KEYS=${KEYS:-100000}
CONNECTIONS_4K=${CONNECTIONS_4K:-100}
CONNECTIONS_1M=${CONNECTIONS_1M:-20}
RESULTS=${RESULTS:-$BENCH_DIR/RESULTS.md}
KEEP_TMP=${KEEP_TMP:-0}
SECTION=cache_floor
KINDS="floor nginx portico"

ensure_tools
ensure_portico
command -v python3 >/dev/null || die "python3 is needed to fill b2's keys"
if ! command -v gcc >/dev/null || [ ! -e /usr/include/openssl/md5.h ]; then
    [ "$(id -u)" -eq 0 ] || die "hit_floor needs gcc and libssl-dev: run 'apt-get install -y gcc libssl-dev' as root"
    note "installing gcc libssl-dev"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq gcc libssl-dev >/dev/null
fi
commit=$(git -C "$REPO_DIR" rev-parse --short HEAD 2>/dev/null || echo unknown)

make_work_dir cache-floor
FLOOR_BIN=$WORK/hit_floor
gcc -O2 -Wall -Wno-deprecated-declarations -o "$FLOOR_BIN" "$BENCH_DIR/floor/hit_floor.c" -lcrypto \
    || die "could not build bench/floor/hit_floor.c"
mkdir -p "$WORK/conf" "$WORK/logs"
user_line=""
[ "$(id -u)" -eq 0 ] && user_line="user root;"

DOCROOT=$WORK/origin
mkdir -p "$DOCROOT/hit" "$DOCROOT/keys"
head -c $((1024 * 1024)) /dev/urandom >"$DOCROOT/hit/1m.bin"
head -c 4096 /dev/urandom >"$DOCROOT/keys/4k.bin"
chmod -R a+rX "$DOCROOT"
BACKEND_PORT=$(free_port)
write_origin_conf "$WORK/conf/backend.conf" "$BACKEND_PORT" "$DOCROOT" bench/cache_floor.sh
start_server nginx "$WORK/backend" "$WORK/conf/backend.conf" "$BACKEND_PORT"

PORT=$(free_port)
HIT_CONF=$WORK/conf/hit.conf
write_hit_conf "$HIT_CONF" "$BACKEND_PORT" bench/cache_floor.sh

# Portico's loaders log one "http file cache:" line per zone when done.
wait_loaders() {
    local log=$1 from=$2 deadline=$((SECONDS + 30))
    while [ $SECONDS -lt $deadline ]; do
        [ "$(tail -c +$((from + 1)) "$log" 2>/dev/null | grep -c 'http file cache: ' || true)" -ge 2 ] && return 0
        sleep 0.1
    done
    note "portico: cache loaders not done after 30 s; measuring anyway"
}

# The entry file of KEY under a levels=1:2 cache directory.
entry_of() {
    local dir=$1 md5
    md5=$(printf '%s' "$2" | md5sum | cut -c1-32)
    echo "$dir/${md5:31:1}/${md5:29:2}/$md5"
}

# Starts KIND for SCENARIO on PORT; sets SERVER_PID.
start_kind() {
    local kind=$1 scen=$2 from
    if [ "$kind" = floor ]; then
        if [ "$scen" = b3 ]; then
            "$FLOOR_BIN" one "$PORT" "$(entry_of "$WORK/nginx/cache/hit" http://backend/hit/1m.bin)" &
        else
            "$FLOOR_BIN" keys "$PORT" "$WORK/nginx/cache/keys" &
        fi
        SERVER_PID=$!
        STARTED_PIDS+=("$SERVER_PID")
        local tries=0
        # curl exits 7 while nothing listens; the floor closes on a path it has no entry for.
        while curl -s -o /dev/null --max-time 1 "http://127.0.0.1:$PORT/" 2>/dev/null; [ $? = 7 ]; do
            tries=$((tries + 1))
            [ $tries -lt 100 ] || die "hit_floor did not start"
            sleep 0.1
        done
        return
    fi
    mkdir -p "$WORK/$kind/cache"
    from=$(stat -c %s "$WORK/$kind/logs/error.log" 2>/dev/null || echo 0)
    start_server "$kind" "$WORK/$kind" "$HIT_CONF" "$PORT"
    [ "$kind" != portico ] || wait_loaders "$WORK/$kind/logs/error.log" "$from"
}

# Stops KIND's SERVER_PID. The floor, a background job of this shell, ignores QUIT: its
# child and itself get TERM.
stop_kind() {
    local kind=$1 child
    if [ "$kind" = floor ]; then
        for child in $(pgrep -P "$SERVER_PID" || true); do kill "$child" 2>/dev/null || true; done
        kill "$SERVER_PID" 2>/dev/null || true
    fi
    stop_server "$SERVER_PID"
}

write_random_keys_lua "$WORK/random-keys.lua" "$KEYS"

# Every key stored once through nginx and through Portico; the floor reads nginx's files.
for kind in nginx portico; do
    start_kind "$kind" fill
    check_body "$kind" /hit/1m.bin "$DOCROOT/hit/1m.bin"
    if [[ " $SCENARIOS " == *" b2 "* ]]; then
        result=$(timeout 900 python3 "$BENCH_DIR/lib/fill_keys.py" "$PORT" "/keys/4k.bin?" "$KEYS" 50 "$DOCROOT/keys/4k.bin") \
            || die "$kind: filling b2's keys failed"
        note "$kind: b2 fill: $result"
    fi
    stop_kind "$kind"
done

# One measured run: "RPS CPU_US_PER_REQUEST ERRORS".
measure() {
    local kind=$1 scen=$2 rep=$3 url=http://127.0.0.1:$PORT connections path file out family cpu0 cpu1 parsed
    local lua=()
    out=$WORK/logs/wrk-$scen-$rep-$kind.txt
    if [ "$scen" = b3 ]; then
        connections=$CONNECTIONS_1M path=/hit/1m.bin file=$DOCROOT/hit/1m.bin url=$url/hit/1m.bin
    else
        connections=$CONNECTIONS_4K path="/keys/4k.bin?$((RANDOM % KEYS))" file=$DOCROOT/keys/4k.bin
        url=$url/ lua=(-s "$WORK/random-keys.lua")
    fi
    start_kind "$kind" "$scen"
    check_body "$kind" "$path" "$file"
    mapfile -t family < <(family_of "$SERVER_PID")
    run_wrk "$WORK/warmup.txt" "$WARMUP" "$url" "$connections" "$WRK_THREADS" "${lua[@]}" >/dev/null \
        || die "wrk warmup failed"
    cpu0=$(family_cpu_ns "${family[@]}")
    run_wrk "$out" "$DURATION" "$url" "$connections" "$WRK_THREADS" "${lua[@]}" >/dev/null || die "wrk failed: $(cat "$out")"
    cpu1=$(family_cpu_ns "${family[@]}")
    [ "$cpu0" != gone ] && [ "$cpu1" != gone ] || die "$kind: a process exited during the run"
    stop_kind "$kind"
    parsed=$(parse_wrk "$out") || die "could not parse wrk output: $(cat "$out")"
    # shellcheck disable=SC2086
    set -- $parsed
    awk -v n="$1" -v rps="$2" -v e="$5" -v ns=$((cpu1 - cpu0)) 'BEGIN { printf "%s %.2f %d\n", rps, ns / 1e3 / n, e }'
}

declare -A RPS CPU ERRORS
for scen in $SCENARIOS; do
    for rep in $(seq 1 "$REPS"); do
        for kind in $KINDS; do
            read -r rps cpu errors < <(measure "$kind" "$scen" "$rep")
            RPS[$scen,$kind]+="$rps "
            CPU[$scen,$kind]+="$cpu "
            ERRORS[$scen,$kind]=$(( ${ERRORS[$scen,$kind]:-0} + errors ))
            note "$scen rep $rep $kind: $rps req/s, $cpu us CPU/request, $errors errors"
        done
    done
done

# Median over the repetitions of KIND's value / nginx's value in the same repetition.
pair_median() {
    local -a a b
    read -ra a <<<"$1"
    read -ra b <<<"$2"
    local i ratios=()
    for i in "${!a[@]}"; do ratios+=("$(awk -v x="${a[$i]}" -v y="${b[$i]}" 'BEGIN { printf "%.3f", x / y }')"); done
    median "${ratios[@]}"
}

section=$WORK/section.md
{
    echo "<!-- BEGIN $SECTION -->"
    echo "## cache_floor"
    echo
    echo "\`bench/cache_floor.sh\` at $commit, $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) CPUs, kernel $(uname -r);"
    echo "medians of $REPS runs of ${DURATION} s each, floor, nginx and Portico one after another in each"
    echo "repetition. The floor (\`bench/floor/hit_floor.c\`) makes only the system calls a HIT needs"
    echo "and logs nothing: no server with this configuration does less."
    echo
    echo "| load | server | req/s | CPU us/request | CPU / nginx's | per-run CPU / nginx's | req/s / nginx's | errors |"
    echo "|---|---|---|---|---|---|---|---|"
    for scen in $SCENARIOS; do
        case $scen in
            b2) load="b2: $KEYS keys of 4 KiB, \`-c$CONNECTIONS_4K\`" ;;
            b3) load="b3: 1 MiB, \`-c$CONNECTIONS_1M\`" ;;
        esac
        # shellcheck disable=SC2086
        n_rps=$(median ${RPS[$scen,nginx]}) n_cpu=$(median ${CPU[$scen,nginx]})
        for kind in $KINDS; do
            # shellcheck disable=SC2086
            rps=$(median ${RPS[$scen,$kind]}) cpu=$(median ${CPU[$scen,$kind]})
            pair=$(pair_median "${CPU[$scen,$kind]}" "${CPU[$scen,nginx]}")
            awk -v l="$load" -v k="$kind" -v r="$rps" -v c="$cpu" -v nr="$n_rps" -v nc="$n_cpu" -v p="$pair" -v e="${ERRORS[$scen,$kind]}" \
                'BEGIN { printf "| %s | %s | %.0f | %.2f | %.2f | %.2f | %.2f | %d |\n", l, k, r, c, c / nc, p, r / nr, e }'
        done
    done
    echo
    echo "Raw CPU us/request per run:"
    for scen in $SCENARIOS; do
        for kind in $KINDS; do echo "- $scen $kind: ${CPU[$scen,$kind]}"; done
    done
    echo
    echo "<!-- END $SECTION -->"
} >"$section"
cat "$section"
if [ "$RESULTS" != - ]; then
    splice_section "$RESULTS" "$SECTION" "$section"
fi
