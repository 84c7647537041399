#!/usr/bin/env python3
"""Scenario "tunnel": bulk bytes through a CONNECT tunnel (`tunnel_pass`), in one run:

  direct         client -> sink
  portico        client -> Portico `tunnel_pass` (CONNECT, then the relay) -> sink
  nginx-stream   client -> nginx `stream { proxy_pass }` -> sink  (nginx 1.22 has no
                 tunnel module; its stream relay is the nearest thing to compare with)

Each run sends SIZE_MIB MiB upstream through one connection and PARALLEL connections at
once; the sink counts and discards. Reports MiB/s per row, medians of REPS runs, and
each server's CPU seconds per GiB (from /proc/PID/stat).

  flock /tmp/portico-bench.lock timeout 600 python3 bench/tunnel.py PORTICO_BINARY

Environment: REPS [5] SIZE_MIB [1024] PARALLEL [4] TUNNEL_BUFFER [4k] NGINX
[/usr/sbin/nginx, skipped if absent] NGINX_STREAM_MODULE
[/usr/lib/nginx/modules/ngx_stream_module.so].
"""

import os
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time

REPS = int(os.environ.get("REPS", "5"))
SIZE = int(os.environ.get("SIZE_MIB", "1024")) * 1024 * 1024
PARALLEL = int(os.environ.get("PARALLEL", "4"))
NGINX = os.environ.get("NGINX", "/usr/sbin/nginx")
STREAM_MODULE = os.environ.get(
    "NGINX_STREAM_MODULE", "/usr/lib/nginx/modules/ngx_stream_module.so"
)
CHUNK = 256 * 1024
# `tunnel_buffer_size` (nginx's default is the page size; its stream relay's is 16k).
TUNNEL_BUFFER = os.environ.get("TUNNEL_BUFFER", "4k")


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def sink(listener):
    """Accepts connections forever; each is read to its end and dropped."""

    def drain(connection):
        with connection:
            while connection.recv(CHUNK):
                pass

    while True:
        connection, _ = listener.accept()
        threading.Thread(target=drain, args=(connection,), daemon=True).start()


def wait_listening(port, deadline=10.0):
    end = time.monotonic() + deadline
    while time.monotonic() < end:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.05)
    sys.exit(f"nothing listens on {port}")


def cpu_seconds(pid):
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def send(port, connect_target):
    stream = socket.create_connection(("127.0.0.1", port))
    if connect_target:
        stream.sendall(
            f"CONNECT {connect_target} HTTP/1.1\r\nHost: {connect_target}\r\n\r\n".encode()
        )
        head = b""
        while b"\r\n\r\n" not in head:
            piece = stream.recv(4096)
            if not piece:
                sys.exit("the tunnel closed before its head")
            head += piece
        if not head.startswith(b"HTTP/1.1 200 "):
            sys.exit(f"no tunnel: {head!r}")
    block = b"x" * CHUNK
    left = SIZE // PARALLEL
    while left > 0:
        sent = stream.send(block[: min(left, CHUNK)])
        left -= sent
    stream.shutdown(socket.SHUT_WR)
    while stream.recv(CHUNK):
        pass
    stream.close()


def run(port, connect_target):
    threads = [
        threading.Thread(target=send, args=(port, connect_target)) for _ in range(PARALLEL)
    ]
    start = time.monotonic()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return SIZE / (1024 * 1024) / (time.monotonic() - start)


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    portico = sys.argv[1]
    work = tempfile.mkdtemp(prefix="tunnel-bench-")
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(256)
    sink_port = listener.getsockname()[1]
    threading.Thread(target=sink, args=(listener,), daemon=True).start()

    servers = {}
    portico_port = free_port()
    os.makedirs(f"{work}/portico/logs")
    with open(f"{work}/portico/portico.conf", "w") as conf:
        conf.write(
            "daemon off; worker_processes 1; error_log logs/error.log;\n"
            "events {}\nhttp { access_log off;\n"
            f"  server {{ listen 127.0.0.1:{portico_port}; tunnel_pass;\n"
            f"           tunnel_buffer_size {TUNNEL_BUFFER}; }} }}\n"
        )
    servers["portico"] = (
        subprocess.Popen([portico, "-p", f"{work}/portico", "-c", "portico.conf"]),
        portico_port,
        f"127.0.0.1:{sink_port}",
    )
    if os.path.exists(NGINX) and os.path.exists(STREAM_MODULE):
        nginx_port = free_port()
        os.makedirs(f"{work}/nginx/logs")
        with open(f"{work}/nginx/nginx.conf", "w") as conf:
            conf.write(
                f"load_module {STREAM_MODULE};\n"
                "daemon off; worker_processes 1; error_log logs/error.log;\n"
                f"pid {work}/nginx/nginx.pid;\nevents {{}}\n"
                f"stream {{ server {{ listen 127.0.0.1:{nginx_port}; "
                f"proxy_pass 127.0.0.1:{sink_port}; }} }}\n"
            )
        servers["nginx-stream"] = (
            subprocess.Popen([NGINX, "-p", f"{work}/nginx", "-c", "nginx.conf"]),
            nginx_port,
            None,
        )
    try:
        for _, port, _ in servers.values():
            wait_listening(port)
        rows = {"direct": [], **{name: [] for name in servers}}
        cpu = {name: [] for name in servers}
        for rep in range(REPS):
            rows["direct"].append(run(sink_port, None))
            for name, (process, port, target) in servers.items():
                # nginx's worker is the master's child: count the whole process group.
                pids = [process.pid] + [
                    int(pid)
                    for pid in subprocess.run(
                        ["pgrep", "-P", str(process.pid)], capture_output=True, text=True
                    ).stdout.split()
                ]
                before = sum(cpu_seconds(pid) for pid in pids)
                rows[name].append(run(port, target))
                used = sum(cpu_seconds(pid) for pid in pids) - before
                cpu[name].append(used / (SIZE / 1024**3))
            print(
                f"rep {rep + 1}: "
                + ", ".join(f"{name} {values[-1]:.0f} MiB/s" for name, values in rows.items()),
                flush=True,
            )
        for name, values in rows.items():
            line = f"{name:13} median {statistics.median(values):.0f} MiB/s"
            if name in cpu:
                line += f", CPU {statistics.median(cpu[name]):.2f} s/GiB"
            print(line)
    finally:
        for process, _, _ in servers.values():
            process.terminate()
            process.wait(timeout=10)


if __name__ == "__main__":
    main()
