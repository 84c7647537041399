#!/bin/sh
# Writes nginx-1.22.1/ again with Debian's nginx (apt-get install -y nginx-core): a caching
# proxy on a free port in front of a second server of the same nginx on port 42679 (the
# keys name it, so it is fixed). Run as root from this directory.
set -eu
backend=42679
prefix=$(mktemp -d)
front=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
mkdir -p "$prefix/logs" "$prefix/conf"
cat > "$prefix/conf/nginx.conf" <<CONF
user root;
daemon on;
pid $prefix/nginx.pid;
error_log $prefix/logs/error.log info;
events { worker_connections 64; }
http {
  access_log off;
  client_body_temp_path $prefix/ct; proxy_temp_path $prefix/pt; fastcgi_temp_path $prefix/ft;
  uwsgi_temp_path $prefix/ut; scgi_temp_path $prefix/st;
  proxy_cache_path $prefix/cache levels=1:2 keys_zone=gold:1m use_temp_path=off;
  server {
    listen 127.0.0.1:$front;
    location / { proxy_pass http://127.0.0.1:$backend; proxy_cache gold; proxy_cache_valid 200 10m; }
  }
  server {
    listen 127.0.0.1:$backend;
    location /etag {
      add_header ETag '"v1-abc"'; add_header Last-Modified 'Tue, 15 Nov 1994 12:45:26 GMT';
      return 200 "hello etag\n";
    }
    location /vary { add_header Vary Accept-Language; return 200 "hello vary\n"; }
    location /xvary { add_header Vary "X-Test, Accept-Encoding"; return 200 "hello x\n"; }
  }
}
CONF
nginx -p "$prefix" -c "$prefix/conf/nginx.conf"
sleep 0.5
curl -s -o /dev/null "http://127.0.0.1:$front/etag"
curl -s -o /dev/null -H 'Accept-Language: en-US, fr;q=0.5' "http://127.0.0.1:$front/vary"
curl -s -o /dev/null -H 'Accept-Language: de' "http://127.0.0.1:$front/vary"
curl -s -o /dev/null -H 'X-Test: a, b' -H 'X-Test: c' -H 'Accept-Encoding: gzip,  br' \
  -H 'Accept-Encoding: zstd' "http://127.0.0.1:$front/xvary"
sleep 0.5
kill "$(cat "$prefix/nginx.pid")"
sleep 0.5
rm -rf nginx-1.22.1
cp -a "$prefix/cache" nginx-1.22.1
chmod -R u+rwX,go+rX nginx-1.22.1
grep -E '\[(alert|crit|emerg)\]' "$prefix/logs/error.log" && exit 1
rm -rf "$prefix"
find nginx-1.22.1 -type f
