#!/usr/bin/env bash
# Scenario "h3": HTTP/3 against HTTP/2 over TLS on the same Portico, same run, same
# `return 200 "hello world"`, worker_processes 1. HTTP/3 load comes from
# `crates/quic/examples/h3_load.rs` (the `h3` crate on `quinn`, one thread), HTTP/2 load
# from h2load (Debian's nghttp2-client, one thread); both with CONNECTIONS connections of
# STREAMS concurrent requests. Each round reports requests/s and the server's CPU time per
# request (user + system of the whole process, from /proc), and the ratio of HTTP/3's
# requests per CPU second to HTTP/2's (issue 39's target: at least 0.7).
#
#   cargo build --release -p portico-server
#   cargo build --release -p portico-quic --example h3_load
#   flock /tmp/portico-bench.lock bench/h3.sh
#
# Environment [defaults]: REPS [3] REQUESTS [200000] CONNECTIONS [10] STREAMS [10]
#   PORTICO_BIN [$CARGO_TARGET_DIR/release/portico] H3_LOAD [.../release/examples/h3_load]
# The two clients differ (their own CPU cost is not counted, the server's is): compare the
# CPU per request more than the rates.
set -euo pipefail

target=${CARGO_TARGET_DIR:-$(dirname "$0")/../target}
PORTICO_BIN=${PORTICO_BIN:-$target/release/portico}
H3_LOAD=${H3_LOAD:-$target/release/examples/h3_load}
REPS=${REPS:-3}
REQUESTS=${REQUESTS:-200000}
CONNECTIONS=${CONNECTIONS:-10}
STREAMS=${STREAMS:-10}

prefix=$(mktemp -d /tmp/portico-h3-bench.XXXXXX)
server=""
cleanup() {
    if [ -n "$server" ]; then kill "$server" 2>/dev/null || true; wait "$server" 2>/dev/null || true; fi
    rm -rf "$prefix"
}
trap cleanup EXIT
mkdir -p "$prefix/logs"
openssl req -x509 -nodes -newkey ec -pkeyopt ec_paramgen_curve:P-256 -days 1 \
    -subj /CN=localhost -addext subjectAltName=DNS:localhost \
    -keyout "$prefix/localhost.key" -out "$prefix/localhost.crt" 2>/dev/null
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
cat > "$prefix/portico.conf" <<CONF
worker_processes 1;
error_log logs/error.log;
pid logs/portico.pid;
events {}
http {
    access_log off;
    # One connection per client connection for the whole run (the clients do not
    # reconnect after the GOAWAY the 1000th request would bring).
    keepalive_requests 10000000;
    server {
        listen 127.0.0.1:$port quic reuseport;
        listen 127.0.0.1:$port ssl;
        http2 on;
        ssl_certificate localhost.crt;
        ssl_certificate_key localhost.key;
        location / { return 200 "hello world"; }
    }
}
CONF
"$PORTICO_BIN" -p "$prefix/" -c portico.conf -g "daemon off;" &
server=$!
sleep 1

# The server's CPU time so far, in clock ticks (utime + stime of every thread).
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$server/stat"; }
ticks=$(getconf CLK_TCK)

# run NAME COMMAND...: prints "NAME req/s cpu-us/request".
run() {
    local name=$1; shift
    local before after start end
    before=$(cpu_ticks); start=$(date +%s.%N)
    "$@" > "$prefix/out.txt" 2>&1
    end=$(date +%s.%N); after=$(cpu_ticks)
    awk -v n="$name" -v r="$REQUESTS" -v s="$start" -v e="$end" -v b="$before" -v a="$after" -v t="$ticks" \
        'BEGIN { printf "%s %.0f %.1f\n", n, r / (e - s), (a - b) / t * 1e6 / r }'
}

echo "round protocol req/s server-cpu-us/request"
for round in $(seq 1 "$REPS"); do
    h3=$(run h3 timeout 120 "$H3_LOAD" "$port" / "$REQUESTS" "$CONNECTIONS" "$STREAMS")
    # Every answer is the 11-byte body.
    grep -q " $((REQUESTS * 11)) body bytes" "$prefix/out.txt"
    h2=$(run h2 timeout 120 h2load -n "$REQUESTS" -c "$CONNECTIONS" -m "$STREAMS" "https://localhost:$port/")
    grep -q "$REQUESTS succeeded" "$prefix/out.txt"
    echo "$round $h3"
    echo "$round $h2"
    awk -v a="$h3" -v b="$h2" 'BEGIN { split(a, x, " "); split(b, y, " ");
        printf "%s ratio h3/h2 requests per server CPU second: %.2f\n", "'"$round"'", y[3] / x[3] }'
done
