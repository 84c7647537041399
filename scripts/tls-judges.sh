#!/usr/bin/env bash
# Runs the two external TLS judges against Portico: testssl.sh (protocols, cipher
# categories, vulnerabilities, ciphers per protocol) and sslyze's check against Mozilla's
# "intermediate" configuration. Portico serves an RSA-2048 and an ECDSA P-256 certificate
# issued by a throwaway CA (given to sslyze with --certinfo_ca_file, since no public CA
# signs a test certificate), TLSv1.2 and TLSv1.3, a shared session cache, HSTS: the
# configuration Mozilla's generator gives for "intermediate", in Portico's syntax.
#
#   scripts/tls-judges.sh [OUTPUT_DIR]          (needs: openssl, testssl or testssl.sh, and
#                                                sslyze, e.g. `pip install sslyze` in a venv:
#                                                SSLYZE="/path/venv/bin/python -m sslyze")
# Environment: PORTICO_BIN [target/release/portico], PORT [18443], SSLYZE [sslyze].
# Exit status: 0 when testssl reports no "NOT ok" and no "VULNERABLE" and sslyze says
# "Compliant"; 1 otherwise. The full reports are left in OUTPUT_DIR.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-$(mktemp -d)}
mkdir -p "$out"
bin=${PORTICO_BIN:-$root/target/release/portico}
port=${PORT:-18443}
sslyze=${SSLYZE:-sslyze}
testssl=$(command -v testssl || command -v testssl.sh) || {
    echo "tls-judges: testssl is not installed (apt-get install testssl.sh)" >&2
    exit 2
}
prefix=$(mktemp -d)
trap 'kill "$pid" 2>/dev/null || true; rm -rf "$prefix"' EXIT
cd "$prefix"
mkdir logs html
echo judged >html/index.html
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout ca.key -out ca.crt \
    -days 2 -subj /CN=tls-judges-ca -addext basicConstraints=critical,CA:true \
    -addext keyUsage=critical,keyCertSign,cRLSign 2>/dev/null
printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth\nbasicConstraints=CA:false\n' >ext.cnf
for kind in rsa ec; do
    if [ "$kind" = rsa ]; then key=(-newkey rsa:2048); else key=(-newkey ec -pkeyopt ec_paramgen_curve:P-256); fi
    openssl req "${key[@]}" -nodes -keyout "$kind.key" -out "$kind.csr" -subj /CN=localhost 2>/dev/null
    openssl x509 -req -in "$kind.csr" -CA ca.crt -CAkey ca.key -CAcreateserial -days 2 \
        -out "$kind.crt" -extfile ext.cnf 2>/dev/null
done
cat >portico.conf <<CONF
worker_processes 1;
error_log logs/error.log info;
pid logs/portico.pid;
events {}
http {
    access_log off;
    server {
        listen 127.0.0.1:$port ssl;
        server_name localhost;
        ssl_certificate rsa.crt; ssl_certificate_key rsa.key;
        ssl_certificate ec.crt; ssl_certificate_key ec.key;
        ssl_protocols TLSv1.2 TLSv1.3;
        ssl_session_cache shared:SSL:10m;
        ssl_session_timeout 1d;
        add_header Strict-Transport-Security "max-age=63072000" always;
        location / { root html; }
    }
}
CONF
"$bin" -p "$prefix" -c portico.conf -g 'daemon off;' &
pid=$!
for _ in $(seq 50); do
    curl -skf "https://127.0.0.1:$port/" >/dev/null 2>&1 && break
    sleep 0.1
done
status=0
timeout 900 "$testssl" --quiet --color 0 -p -s -U -E "127.0.0.1:$port" >"$out/testssl.txt" 2>&1 || true
if grep -q 'NOT ok\|VULNERABLE' "$out/testssl.txt"; then
    echo "tls-judges: testssl found problems:"
    grep 'NOT ok\|VULNERABLE' "$out/testssl.txt"
    status=1
else
    echo "tls-judges: testssl: no \"NOT ok\", nothing vulnerable ($out/testssl.txt)"
fi
# shellcheck disable=SC2086
timeout 600 $sslyze --mozilla_config=intermediate --certinfo_ca_file ca.crt "127.0.0.1:$port" \
    >"$out/sslyze.txt" 2>&1 || true
if grep -q 'OK - Compliant' "$out/sslyze.txt"; then
    echo "tls-judges: sslyze: compliant with Mozilla's intermediate configuration ($out/sslyze.txt)"
else
    echo "tls-judges: sslyze: not compliant:"
    sed -n '/COMPLIANCE AGAINST/,$p' "$out/sslyze.txt"
    status=1
fi
exit "$status"
