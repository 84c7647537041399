#!/usr/bin/env bash
# Scenario "gunzip": gzip-encoded files decoded for clients that do not take gzip, nginx vs
# Portico with the same configuration file (`gunzip on; gzip_static always;`, one worker):
#
# 1. throughput: a 64 KiB text/html page stored only as `page.html.gz` (gzip -6), fetched
#    without Accept-Encoding by wrk; requests per second and CPU per request;
# 2. loop lag: while 4 clients fetch `bomb.gz` (64 MiB of zeros, which inflate a
#    thousandfold) over and over, wrk measures `return 200` on the same worker: its p99
#    latency is what a large inflating body costs the loop's other connections.
#
#   bench/gunzip.sh
#
# Environment (defaults in brackets):
#   REPS [3]  DURATION [10] (seconds)  CONNECTIONS [10]  BOMB_CLIENTS [4]
#   PORTICO_BIN   use this binary instead of building (cargo build --release -p portico-server)
#   RESULTS [bench/RESULTS.md]   file whose "gunzip" section is rewritten; "-" = don't write
#   KEEP_TMP [0]  1 keeps the temporary directory

source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"

REPS=${REPS:-3}
DURATION=${DURATION:-10}
CONNECTIONS=${CONNECTIONS:-10}
BOMB_CLIENTS=${BOMB_CLIENTS:-4}
RESULTS=${RESULTS:-$BENCH_DIR/RESULTS.md}
KEEP_TMP=${KEEP_TMP:-0}
SECTION=gunzip

ensure_tools
ensure_portico
commit=$(git -C "$REPO_DIR" rev-parse --short HEAD 2>/dev/null || echo unknown)

TMP=$(mktemp -d /tmp/portico-bench-gunzip.XXXXXX)
chmod 755 "$TMP"
BOMB_PIDS=()
cleanup() {
    local pid
    for pid in "${BOMB_PIDS[@]+"${BOMB_PIDS[@]}"}"; do
        kill "$pid" 2>/dev/null || true
        wait "$pid" 2>/dev/null || true
    done
    stop_all_started
    if [ "$KEEP_TMP" = 1 ]; then note "kept $TMP"; else rm -rf "$TMP"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# The page: HTML-like text with numbers, so that it compresses as a real page does.
mkdir -p "$TMP/html"
awk 'BEGIN {
    printf "<html><head><title>gunzip</title></head><body>\n"
    for (i = 0; length(s) < 65536 - 200; i++) {
        line = sprintf("<p class=\"row%d\">Item %d: the quick brown fox %x jumps over %d lazy dogs.</p>\n", i % 7, i, i * 2654435761 % 65536, i * 37 % 1000)
        s = s line
    }
    printf "%s</body></html>\n", s
}' >"$TMP/page.html"
gzip -6 -c "$TMP/page.html" >"$TMP/html/page.html.gz"
head -c $((64 * 1024 * 1024)) /dev/zero | gzip -6 -c >"$TMP/html/bomb.gz"
chmod -R a+rX "$TMP/html"
PAGE_BYTES=$(stat -c %s "$TMP/page.html")

PORT=$(free_port)
cat >"$TMP/bench.conf" <<EOF
worker_processes 1;
daemon off;
events { worker_connections 1024; }
http {
    access_log off;
    default_type text/html;
    server {
        listen 127.0.0.1:$PORT;
        root $TMP/html;
        location / { gunzip on; gzip_static always; }
        location = /ping { return 200 "pong"; }
    }
}
EOF

# One throughput run: prints "RPS CPU_US_PER_REQUEST".
throughput() {
    local kind=$1 rep=$2 prefix="$TMP/$1" pids before after out
    start_server "$kind" "$prefix" "$TMP/bench.conf" "$PORT"
    local got
    got=$(curl -s "http://127.0.0.1:$PORT/page.html" | wc -c)
    [ "$got" = "$PAGE_BYTES" ] || die "$kind sent $got bytes of the page, expected $PAGE_BYTES"
    mapfile -t pids < <(process_family "$SERVER_PID")
    before=$(family_cpu_ns "${pids[@]}")
    out="$TMP/wrk-$kind-page-$rep.txt"
    wrk -t1 -c"$CONNECTIONS" -d"${DURATION}s" --latency "http://127.0.0.1:$PORT/page.html" >"$out"
    after=$(family_cpu_ns "${pids[@]}")
    stop_server "$SERVER_PID"
    local parsed requests rps
    parsed=$(parse_wrk "$out") || die "cannot parse $out"
    read -r requests rps _ _ _ <<<"$parsed"
    awk -v r="$rps" -v n="$requests" -v ns=$((after - before)) 'BEGIN { printf "%.0f %.1f\n", r, ns / n / 1000 }'
}

# One loop-lag run: prints "P99_US RPS" of `return 200` while the bomb is fetched.
lag() {
    local kind=$1 rep=$2 prefix="$TMP/$1" out i
    start_server "$kind" "$prefix" "$TMP/bench.conf" "$PORT"
    BOMB_PIDS=()
    for ((i = 0; i < BOMB_CLIENTS; i++)); do
        (while true; do curl -s -o /dev/null "http://127.0.0.1:$PORT/bomb"; done) &
        BOMB_PIDS+=("$!")
    done
    sleep 1
    out="$TMP/wrk-$kind-lag-$rep.txt"
    wrk -t1 -c"$CONNECTIONS" -d"${DURATION}s" --latency "http://127.0.0.1:$PORT/ping" >"$out"
    for i in "${BOMB_PIDS[@]}"; do
        kill "$i" 2>/dev/null || true
        wait "$i" 2>/dev/null || true
    done
    BOMB_PIDS=()
    stop_server "$SERVER_PID"
    local parsed rps p99
    parsed=$(parse_wrk "$out") || die "cannot parse $out"
    read -r _ rps _ p99 _ <<<"$parsed"
    echo "$p99 $rps"
}

declare -A RPS CPU P99 PING
for ((rep = 1; rep <= REPS; rep++)); do
    for kind in nginx portico; do
        read -r rps cpu < <(throughput "$kind" "$rep")
        RPS[$kind]+="$rps "
        CPU[$kind]+="$cpu "
        read -r p99 ping < <(lag "$kind" "$rep")
        P99[$kind]+="$p99 "
        PING[$kind]+="$ping "
        note "rep $rep $kind: page $rps req/s, $cpu us CPU/request; ping p99 $p99 us at $ping req/s"
    done
done

section="$TMP/section.md"
{
    echo "<!-- BEGIN $SECTION -->"
    echo "## gunzip"
    echo
    echo "\`bench/gunzip.sh\` at $commit, $(date -u +%Y-%m-%d), one worker each, medians of $REPS runs"
    echo "(raw runs: ${RPS[nginx]}/ ${RPS[portico]}req/s)."
    echo
    echo "| | nginx | Portico | Portico / nginx |"
    echo "|---|---|---|---|"
    for row in RPS CPU P99; do
        declare -n values=$row
        n=$(median ${values[nginx]})
        p=$(median ${values[portico]})
        case $row in
            RPS) label="64 KiB page gunzipped: requests/s" ;;
            CPU) label="64 KiB page gunzipped: CPU us/request" ;;
            P99) label="\`return 200\` p99 (us) while $BOMB_CLIENTS clients inflate 64 MiB" ;;
        esac
        awk -v l="$label" -v n="$n" -v p="$p" 'BEGIN { printf "| %s | %s | %s | %.2f |\n", l, n, p, p / n }'
        unset -n values
    done
    echo
    echo "<!-- END $SECTION -->"
} >"$section"
cat "$section"
if [ "$RESULTS" != - ]; then
    splice_section "$RESULTS" "$SECTION" "$section"
fi
