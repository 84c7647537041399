#!/usr/bin/env python3
"""Asks for every key once, to fill a cache, for bench/cache.sh (b2 and b6).

    fill_keys.py PORT PATH_PREFIX COUNT CONNECTIONS EXPECTED_FILE [EXTRA_PATH ...]

Requests PATH_PREFIX + "0" ... PATH_PREFIX + str(COUNT - 1), then every EXTRA_PATH, each
once, over CONNECTIONS keep-alive HTTP/1.1 connections to 127.0.0.1:PORT (a connection the
server closes, e.g. after `keepalive_requests`, is opened again and its request repeated), and
checks that every answer is 200 with the bytes of EXPECTED_FILE. Prints one line,
"requests=N ok=N reconnects=N seconds=S"; exits 1 if a path could not be fetched at all.
Only the standard library is used.
"""

import asyncio
import sys
import time


async def fetch(reader, writer, path):
    writer.write(f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".encode())
    head = await reader.readuntil(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split(" ")[1])
    length = 0
    close = False
    for line in lines[1:]:
        name, _, value = line.partition(":")
        name = name.strip().lower()
        if name == "content-length":
            length = int(value.strip())
        elif name == "connection" and value.strip().lower() == "close":
            close = True
    body = await reader.readexactly(length)
    return status, body, close


async def worker(port, paths, expected, counts):
    connection = None
    while paths:
        path = paths.pop()
        for attempt in range(3):
            if connection is None:
                connection = await asyncio.open_connection("127.0.0.1", port, limit=1 << 22)
            reader, writer = connection
            try:
                status, body, close = await fetch(reader, writer, path)
            except (asyncio.IncompleteReadError, ConnectionError):
                writer.close()
                connection = None
                counts[2] += 1
                if attempt == 2:
                    raise
                continue
            counts[0] += 1
            if status == 200 and body == expected:
                counts[1] += 1
            if close:
                writer.close()
                connection = None
            break
    if connection is not None:
        connection[1].close()


async def main():
    port, prefix, count, connections = int(sys.argv[1]), sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    with open(sys.argv[5], "rb") as f:
        expected = f.read()
    paths = [prefix + str(i) for i in range(count)] + sys.argv[6:]
    paths.reverse()
    counts = [0, 0, 0]
    started = time.monotonic()
    await asyncio.gather(*(worker(port, paths, expected, counts) for _ in range(connections)))
    print(f"requests={counts[0]} ok={counts[1]} reconnects={counts[2]} seconds={time.monotonic() - started:.1f}")


if __name__ == "__main__":
    asyncio.run(main())
