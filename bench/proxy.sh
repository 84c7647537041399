#!/usr/bin/env bash
# Scenario "proxy (seed 001)": a reverse proxy in front of a hello-world backend, as in seed
# 001, on this one machine and in one run:
#
#   direct        wrk -> backend
#   nginx-default wrk -> nginx -> backend   worker_processes 1; proxy_pass http://127.0.0.1:B1;
#                                            (HTTP/1.0 to the backend, a new connection per request)
#   nginx-tuned   wrk -> nginx -> backends  seed 001 section 13 ("comprehensive tuning"): upstream
#                                            of both backends with keepalive 32, keepalive_requests
#                                            2000, worker_processes auto, worker_connections 65535,
#                                            multi_accept on, listen ... deferred backlog=24800, plus
#                                            proxy_http_version 1.1 and proxy_set_header Connection ""
#   portico       wrk -> Portico -> backends Portico's shipped conf/portico.conf, with only the
#                                            listen port and the upstream's server lines changed
#
# The backends are two nginx instances answering `return 200 "hello world";` on any path;
# every row requests /app/ (the path the shipped configuration proxies).
#
#   bench/proxy.sh
#
# Environment (defaults in brackets):
#   REPS [3]            repetitions; each repetition runs the four rows in the order above
#   WRK_THREADS [nproc] CONNECTIONS [100] DURATION [10] (seconds) WARMUP [1] (seconds, 0 = none)
#   ROWS ["direct nginx-default nginx-tuned portico"]  rows to run, in this order (direct is
#                       needed for the overhead and the ratios; the targets need nginx-tuned)
#   BACKEND_WORKERS [1] worker_processes of each backend nginx
#   INSTRUCTIONS [auto] also count the proxy's instructions per request with `perf stat`
#                       (when perf works here; 0 = never)
#   NGINX_ACCESS_LOG [buffered]  access log of the two nginx proxies: "buffered" is the shipped
#                       Portico configuration's own line (combined, buffer=64k flush=1s), "seed"
#                       is nginx's default (combined, one write per request), "off"
#   PORTICO_BIN         use this binary instead of building (cargo build --release -p portico-server)
#   CARGO_TARGET_DIR    where cargo builds
#   RESULTS [bench/RESULTS.md]   file whose "proxy" section is rewritten; "-" = don't write
#   KEEP_TMP [0]        1 keeps the temporary directory (configs, logs, raw wrk output)
#   QUIET_MAX [0]       before each run, wait up to this many seconds for the rest of the
#                       machine to use less than QUIET_CORES [0.3] cores (shared machines)
#   RETRY_NOISY [0]     repeat a run (at most this many times) when the rest of the machine
#                       used more than QUIET_CORES cores during it; the noisy run stays in the
#                       table, marked, and out of the medians
#
# See bench/README.md for what is measured and why.

source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"

REPS=${REPS:-3}
WRK_THREADS=${WRK_THREADS:-$(nproc)}
CONNECTIONS=${CONNECTIONS:-100}
DURATION=${DURATION:-10}
WARMUP=${WARMUP:-1}
BACKEND_WORKERS=${BACKEND_WORKERS:-1}
NGINX_ACCESS_LOG=${NGINX_ACCESS_LOG:-buffered}
RESULTS=${RESULTS:-$BENCH_DIR/RESULTS.md}
KEEP_TMP=${KEEP_TMP:-0}
QUIET_MAX=${QUIET_MAX:-0}
QUIET_CORES=${QUIET_CORES:-0.3}
RETRY_NOISY=${RETRY_NOISY:-0}
SECTION=proxy
EXPECTED='hello world'
URL_PATH=/app/
ROWS=${ROWS:-"direct nginx-default nginx-tuned portico"}
INSTRUCTIONS=${INSTRUCTIONS:-auto}
STATUS_PATH=/__bench_backend_status
SHIPPED_CONF=$REPO_DIR/conf/portico.conf
COMMAND_LINE="bench/proxy.sh"
for variable in REPS ROWS INSTRUCTIONS WRK_THREADS CONNECTIONS DURATION WARMUP BACKEND_WORKERS NGINX_ACCESS_LOG QUIET_MAX QUIET_CORES RETRY_NOISY PORTICO_BIN CARGO_TARGET_DIR; do
    if printenv "$variable" >/dev/null; then
        COMMAND_LINE="$variable='${!variable}' $COMMAND_LINE"
    fi
done
case $NGINX_ACCESS_LOG in
    buffered) NGINX_LOG_LINE="access_log logs/access.log combined buffer=64k flush=1s;" ;;
    seed) NGINX_LOG_LINE="access_log logs/access.log combined;" ;;
    off) NGINX_LOG_LINE="access_log off;" ;;
    *) die "NGINX_ACCESS_LOG must be buffered, seed or off" ;;
esac
[ -f "$SHIPPED_CONF" ] || die "$SHIPPED_CONF not found"

ensure_tools
ensure_portico
COUNT_INSTRUCTIONS=0
if [ "$INSTRUCTIONS" != 0 ] && command -v perf >/dev/null && perf stat -e instructions true >/dev/null 2>&1; then
    COUNT_INSTRUCTIONS=1
fi
commit=$(git -C "$REPO_DIR" rev-parse --short HEAD 2>/dev/null || echo unknown)
changed=$(git -C "$REPO_DIR" --no-optional-locks diff --name-only HEAD -- crates Cargo.toml Cargo.lock conf 2>/dev/null | paste -sd, - || true)
if [ -n "$changed" ]; then
    commit="$commit plus uncommitted changes to $changed"
fi

WORK=$(mktemp -d /tmp/portico-bench-proxy.XXXXXX)
# Both proxies run their workers as nobody (neither configuration names a `user`): let them
# reach their prefixes.
chmod 755 "$WORK"
cleanup() {
    stop_all_started
    if [ "$KEEP_TMP" = 1 ]; then
        note "kept $WORK"
    else
        rm -rf "$WORK"
    fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# ---- Configurations --------------------------------------------------------------------

B1=$(free_port)
B2=$(free_port)
while [ "$B2" = "$B1" ]; do B2=$(free_port); done
P_DEFAULT=$(free_port)
P_TUNED=$(free_port)
P_PORTICO=$(free_port)
[ "$(printf '%s\n' "$B1" "$B2" "$P_DEFAULT" "$P_TUNED" "$P_PORTICO" | sort -u | wc -l)" = 5 ] \
    || die "free_port gave the same port twice; run again"

# A backend: nginx answering "hello world" on any path, like seed 001's Go program. Go's
# server has no limit on the requests of a keep-alive connection; keepalive_requests makes
# nginx's practically unlimited too, so that only the proxies decide when a connection ends.
write_backend_conf() {
    local port=$1 file=$2
    cat >"$file" <<EOF
# Generated by bench/proxy.sh: a hello-world backend.
worker_processes $BACKEND_WORKERS;
daemon off;
pid logs/nginx.pid;
error_log logs/error.log;
events {
    worker_connections 4096;
}
http {
    access_log off;
    keepalive_requests 1000000;
    server {
        listen 127.0.0.1:$port backlog=4096;
        location / {
            return 200 "$EXPECTED";
        }
        # Read by the script before and after each run: connections accepted, i.e. how many
        # connections the proxy opened to the backend.
        location = $STATUS_PATH {
            stub_status;
        }
    }
}
EOF
}

# nginx with a default-like configuration (seed 001, section 2): one worker, 1024
# connections, proxy_pass to one backend without an upstream block.
write_nginx_default_conf() {
    cat >"$1" <<EOF
# Generated by bench/proxy.sh: nginx's default configuration with location / proxied
# (seed 001, section 2).
worker_processes 1;
daemon off;
pid logs/nginx.pid;
error_log logs/error.log;
events {
    worker_connections 1024;
}
http {
    $NGINX_LOG_LINE
    server {
        listen 127.0.0.1:$P_DEFAULT;
        location / {
            proxy_pass http://127.0.0.1:$B1;
        }
    }
}
EOF
}

# nginx with seed 001's "comprehensive tuning" (section 13). The seed's kernel settings
# (sysctl) are not applied: this is a shared machine. proxy_http_version 1.1 and an empty
# Connection header are added: without them nginx speaks HTTP/1.0 with "Connection: close"
# to the backend and the upstream keepalive cache stays empty.
write_nginx_tuned_conf() {
    cat >"$1" <<EOF
# Generated by bench/proxy.sh: seed 001, section 13 ("comprehensive tuning").
worker_processes auto;
daemon off;
pid logs/nginx.pid;
error_log logs/error.log;
events {
    worker_connections 65535;
    multi_accept on;
}
http {
    $NGINX_LOG_LINE
    upstream backend {
        server 127.0.0.1:$B1;
        server 127.0.0.1:$B2;
        keepalive 32;
        keepalive_requests 2000;
    }
    server {
        listen 127.0.0.1:$P_TUNED deferred backlog=24800;
        location / {
            proxy_pass http://backend;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
        }
    }
}
EOF
}

# Portico's shipped configuration, copied with its mime.types; only the listen port and the
# servers of "upstream app" change. Relative paths (logs, pid, root) hang off Portico's -p
# prefix, which is this run's directory.
write_portico_conf() {
    local dir=$1
    mkdir -p "$dir"
    cp "$REPO_DIR/conf/mime.types" "$dir/"
    awk -v port="$P_PORTICO" -v b1="$B1" -v b2="$B2" '
        /^[[:space:]]*upstream app[[:space:]]*\{/ { in_up = 1 }
        in_up && /^[[:space:]]*server[[:space:]]/ {
            if (!done) {
                match($0, /^[[:space:]]*/); ind = substr($0, 1, RLENGTH)
                print ind "server 127.0.0.1:" b1 ";"
                print ind "server 127.0.0.1:" b2 ";"
                done = 1; servers++
            }
            next
        }
        in_up && /^[[:space:]]*\}/ { in_up = 0 }
        /^[[:space:]]*listen[[:space:]]+127\.0\.0\.1:[0-9]+/ {
            sub(/127\.0\.0\.1:[0-9]+/, "127.0.0.1:" port); listens++
        }
        { print }
        END { if (servers != 1 || listens != 1) exit 1 }' "$SHIPPED_CONF" >"$dir/portico.conf" \
        || die "could not adapt $SHIPPED_CONF (expected one 'upstream app' and one listen line)"
}

mkdir -p "$WORK/conf"
write_backend_conf "$B1" "$WORK/conf/backend1.conf"
write_backend_conf "$B2" "$WORK/conf/backend2.conf"
write_nginx_default_conf "$WORK/conf/nginx-default.conf"
write_nginx_tuned_conf "$WORK/conf/nginx-tuned.conf"
write_portico_conf "$WORK/conf/portico"
PORTICO_CONF=$WORK/conf/portico/portico.conf
diff -u "$SHIPPED_CONF" "$PORTICO_CONF" >"$WORK/conf/portico.diff" || true
mkdir -p "$WORK/nginx-test/logs"
"$NGINX_BIN" -t -q -p "$WORK/nginx-test/" -e /dev/null -c "$WORK/conf/nginx-tuned.conf" 2>"$WORK/conf/nginx-tuned.test" \
    || die "nginx rejects the tuned configuration: $(cat "$WORK/conf/nginx-tuned.test")"

# ---- Processes -------------------------------------------------------------------------

# Waits until URL answers (any status) or 20 s pass; fails if PID exits. (common.sh's
# wait_listening asks for /, which Portico's shipped configuration serves from a root
# directory that does not exist here, and would log an error for.)
wait_url() {
    local url=$1 pid=$2 deadline=$((SECONDS + 20))
    while [ $SECONDS -lt $deadline ]; do
        alive "$pid" || return 1
        curl -s -o /dev/null --max-time 1 "$url" && return 0
        sleep 0.1
    done
    return 1
}

# Starts BIN in the foreground of a background job and sets SERVER_PID.
#   start_proc NAME BIN PREFIX CONF PORT [ARGS...]
start_proc() {
    local name=$1 bin=$2 prefix=$3 conf=$4 port=$5
    shift 5
    mkdir -p "$prefix/logs"
    "$bin" -p "$prefix/" -e "$prefix/logs/error.log" -c "$conf" "$@" \
        >>"$prefix/logs/stdout.log" 2>>"$prefix/logs/stderr.log" &
    SERVER_PID=$!
    STARTED_PIDS+=("$SERVER_PID")
    if ! wait_url "http://127.0.0.1:$port$URL_PATH" "$SERVER_PID"; then
        note "$name did not start; its logs:"
        cat "$prefix/logs/stderr.log" "$prefix/logs/error.log" >&2 2>/dev/null || true
        stop_server "$SERVER_PID"
        die "$name failed to start on 127.0.0.1:$port"
    fi
}

# Checks that GET PATH answers 200 with exactly the expected body.
check_url() {
    local url=$1 name=$2 body status
    body=$(curl -s --max-time 5 -w '\n%{http_code}' "$url") || die "$name: curl $url failed"
    status=${body##*$'\n'}
    body=${body%$'\n'*}
    [ "$status" = 200 ] || die "$name: $url answered status $status, expected 200"
    [ "$body" = "$EXPECTED" ] || die "$name: $url answered '$body', expected '$EXPECTED'"
}

# Connections both backends have accepted so far (stub_status), minus the status requests.
backend_accepts() {
    local total=0 port n
    for port in "$B1" "$B2"; do
        n=$(curl -s --max-time 5 "http://127.0.0.1:$port$STATUS_PATH" | awk 'NR == 3 { print $1 }')
        [ -n "$n" ] || die "backend $port: no stub_status"
        total=$((total + n))
    done
    echo "$total"
}

# Runs wrk once and prints wrk's own user+sys ticks on stdout; its report goes to $1.
run_wrk() {
    local out=$1 duration=$2 url=$3
    timeout $((duration + 30)) bash -c '
        wrk -t"$1" -c"$2" -d"$3"s --latency "$4" >"$5" 2>&1 || exit 1
        stat=$(cat /proc/$$/stat); stat=${stat##*) }
        set -- $stat
        echo $(( ${14} + ${15} ))' wrk "$WRK_THREADS" "$CONNECTIONS" "$duration" "$url" "$out"
}

wait_quiet() {
    [ "$QUIET_MAX" -gt 0 ] || return 0
    local deadline=$((SECONDS + QUIET_MAX)) b0 b1 waited=0
    while :; do
        b0=$(machine_busy_ticks)
        sleep 1
        b1=$(machine_busy_ticks)
        # Our two idle backends are running: they use next to nothing.
        if awk -v d=$((b1 - b0)) -v hz="$CLK_TCK" -v max="$QUIET_CORES" 'BEGIN { exit !(d / hz < max) }'; then
            break
        fi
        waited=1
        if [ $SECONDS -ge $deadline ]; then
            note "machine still busy after ${QUIET_MAX}s; running anyway"
            break
        fi
    done
    [ "$waited" = 1 ] && QUIET_WAITED=$((QUIET_WAITED + 1))
    return 0
}
QUIET_WAITED=0

# The backends run for the whole script.
start_proc backend1 "$NGINX_BIN" "$WORK/backend1" "$WORK/conf/backend1.conf" "$B1"
BACKEND1_PID=$SERVER_PID
start_proc backend2 "$NGINX_BIN" "$WORK/backend2" "$WORK/conf/backend2.conf" "$B2"
BACKEND2_PID=$SERVER_PID
check_url "http://127.0.0.1:$B1$URL_PATH" backend1
check_url "http://127.0.0.1:$B2$URL_PATH" backend2
note "backends on 127.0.0.1:$B1 and 127.0.0.1:$B2; proxies: nginx-default :$P_DEFAULT, nginx-tuned :$P_TUNED, portico :$P_PORTICO; work dir $WORK"

RUNS=$WORK/runs.tsv
: >"$RUNS"
# Columns: 1 row, 2 rep, 3 requests, 4 req/s, 5 avg us, 6 p99 us, 7 errors, 8 proxy CPU s,
# 9 proxy CPU us/req, 10 backend CPU us/req, 11 wrk CPU s, 12 other load cores,
# 13 backend connections per request, 14 in medians, 15 proxy processes,
# 16 proxy instructions per request (nan when not counted), 17 proxy context switches per request

run_one() {
    local row=$1 rep=$2 port pid="" prefix out=$WORK/wrk-$rep-$row.txt
    local family=() backends=() perf_pid="" instructions=nan switches=nan p0=0 p1=0 bk0 bk1 acc0 acc1 busy0 busy1 t0 t1 wrk_ticks parsed
    wait_quiet
    case $row in
        direct) port=$B1 ;;
        nginx-default)
            port=$P_DEFAULT
            start_proc "$row" "$NGINX_BIN" "$WORK/$row" "$WORK/conf/nginx-default.conf" "$port"
            pid=$SERVER_PID ;;
        nginx-tuned)
            port=$P_TUNED
            start_proc "$row" "$NGINX_BIN" "$WORK/$row" "$WORK/conf/nginx-tuned.conf" "$port"
            pid=$SERVER_PID ;;
        portico)
            port=$P_PORTICO
            start_proc "$row" "$PORTICO_BIN" "$WORK/$row" "$PORTICO_CONF" "$port" -g 'daemon off;'
            pid=$SERVER_PID ;;
    esac
    local url="http://127.0.0.1:$port$URL_PATH"
    check_url "$url" "$row"
    if [ "$WARMUP" != 0 ]; then
        run_wrk "$WORK/warmup.txt" "$WARMUP" "$url" >/dev/null || die "$row: wrk warmup failed: $(cat "$WORK/warmup.txt")"
    fi
    mapfile -t backends < <(process_family "$BACKEND1_PID"; process_family "$BACKEND2_PID")
    if [ -n "$pid" ]; then
        mapfile -t family < <(process_family "$pid")
        if [ "$COUNT_INSTRUCTIONS" = 1 ]; then
            # Counting only (no sampling), every thread of the proxy's processes.
            perf stat -x, -e instructions,context-switches -p "$(IFS=,; echo "${family[*]}")" -o "$WORK/perf.csv" &
            perf_pid=$!
            sleep 0.2
        fi
        p0=$(family_cpu_ns "${family[@]}")
    fi
    acc0=$(backend_accepts)
    bk0=$(family_cpu_ns "${backends[@]}")
    busy0=$(machine_busy_ticks)
    t0=$(date +%s.%N)
    wrk_ticks=$(run_wrk "$out" "$DURATION" "$url") || die "$row: wrk failed: $(cat "$out")"
    t1=$(date +%s.%N)
    busy1=$(machine_busy_ticks)
    bk1=$(family_cpu_ns "${backends[@]}")
    if [ -n "$pid" ]; then
        p1=$(family_cpu_ns "${family[@]}")
        if [ -n "$perf_pid" ]; then
            kill -INT "$perf_pid" 2>/dev/null || true
            wait "$perf_pid" 2>/dev/null || true
            instructions=$(awk -F, '$3 ~ /^instructions/ && $1 ~ /^[0-9]+$/ { print $1 }' "$WORK/perf.csv")
            switches=$(awk -F, '$3 ~ /^context-switches/ && $1 ~ /^[0-9]+$/ { print $1 }' "$WORK/perf.csv")
            [ -n "$instructions" ] || instructions=nan
            [ -n "$switches" ] || switches=nan
        fi
        [ "$p0" != gone ] && [ "$p1" != gone ] || die "$row: a proxy process exited during the run (see $WORK/$row/logs)"
    fi
    acc1=$(backend_accepts)
    [ "$bk0" != gone ] && [ "$bk1" != gone ] || die "a backend process exited during the $row run"
    check_url "$url" "$row"
    [ -n "$pid" ] && stop_server "$pid"
    parsed=$(parse_wrk "$out") || die "$row: could not parse wrk output: $(cat "$out")"
    # shellcheck disable=SC2086
    set -- $parsed
    local requests=$1 rps=$2 avg=$3 p99=$4 errors=$5
    awk -v OFS='\t' -v row="$row" -v rep="$rep" -v n="$requests" -v rps="$rps" -v avg="$avg" \
        -v p99="$p99" -v e="$errors" -v pns=$((p1 - p0)) -v bns=$((bk1 - bk0)) -v wt="$wrk_ticks" \
        -v busy=$((busy1 - busy0)) -v hz="$CLK_TCK" -v t0="$t0" -v t1="$t1" \
        -v acc=$((acc1 - acc0 - 2)) -v procs="${#family[@]}" -v ins="$instructions" -v cs="$switches" 'BEGIN {
            ps = pns / 1e9; bs = bns / 1e9
            other = (busy / hz - ps - bs - wt / hz) / (t1 - t0)
            if (other < 0) other = 0
            print row, rep, n, rps, avg, p99, e, ps, ps * 1e6 / n, bs * 1e6 / n, wt / hz, other, acc / n, "yes", procs,
                (ins == "nan" ? "nan" : ins / n), (cs == "nan" ? "nan" : cs / n)
        }' >>"$RUNS"
    note "$(tail -n1 "$RUNS" | awk -F'\t' '{ printf "rep %s %-13s %9.0f req/s  avg %7.0f us  p99 %7.0f us  proxy %5.2f us/req %6s instr/req %5s cs/req  backend %5.2f us/req  upstream conns/req %.4f  other load %.2f cores  errors %d",
        $2, $1, $4, $5, $6, $9, ($16 == "nan" ? "-" : sprintf("%.0f", $16)), ($17 == "nan" ? "-" : sprintf("%.2f", $17)), $10, $13, $12, $7 }')"
}

LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)
BUSY_BEFORE=$(busy_sample 2)
STARTED_AT=$(date -u '+%Y-%m-%d %H:%M UTC')

for rep in $(seq 1 "$REPS"); do
    for row in $ROWS; do
        attempt=0
        while :; do
            run_one "$row" "$rep"
            noisy=$(tail -n1 "$RUNS" | awk -F'\t' -v max="$QUIET_CORES" '{ print ($12 > max) ? 1 : 0 }')
            [ "$noisy" = 1 ] && [ "$attempt" -lt "$RETRY_NOISY" ] || break
            awk -F'\t' -v OFS='\t' -v last="$(wc -l <"$RUNS")" 'NR == last { $14 = "no" } { print }' "$RUNS" >"$RUNS.new"
            mv "$RUNS.new" "$RUNS"
            attempt=$((attempt + 1))
            note "other load above $QUIET_CORES cores: run discarded, repeating ($attempt/$RETRY_NOISY)"
        done
    done
done

LOAD_AFTER=$(cut -d' ' -f1-3 /proc/loadavg)
BUSY_AFTER=$(busy_sample 2)

# Error-log lines of the proxies at level warn or worse (nginx's worker_connections alert
# about the open-file limit is expected with 65535 and is counted like the rest).
PROXY_LOG_LINES=$WORK/proxy-log-lines.txt
: >"$PROXY_LOG_LINES"
for row in nginx-default nginx-tuned portico; do
    [ -f "$WORK/$row/logs/error.log" ] || continue
    grep -E '\[(warn|error|crit|alert|emerg)\]' "$WORK/$row/logs/error.log" \
        | sed -E 's/^[0-9\/]+ [0-9:]+ //; s/[0-9]+#[0-9]+: (\*[0-9]+ )?//' \
        | sort | uniq -c | sort -rn | head -n 5 | sed "s/^ */$row: /" >>"$PROXY_LOG_LINES" || true
done

# ---- Report ----------------------------------------------------------------------------

section=$WORK/section.md
nginx_version=$("$NGINX_BIN" -v 2>&1 | sed 's/^nginx version: //')
wrk_version=$( (wrk -v 2>&1 || true) | awk 'NR == 1 { print $2 }')
cpu_model=$(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo)

ms() { awk -v v="$1" 'BEGIN { printf "%.3f", v / 1000 }'; }
col() { awk -F'\t' -v r="$1" -v c="$2" '$1 == r && $14 == "yes" { print $c }' "$RUNS"; }
# Per repetition: direct req/s over this row's req/s (runs in the medians only).
overheads() {
    awk -F'\t' -v r="$1" '$14 == "yes" && $1 == "direct" { d[$2] = $4 } $14 == "yes" && $1 == r { p[$2] = $4 }
        END { for (k in p) if (k in d) print d[k] / p[k] }' "$RUNS"
}
# shellcheck disable=SC2046
med() { median $(col "$1" "$2"); }
# shellcheck disable=SC2046
med_overhead() { median $(overheads "$1"); }

DIRECT_RPS=$(med direct 4)
{
    echo "<!-- BEGIN $SECTION -->"
    echo "## proxy (seed 001): wrk -> proxy -> hello-world backend"
    echo
    echo "Seed 001, first table: rows 1 (direct), 2 (nginx default) and 15 (section 13, \"comprehensive"
    echo "tuning\"), and Portico with its shipped \`conf/portico.conf\`."
    echo "Generated by \`$COMMAND_LINE\`, started $STARTED_AT."
    echo
    echo "- Machine: $(nproc) CPUs ($cpu_model), kernel $(uname -r), $(. /etc/os-release && echo "$PRETTY_NAME"); wrk, proxy and backends all on it"
    echo "- nginx: $nginx_version ($NGINX_BIN); wrk $wrk_version"
    echo "- Portico: commit $commit, release build ($PORTICO_BIN)"
    echo "- Load: \`wrk -t$WRK_THREADS -c$CONNECTIONS -d${DURATION}s --latency http://127.0.0.1:PORT$URL_PATH\` for every row, after a ${WARMUP}s warm-up; $REPS repetitions, each running the rows in the order direct, nginx-default, nginx-tuned, portico"
    echo "- Backends: two nginx instances, \`worker_processes $BACKEND_WORKERS; access_log off; keepalive_requests 1000000;\`, \`location / { return 200 \"hello world\"; }\`; the direct row loads the first one"
    echo "- nginx-default: \`worker_processes 1; events { worker_connections 1024; }\`, \`location / { proxy_pass http://127.0.0.1:B1; }\` (HTTP/1.0, a new upstream connection per request)"
    echo "- nginx-tuned: \`worker_processes auto; events { worker_connections 65535; multi_accept on; }\`, \`upstream backend { server B1; server B2; keepalive 32; keepalive_requests 2000; }\`, \`listen 127.0.0.1:PORT deferred backlog=24800;\`, \`proxy_pass http://backend; proxy_http_version 1.1; proxy_set_header Connection \"\";\`; the seed's sysctl settings are not applied (shared machine)"
    echo "- Both nginx proxies: \`$NGINX_LOG_LINE\` (NGINX_ACCESS_LOG=$NGINX_ACCESS_LOG), workers as nobody"
    echo "- portico: \`conf/portico.conf\` as shipped (\`worker_processes auto\`, \`worker_connections 4096\`, \`multi_accept on\`, \`access_log logs/access.log combined buffer=64k flush=1s\`, \`upstream app { ...; keepalive 64; keepalive_requests 10000; }\`, \`location /app/ { proxy_pass http://app; proxy_http_version 1.1; proxy_set_header Connection \"\"; proxy_set_header X-Forwarded-For ...; }\`) with only these lines changed: $(grep -E '^\+[^+]' "$WORK/conf/portico.diff" | sed 's/^+[[:space:]]*//' | paste -sd'|' - | sed 's/|/`, `/g; s/^/`/; s/$/`/'); started with \`-g 'daemon off;'\`"
    if [ "$QUIET_MAX" -gt 0 ]; then
        echo "- Before each run the script waited (at most ${QUIET_MAX}s) for the machine to stay under $QUIET_CORES busy cores for 1 s; it had to wait before $QUIET_WAITED of the runs"
    fi
    if [ "$RETRY_NOISY" -gt 0 ]; then
        echo "- A run during which the rest of the machine used more than $QUIET_CORES cores was repeated (at most $RETRY_NOISY times); such runs are listed, marked, and left out of the medians"
    fi
    echo "- Other load: load average $LOAD_BEFORE before, $LOAD_AFTER after; 2 s samples (cores): before: $BUSY_BEFORE; after: $BUSY_AFTER"
    echo
    echo "Proxy CPU/request: the proxy's time on a CPU (scheduler nanoseconds from"
    echo "/proc/PID/task/*/schedstat, nginx's master and workers or Portico's one process) over the"
    echo "measured run, divided by the requests wrk completed; backend CPU/request likewise over both"
    echo "backends. Upstream connections/request: connections the backends accepted during the run"
    echo "(stub_status) per request; 1 means no upstream keep-alive, near 0 means connections are reused."
    echo "\"Other load\": CPU used by the rest of the machine during the run, in cores (busy time from"
    echo "/proc/stat minus proxy, backends and wrk); above ~0.2 the run competed with something else."
    if [ "$COUNT_INSTRUCTIONS" = 1 ]; then
        echo "Proxy instructions/request and context switches/request: \`perf stat -e instructions,context-switches\`"
        echo "(counting, user+kernel) attached to the proxy's processes over the same run: unlike CPU time,"
        echo "instructions do not depend on the clock speed the VM gets from its host."
    fi
    echo
    echo "### Every run"
    echo
    echo "| rep | row | requests | req/s | avg latency (ms) | p99 (ms) | errors | proxy CPU/request (µs) | proxy instructions/request | proxy context switches/request | backend CPU/request (µs) | upstream connections/request | wrk CPU (s) | other load (cores) | in medians |"
    echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
    awk -F'\t' '{ printf "| %s | %s | %d | %.0f | %.3f | %.3f | %d | %s | %s | %s | %.2f | %.4f | %.2f | %.2f | %s |\n",
        $2, $1, $3, $4, $5 / 1000, $6 / 1000, $7, ($1 == "direct" ? "-" : sprintf("%.2f", $9)),
        ($16 == "nan" ? "-" : sprintf("%.0f", $16)), ($17 == "nan" ? "-" : sprintf("%.2f", $17)), $10, $13, $11, $12,
        ($14 == "yes" ? "yes" : "no (noisy, repeated)") }' "$RUNS"
    echo
    echo "### Medians"
    echo
    echo "Proxy overhead = direct req/s ÷ the row's req/s, computed per repetition (the direct run just"
    echo "before it) and then the median; \"vs direct\" is the ratio of the medians."
    echo
    echo "| row | req/s | vs direct | proxy overhead | avg latency (ms) | p99 (ms) | proxy CPU/request (µs) | proxy instructions/request | backend CPU/request (µs) | upstream connections/request |"
    echo "|---|---|---|---|---|---|---|---|---|---|"
    for row in $ROWS; do
        printf '| %s | %.0f | %.3f | %s | %s | %s | %s | %s | %.2f | %.4f |\n' "$row" "$(med "$row" 4)" \
            "$(awk -v a="$(med "$row" 4)" -v d="$DIRECT_RPS" 'BEGIN { print a / d }')" \
            "$([ "$row" = direct ] && echo - || awk -v v="$(med_overhead "$row")" 'BEGIN { printf "%.2f", v }')" \
            "$(ms "$(med "$row" 5)")" "$(ms "$(med "$row" 6)")" \
            "$([ "$row" = direct ] && echo - || awk -v v="$(med "$row" 9)" 'BEGIN { printf "%.2f", v }')" \
            "$(med "$row" 16 | awk '{ printf($1 == "nan" ? "-" : "%.0f", $1) }')" \
            "$(med "$row" 10)" "$(med "$row" 13)"
    done
    echo
    echo "### Targets (Portico against nginx-tuned)"
    echo
    echo "| target | Portico | nginx-tuned | ratio | verdict |"
    echo "|---|---|---|---|---|"
    awk -v rp="$(med portico 4)" -v rt="$(med nginx-tuned 4)" \
        -v pp="$(med portico 6)" -v pt="$(med nginx-tuned 6)" \
        -v op="$(med_overhead portico)" -v ot="$(med_overhead nginx-tuned)" 'BEGIN {
            printf "| req/s ≥ 1.1 × nginx-tuned | %.0f | %.0f | %.2f | %s |\n", rp, rt, rp / rt, (rp >= 1.1 * rt ? "PASS" : "FAIL")
            printf "| p99 < nginx-tuned | %.3f ms | %.3f ms | %.2f | %s |\n", pp / 1000, pt / 1000, pp / pt, (pp < pt ? "PASS" : "FAIL")
            printf "| proxy overhead < nginx-tuned | %.2f | %.2f | %.2f | %s |\n", op, ot, op / ot, (op < ot ? "PASS" : "FAIL")
        }'
    errors=$(awk -F'\t' '{ n += $7 } END { print n + 0 }' "$RUNS")
    if [ "$errors" -gt 0 ]; then
        echo
        echo "**Warning:** wrk reported $errors socket errors or non-2xx/3xx responses in total (column \"errors\")."
    fi
    if [ -s "$PROXY_LOG_LINES" ]; then
        echo
        echo "Proxy error-log lines at warn or above (count, most frequent first, timestamps and ids removed):"
        echo
        sed 's/^/    /' "$PROXY_LOG_LINES"
    fi
    echo "<!-- END $SECTION -->"
} >"$section"

cat "$section"
# Verdicts on stderr too, for a reader of the terminal.
grep -E '^\| (req/s|p99|proxy overhead) ' "$section" | awk -F'|' '{ gsub(/^ +| +$/, "", $2); gsub(/^ +| +$/, "", $6); printf "[bench] %s: %s\n", $2, $6 }' >&2
if [ "$RESULTS" != - ]; then
    splice_section "$RESULTS" "$SECTION" "$section"
    note "wrote the $SECTION section of $RESULTS"
fi
