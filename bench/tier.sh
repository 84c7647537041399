#!/usr/bin/env bash
# Scenario "tier": a cache tier found through DNS (issue 40). On loopback addresses:
#
#   127.0.0.2:DNS_PORT  dnsmasq, answering for cache.tier: A records, and SRV records
#                       _http._tcp.cache.tier -> node1/2/3.cache.tier:NODE_PORT
#   127.0.0.3-5         three Portico cache nodes (proxy_cache, max_size=NODE_CACHE each)
#   127.0.0.1           the origin (Portico, `return 200` with the key), one Portico node
#                       with the three nodes' cache size together (the hit-ratio baseline),
#                       the Portico front (`hash $request_uri consistent` over
#                       `server cache.tier service=http resolve`, resolver valid=1s), and an
#                       nginx front over the three node addresses written in its file
#                       (nginx 1.22 has no `resolve`: it changes members by a reload)
#
# and measures, with bench/lib/tier_client.py (Zipf-distributed keys, keep-alive):
#   1. the tier's hit ratio against the one big node, same key sequence;
#   2. the keys that move when node3 leaves DNS (hosts file rewritten, dnsmasq SIGHUP), and
#      come back when it returns; failed client requests while it happens (a load runs
#      throughout); how long the front takes to see each change;
#   3. the latency a front adds (p50, p99), one request at a time, to hits on node1;
#   4. the same for the nginx front, its members changed by a reload, and how many keys the
#      two fronts send to the same node.
#
#   bench/tier.sh
#
# Environment (defaults in brackets): KEYS [20000] ZIPF [0.9] REQUESTS [40000]
# THREADS [8] NODE_CACHE [8m] MAP_KEYS [3000] LATENCY_REQUESTS [2000]
# PORTICO_BIN, NGINX_BIN [nginx], DNSMASQ_BIN [dnsmasq], RESULTS [bench/RESULTS.md]
# ("-" = don't write), KEEP_TMP [0].

source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"

KEYS=${KEYS:-20000}
ZIPF=${ZIPF:-0.9}
REQUESTS=${REQUESTS:-40000}
THREADS=${THREADS:-8}
NODE_CACHE=${NODE_CACHE:-8m}
MAP_KEYS=${MAP_KEYS:-3000}
LATENCY_REQUESTS=${LATENCY_REQUESTS:-2000}
DNSMASQ_BIN=${DNSMASQ_BIN:-$(command -v dnsmasq || true)}
NGINX_BIN=${NGINX_BIN:-$(command -v nginx || true)}
RESULTS=${RESULTS:-$BENCH_DIR/RESULTS.md}
CLIENT="python3 $BENCH_DIR/lib/tier_client.py"

[ -n "$DNSMASQ_BIN" ] || die "dnsmasq not found (apt-get install -y dnsmasq)"
ensure_portico
make_work_dir tier
W=$WORK

DNS_PORT=$(free_port)
NODE_PORT=$(free_port)
ORIGIN_PORT=$(free_port)
BIG_PORT=$(free_port)
FRONT_PORT=$(free_port)
NGINX_PORT=$(free_port)
big=$(awk -v s="$NODE_CACHE" 'BEGIN { n = s + 0; u = substr(s, length(s)); print 3 * n u }')
# As root, the servers' workers would run as `nobody` and could not write the work dir.
USER_LINE=""
[ "$(id -u)" = 0 ] && USER_LINE="user root;"

# ---------------------------------------------------------------- configs ----
origin_conf() {
    cat <<EOF
daemon off; $USER_LINE worker_processes 1; error_log logs/error.log notice; pid logs/portico.pid;
events { worker_connections 4096; }
http {
    access_log off;
    server {
        listen 127.0.0.1:$ORIGIN_PORT;
        location / { return 200 "\$request_uri $(head -c 900 /dev/zero | tr '\0' x)\n"; }
    }
}
EOF
}

# node_conf NAME ADDRESS PORT MAX_SIZE
node_conf() {
    cat <<EOF
daemon off; $USER_LINE worker_processes 1; error_log logs/error.log notice; pid logs/portico.pid;
events { worker_connections 4096; }
http {
    access_log off;
    proxy_cache_path cache levels=1:2 keys_zone=c:16m max_size=$4 inactive=1h
                     use_temp_path=off;
    server {
        listen $2:$3;
        location / {
            proxy_pass http://127.0.0.1:$ORIGIN_PORT;
            proxy_cache c;
            proxy_cache_valid 200 1h;
            add_header X-Node $1;
            add_header X-Cache \$upstream_cache_status;
        }
    }
}
EOF
}

front_conf() {
    cat <<EOF
daemon off; $USER_LINE worker_processes 1; error_log logs/error.log notice; pid logs/portico.pid;
events { worker_connections 4096; }
http {
    access_log off;
    resolver 127.0.0.2:$DNS_PORT valid=1s;
    resolver_timeout 2s;
    upstream tier {
        zone tier 256k;
        hash \$request_uri consistent;
        server cache.tier service=http resolve;
        keepalive 64;
    }
    server {
        listen 127.0.0.1:$FRONT_PORT;
        location / {
            proxy_pass http://tier;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_next_upstream error timeout;
        }
    }
}
EOF
}

# nginx_conf NODE_ADDRESS...
nginx_conf() {
    local servers="" address
    for address in "$@"; do servers+="        server $address:$NODE_PORT;"$'\n'; done
    cat <<EOF
daemon off; $USER_LINE worker_processes 1; error_log logs/error.log notice; pid logs/nginx.pid;
events { worker_connections 4096; }
http {
    access_log off;
    upstream tier {
        hash \$request_uri consistent;
$servers        keepalive 64;
    }
    server {
        listen 127.0.0.1:$NGINX_PORT;
        location / {
            proxy_pass http://tier;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_next_upstream error timeout;
        }
    }
}
EOF
}

# hosts_file NODE_NUMBER...: A records of the nodes named, as node N and as cache.tier.
hosts_file() {
    local n
    for n in "$@"; do
        echo "127.0.0.$((n + 2)) node$n.cache.tier"
        echo "127.0.0.$((n + 2)) cache.tier"
    done
}

# ---------------------------------------------------------------- start ----
start_dnsmasq() {
    "$DNSMASQ_BIN" --keep-in-foreground --conf-file=/dev/null --log-facility="$W/dns/log" \
        --no-resolv --no-hosts --no-poll --addn-hosts="$W/dns/hosts" \
        --listen-address=127.0.0.2 --bind-interfaces --port="$DNS_PORT" --local=/tier/ \
        --srv-host="_http._tcp.cache.tier,node1.cache.tier,$NODE_PORT,0,1" \
        --srv-host="_http._tcp.cache.tier,node2.cache.tier,$NODE_PORT,0,1" \
        --srv-host="_http._tcp.cache.tier,node3.cache.tier,$NODE_PORT,0,1" \
        --user=root --pid-file="$W/dns/pid" &
    DNS_PID=$!
    STARTED_PIDS+=("$DNS_PID")
}

# start_at KIND NAME CONF_TEXT ADDRESS PORT: a server in its own prefix $W/NAME.
start_at() {
    local kind=$1 name=$2 text=$3 address=$4 port=$5 bin
    mkdir -p "$W/$name/logs"
    printf '%s\n' "$text" >"$W/$name/server.conf"
    case $kind in nginx) bin=$NGINX_BIN ;; *) bin=$PORTICO_BIN ;; esac
    "$bin" -p "$W/$name/" -e "$W/$name/logs/error.log" -c "$W/$name/server.conf" \
        >>"$W/$name/logs/stdout.log" 2>&1 &
    eval "${name^^}_PID=$!"
    STARTED_PIDS+=("$!")
    local deadline=$((SECONDS + 20))
    until curl -s -o /dev/null --max-time 1 "http://$address:$port/ready"; do
        [ $SECONDS -lt $deadline ] || { cat "$W/$name/logs/"* >&2; die "$name did not start"; }
        sleep 0.1
    done
}

mkdir -p "$W/dns"
hosts_file 1 2 3 >"$W/dns/hosts"
start_dnsmasq
start_at portico origin "$(origin_conf)" 127.0.0.1 "$ORIGIN_PORT"
for n in 1 2 3; do
    start_at portico "node$n" "$(node_conf "node$n" "127.0.0.$((n + 2))" "$NODE_PORT" "$NODE_CACHE")" \
        "127.0.0.$((n + 2))" "$NODE_PORT"
done
start_at portico big "$(node_conf big 127.0.0.1 "$BIG_PORT" "$big")" 127.0.0.1 "$BIG_PORT"
start_at portico front "$(front_conf)" 127.0.0.1 "$FRONT_PORT"
if [ -n "$NGINX_BIN" ]; then
    start_at nginx nginx "$(nginx_conf 127.0.0.3 127.0.0.4 127.0.0.5)" 127.0.0.1 "$NGINX_PORT"
fi

# The front has its three members once keys spread over three nodes.
deadline=$((SECONDS + 20))
until [ "$($CLIENT map 127.0.0.1 "$FRONT_PORT" --keys 60 --prefix /ready/ |
    python3 -c 'import json,sys; print(len(set(json.load(sys.stdin).values())))')" = 3 ]; do
    [ $SECONDS -lt $deadline ] || die "the front never found three nodes in DNS"
    sleep 0.2
done
note "front sees three nodes through DNS (SRV + A)"

# ---------------------------------------------------------- 1. hit ratio ----
json_field() { python3 -c "import json,sys; print(json.load(sys.stdin)$1)"; }
tier_run=$($CLIENT load 127.0.0.1 "$FRONT_PORT" --keys "$KEYS" --zipf "$ZIPF" \
    --requests "$REQUESTS" --threads "$THREADS" --seed 7)
big_run=$($CLIENT load 127.0.0.1 "$BIG_PORT" --keys "$KEYS" --zipf "$ZIPF" \
    --requests "$REQUESTS" --threads "$THREADS" --seed 7)
tier_hits=$(json_field "['hit_ratio']" <<<"$tier_run")
big_hits=$(json_field "['hit_ratio']" <<<"$big_run")
note "hit ratio: tier $tier_hits, one node with 3x the cache $big_hits"

# ------------------------------------------------- 2. members from DNS ----
$CLIENT map 127.0.0.1 "$FRONT_PORT" --keys "$MAP_KEYS" >"$W/map0.json"
# A load runs through every change and counts failures.
rm -f "$W/stop"
$CLIENT load 127.0.0.1 "$FRONT_PORT" --keys "$KEYS" --zipf "$ZIPF" --threads 4 \
    --seed 11 --until "$W/stop" >"$W/during.json" &
LOAD_PID=$!
sleep 1
probe_key=$(python3 -c "import json; m = json.load(open('$W/map0.json')); print(next(k for k, v in m.items() if v == 'node3'))")
hosts_file 1 2 >"$W/dns/hosts"
kill -HUP "$DNS_PID"
removed_after=$($CLIENT probe 127.0.0.1 "$FRONT_PORT" --key "$probe_key" --away node3)
sleep 1.5
$CLIENT map 127.0.0.1 "$FRONT_PORT" --keys "$MAP_KEYS" >"$W/map1.json"
hosts_file 1 2 3 >"$W/dns/hosts"
kill -HUP "$DNS_PID"
back_start=$(date +%s.%N)
deadline=$((SECONDS + 15))
back_after=timeout
while [ $SECONDS -lt $deadline ]; do
    node=$(curl -s -D - -o /dev/null "http://127.0.0.1:$FRONT_PORT$probe_key" | awk -F': ' 'tolower($1) == "x-node" { gsub(/\r/, "", $2); print $2 }')
    if [ "$node" = node3 ]; then
        back_after=$(awk -v a="$back_start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.3f", b - a }')
        break
    fi
    sleep 0.02
done
sleep 1.5
$CLIENT map 127.0.0.1 "$FRONT_PORT" --keys "$MAP_KEYS" >"$W/map2.json"
touch "$W/stop"
wait "$LOAD_PID"
during=$(cat "$W/during.json")
moves=$(python3 - "$W" <<'EOF'
import json, sys
w = sys.argv[1]
m0, m1, m2 = (json.load(open(f"{w}/map{i}.json")) for i in range(3))
keys = list(m0)
moved = sum(m0[k] != m1[k] for k in keys)
wrong = sum(m0[k] != m1[k] and m0[k] != "node3" for k in keys)
back = sum(m0[k] == m2[k] for k in keys)
on3 = sum(m0[k] == "node3" for k in keys)
print(f"{moved / len(keys):.4f} {wrong} {back / len(keys):.4f} {on3 / len(keys):.4f}")
EOF
)
read -r moved_fraction moved_wrongly returned_fraction node3_share <<<"$moves"
note "node3 removed: front changed after ${removed_after}s; moved $moved_fraction of keys (node3 held $node3_share, $moved_wrongly other keys moved); back after ${back_after}s, $returned_fraction returned"

# ------------------------------------------------------------ 3. latency ----
python3 -c "import json; m = json.load(open('$W/map2.json')); print(json.dumps([k for k, v in m.items() if v == 'node1']))" >"$W/node1_keys.json"
# Every one of them is a hit by now; once more to be sure.
$CLIENT latency 127.0.0.3 "$NODE_PORT" --keys-file "$W/node1_keys.json" --requests 500 >/dev/null
direct=$($CLIENT latency 127.0.0.3 "$NODE_PORT" --keys-file "$W/node1_keys.json" --requests "$LATENCY_REQUESTS")
via_front=$($CLIENT latency 127.0.0.1 "$FRONT_PORT" --keys-file "$W/node1_keys.json" --requests "$LATENCY_REQUESTS")
note "latency to node1's hits: direct $direct, via the Portico front $via_front"

# -------------------------------------------------------- 4. nginx front ----
nginx_row="nginx not installed"
if [ -n "$NGINX_BIN" ]; then
    via_nginx=$($CLIENT latency 127.0.0.1 "$NGINX_PORT" --keys-file "$W/node1_keys.json" --requests "$LATENCY_REQUESTS")
    $CLIENT map 127.0.0.1 "$NGINX_PORT" --keys "$MAP_KEYS" >"$W/nmap0.json"
    rm -f "$W/stop"
    $CLIENT load 127.0.0.1 "$NGINX_PORT" --keys "$KEYS" --zipf "$ZIPF" --threads 4 \
        --seed 11 --until "$W/stop" >"$W/nduring.json" &
    LOAD_PID=$!
    sleep 1
    nginx_conf 127.0.0.3 127.0.0.4 >"$W/nginx/server.conf"
    kill -HUP "$NGINX_PID"
    sleep 2
    $CLIENT map 127.0.0.1 "$NGINX_PORT" --keys "$MAP_KEYS" >"$W/nmap1.json"
    nginx_conf 127.0.0.3 127.0.0.4 127.0.0.5 >"$W/nginx/server.conf"
    kill -HUP "$NGINX_PID"
    sleep 2
    $CLIENT map 127.0.0.1 "$NGINX_PORT" --keys "$MAP_KEYS" >"$W/nmap2.json"
    touch "$W/stop"
    wait "$LOAD_PID"
    nduring=$(cat "$W/nduring.json")
    nmoves=$(python3 - "$W" <<'EOF'
import json, sys
w = sys.argv[1]
n0, n1, n2 = (json.load(open(f"{w}/nmap{i}.json")) for i in range(3))
p0 = json.load(open(f"{w}/map0.json"))
keys = list(n0)
moved = sum(n0[k] != n1[k] for k in keys)
back = sum(n0[k] == n2[k] for k in keys)
same = sum(n0[k] == p0[k] for k in keys)
print(f"{moved / len(keys):.4f} {back / len(keys):.4f} {same / len(keys):.4f}")
EOF
)
    read -r nmoved nreturned agree <<<"$nmoves"
    note "nginx front: latency $via_nginx; reload without node3 moved $nmoved, back $nreturned; fronts agree on $agree of keys"
fi

# dnsmasq stops on TERM (QUIT, which the cleanup sends first, it ignores).
kill -TERM "$DNS_PID" 2>/dev/null || true
stop_server "$DNS_PID"

# ------------------------------------------------------------ verdicts ----
verdict() { if python3 -c "import sys; sys.exit(0 if ($1) else 1)"; then echo pass; else echo FAIL; fi; }
v_hits=$(verdict "abs($tier_hits - $big_hits) <= 0.05")
v_moved=$(verdict "$moved_fraction <= 1/3 + 0.05 and $moved_wrongly == 0")
v_back=$(verdict "$returned_fraction >= 0.99")
failed_during=$(json_field "['failed']" <<<"$during")
v_failed=$(verdict "$failed_during == 0")
v_pickup=$(verdict "'$removed_after' != 'timeout' and '$back_after' != 'timeout' and $removed_after <= 2 and $back_after <= 2")

if [ "$RESULTS" != - ]; then
    section=$W/section.md
    p() { json_field "$1" <<<"$2"; }
    {
        echo "<!-- BEGIN tier -->"
        echo "## tier: a cache tier found through DNS (issue 40)"
        echo
        echo "Generated by \`bench/tier.sh\`, $(date -u '+%Y-%m-%d %H:%M') UTC, Portico commit $(cd "$REPO_DIR" && git rev-parse --short HEAD)."
        echo
        echo "- dnsmasq on 127.0.0.2 answers \`_http._tcp.cache.tier\` (SRV: node1..3.cache.tier, port $NODE_PORT) and their A records from a hosts file; a member leaves or returns by rewriting that file and SIGHUP"
        echo "- three Portico cache nodes on 127.0.0.3-5, \`max_size=$NODE_CACHE\` each; a fourth node with \`max_size=$big\` for the hit-ratio baseline; an origin answering 1 KiB per key"
        echo "- the Portico front: \`hash \$request_uri consistent\` over \`server cache.tier service=http resolve\`, \`resolver ... valid=1s\`, keepalive 64"
        echo "- load: $KEYS keys, Zipf s=$ZIPF, $THREADS keep-alive client threads (\`bench/lib/tier_client.py\`), $REQUESTS requests per hit-ratio run, the same key sequence for the tier and the big node"
        echo
        echo "| measure | value | target | verdict |"
        echo "|---|---|---|---|"
        echo "| hit ratio, tier (3 × $NODE_CACHE) | $tier_hits | within 0.05 of one node with $big | $v_hits |"
        echo "| hit ratio, one node with $big | $big_hits | | |"
        echo "| keys moved when node3 left DNS ($MAP_KEYS keys; node3 held $node3_share) | $moved_fraction ($moved_wrongly keys of other nodes) | ≤ 1/3 + 0.05, none of the others | $v_moved |"
        echo "| keys back on their node when node3 returned | $returned_fraction | all | $v_back |"
        echo "| failed client requests while DNS changed (of $(p "['requests']" "$during"); reconnects retried: $(p "['retried']" "$during")) | $failed_during | 0 | $v_failed |"
        echo "| front sees the removal / the return after | ${removed_after} s / ${back_after} s | ≤ valid + 1 s = 2 s | $v_pickup |"
        echo "| hits on node1, one at a time: direct p50 / p99 | $(p "['p50_ms']" "$direct") / $(p "['p99_ms']" "$direct") ms | | |"
        echo "| the same through the Portico front | $(p "['p50_ms']" "$via_front") / $(p "['p99_ms']" "$via_front") ms | | |"
        if [ -n "$NGINX_BIN" ]; then
            echo "| the same through the nginx front ($("$NGINX_BIN" -v 2>&1 | sed 's/.*\///'), static members) | $(p "['p50_ms']" "$via_nginx") / $(p "['p99_ms']" "$via_nginx") ms | | |"
            echo "| nginx front: keys moved by a reload without node3 / back after a reload with it | $nmoved / $nreturned | | |"
            echo "| nginx front: failed client requests across its two reloads (of $(p "['requests']" "$nduring")) | $(p "['failed']" "$nduring") | | |"
            echo "| keys the Portico and nginx fronts send to the same node | $agree | | |"
        fi
        echo
        echo "nginx 1.22 (open source) cannot \`resolve\` upstream names at run time: its front lists the node addresses and changes members by a reload; the rows above compare what it can do."
        echo "<!-- END tier -->"
    } >"$section"
    splice_section "$RESULTS" tier "$section"
    note "wrote the tier section of $RESULTS"
fi
note "verdicts: hits $v_hits, moved $v_moved, back $v_back, failed $v_failed, pickup $v_pickup"
