#!/usr/bin/env python3
"""A slow origin for bench/cache.sh (coalescing scenarios B5a and B5b).

    slow_origin.py PORT BODY_FILE

Listens on 127.0.0.1:PORT. `GET /slow/RATE/NAME` waits DELAY seconds (query `?delay=` is not
used: the delay is fixed by the environment variable SLOW_ORIGIN_DELAY, default 1), then answers
200 with `Content-Length` and the bytes of BODY_FILE, paced to RATE bytes per second, with
`Cache-Control: max-age=86400`. `GET /__stats` answers one line, "REQUESTS BYTES", the number of
/slow/ requests received and of body bytes sent so far (whole process). Every other path: 404.
HTTP/1.1 keep-alive is honoured. Only the standard library is used.
"""

import asyncio
import os
import sys
import time

CHUNK = 64 * 1024


class Stats:
    requests = 0
    body_bytes = 0


async def send_paced(writer, body, rate):
    """Writes body at `rate` bytes per second, in CHUNK pieces on a schedule."""
    started = time.monotonic()
    sent = 0
    while sent < len(body):
        piece = body[sent:sent + CHUNK]
        writer.write(piece)
        await writer.drain()
        sent += len(piece)
        Stats.body_bytes += len(piece)
        due = started + sent / rate
        delay = due - time.monotonic()
        if delay > 0:
            await asyncio.sleep(delay)


async def handle(reader, writer, body, delay):
    try:
        while True:
            head = await reader.readuntil(b"\r\n\r\n")
            request_line = head.split(b"\r\n", 1)[0].decode("latin-1")
            parts = request_line.split(" ")
            if len(parts) != 3:
                return
            method, target, _version = parts
            lower = head.lower()
            # No request bodies are expected; a proxy sends none for GET.
            if target == "/__stats":
                text = f"{Stats.requests} {Stats.body_bytes}\n".encode()
                writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: "
                             + str(len(text)).encode() + b"\r\n\r\n" + text)
                await writer.drain()
                continue
            path = target.split("?", 1)[0]
            fields = path.split("/")
            if len(fields) != 4 or fields[1] != "slow" or not fields[2].isdigit():
                writer.write(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n")
                await writer.drain()
                continue
            rate = int(fields[2])
            Stats.requests += 1
            await asyncio.sleep(delay)
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\n"
                         b"Cache-Control: max-age=86400\r\nContent-Length: "
                         + str(len(body)).encode() + b"\r\n\r\n")
            if method != "HEAD":
                await send_paced(writer, body, rate)
            else:
                await writer.drain()
            if b"connection: close" in lower:
                return
    except (asyncio.IncompleteReadError, ConnectionError, asyncio.LimitOverrunError):
        return
    finally:
        writer.close()


async def main():
    port = int(sys.argv[1])
    with open(sys.argv[2], "rb") as f:
        body = f.read()
    delay = float(os.environ.get("SLOW_ORIGIN_DELAY", "1"))
    server = await asyncio.start_server(lambda r, w: handle(r, w, body, delay),
                                        "127.0.0.1", port, backlog=1024)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    asyncio.run(main())
