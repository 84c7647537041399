#!/usr/bin/env python3
"""DNS questions over UDP as fast as the answers come back, for bench/stream.sh.

    dns_load.py PORT NAME ADDRESS SECONDS SOCKETS

SOCKETS client sockets on 127.0.0.1, each with one question outstanding at a time: an A
question for NAME to 127.0.0.1:PORT. When its answer arrives (same id, no error, its last
record's address ADDRESS) the socket asks again with the next id, so that each socket is one
client asking one question after another. A question unanswered for 200 ms is counted lost
and asked again with a new id. Prints one line:

    answered N seconds S lost L wrong W p99_us P

where P is the 99th percentile of the answered questions' round trips (nearest rank).
Only the standard library is used.
"""

import selectors
import socket
import struct
import sys
import time

RETRY_AFTER = 0.2


def question(ident, labels):
    # RFC 1035 §4.1: header (recursion desired, one question), then QNAME, QTYPE A, QCLASS IN.
    return struct.pack(">HHHHHH", ident, 0x0100, 1, 0, 0, 0) + labels + b"\x00\x00\x01\x00\x01"


def main():
    port, name, address, seconds, sockets = sys.argv[1:6]
    port, seconds, sockets = int(port), float(seconds), int(sockets)
    labels = b"".join(bytes([len(part)]) + part.encode() for part in name.split("."))
    expected = socket.inet_aton(address)
    selector = selectors.DefaultSelector()
    clients = []
    for index in range(sockets):
        client = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        client.bind(("127.0.0.1", 0))
        client.connect(("127.0.0.1", port))
        client.setblocking(False)
        # Per socket: the id asked and when.
        state = {"socket": client, "id": index * 1000 % 65536, "sent": 0.0}
        clients.append(state)
        selector.register(client, selectors.EVENT_READ, state)
    answered = lost = wrong = 0
    round_trips = []
    started = time.monotonic()
    deadline = started + seconds

    def ask(state, now):
        state["id"] = (state["id"] + 1) % 65536
        state["sent"] = now
        try:
            state["socket"].send(question(state["id"], labels))
        except BlockingIOError:
            pass

    now = time.monotonic()
    for state in clients:
        ask(state, now)
    last_sweep = now
    while True:
        events = selector.select(timeout=0.05)
        now = time.monotonic()
        if now >= deadline:
            break
        for key, _ in events:
            state = key.data
            while True:
                try:
                    packet = state["socket"].recv(512)
                except (BlockingIOError, ConnectionRefusedError):
                    break
                if len(packet) < 12 or struct.unpack(">H", packet[:2])[0] != state["id"]:
                    continue  # An answer to a question already given up on.
                flags, _, answers = struct.unpack(">HHH", packet[2:8])
                if flags & 0x000F != 0 or answers == 0 or packet[-4:] != expected:
                    wrong += 1
                else:
                    answered += 1
                    round_trips.append(now - state["sent"])
                ask(state, now)
        if now - last_sweep >= RETRY_AFTER / 2:
            last_sweep = now
            for state in clients:
                if now - state["sent"] >= RETRY_AFTER:
                    lost += 1
                    ask(state, now)
    elapsed = time.monotonic() - started
    round_trips.sort()
    p99 = round_trips[max(0, -(-len(round_trips) * 99 // 100) - 1)] * 1e6 if round_trips else float("nan")
    print(f"answered {answered} seconds {elapsed:.3f} lost {lost} wrong {wrong} p99_us {p99:.0f}")


if __name__ == "__main__":
    main()
