#!/usr/bin/env python3
"""N clients ask one URL at the same moment, for bench/cache.sh (scenarios B5a and B5b).

    burst_client.py PORT PATH CLIENTS EXPECTED_FILE TIMEOUT PER_CLIENT_TSV

Opens CLIENTS connections to 127.0.0.1:PORT first, then writes `GET PATH` on all of them in
one loop (the burst), and reads every response to its end. Per client it records the status,
the `X-Cache-Status` field, the time to the first byte of the response and to its last byte
(seconds from the moment the burst started), the body length, and whether the body equals
EXPECTED_FILE (SHA-256). PER_CLIENT_TSV receives one line per client; stdout receives one line
of KEY=VALUE pairs that summarise them:

    clients ok statuses filler_ttfb filler_ttlb waiters ttfb_p50 ttfb_p99 ttfb_max ttlb_p50 ttlb_p99

"ok" counts clients with status 200 and the expected body. The filler is the client whose
response says MISS (the earliest first byte if several do, as when waiters time out on the
lock and go to the origin themselves; none if none); waiters are all the others.
Percentiles are nearest-rank. Only the standard library is used.
"""

import asyncio
import hashlib
import math
import sys
import time


def percentile(values, p):
    if not values:
        return float("nan")
    ordered = sorted(values)
    rank = max(1, math.ceil(p / 100 * len(ordered)))
    return ordered[rank - 1]


async def one(index, reader, writer, request, start_event, t0_box, expected, timeout):
    result = {"index": index, "status": 0, "cache": "-", "ttfb": float("nan"),
              "ttlb": float("nan"), "bytes": 0, "ok": False, "error": ""}
    await start_event.wait()
    try:
        async def exchange():
            head = b""
            while b"\r\n\r\n" not in head:
                data = await reader.read(65536)
                if not data:
                    raise ConnectionError("closed before the head")
                if not head:
                    result["ttfb"] = time.monotonic() - t0_box[0]
                head += data
            head, rest = head.split(b"\r\n\r\n", 1)
            lines = head.decode("latin-1").split("\r\n")
            result["status"] = int(lines[0].split(" ")[1])
            length = None
            for line in lines[1:]:
                name, _, value = line.partition(":")
                name = name.strip().lower()
                if name == "content-length":
                    length = int(value.strip())
                elif name == "x-cache-status":
                    result["cache"] = value.strip() or "-"
            if length is None:
                raise ValueError("no Content-Length")
            digest = hashlib.sha256()
            digest.update(rest)
            got = len(rest)
            while got < length:
                data = await reader.read(1 << 20)
                if not data:
                    raise ConnectionError(f"closed after {got} of {length} body bytes")
                digest.update(data)
                got += len(data)
            result["ttlb"] = time.monotonic() - t0_box[0]
            result["bytes"] = got
            result["ok"] = result["status"] == 200 and got == len(expected[0]) \
                and digest.digest() == expected[1]

        await asyncio.wait_for(exchange(), timeout)
    except Exception as error:  # recorded per client, never fatal
        result["error"] = f"{type(error).__name__}: {error}".replace("\t", " ")
    finally:
        writer.close()
    return result


async def main():
    port, path, clients = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
    with open(sys.argv[4], "rb") as f:
        body = f.read()
    expected = (body, hashlib.sha256(body).digest())
    timeout = float(sys.argv[5])
    out = sys.argv[6]
    request = (f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n").encode()
    connections = []
    for _ in range(clients):
        connections.append(await asyncio.open_connection("127.0.0.1", port, limit=1 << 22))
    start_event = asyncio.Event()
    t0_box = [0.0]
    tasks = [asyncio.create_task(one(i, r, w, request, start_event, t0_box, expected, timeout))
             for i, (r, w) in enumerate(connections)]
    await asyncio.sleep(0.05)
    t0_box[0] = time.monotonic()
    for _, writer in connections:
        writer.write(request)
    start_event.set()
    results = await asyncio.gather(*tasks)

    with open(out, "w") as f:
        f.write("index\tstatus\tcache\tttfb_s\tttlb_s\tbytes\tok\terror\n")
        for r in results:
            f.write(f"{r['index']}\t{r['status']}\t{r['cache']}\t{r['ttfb']:.4f}\t{r['ttlb']:.4f}"
                    f"\t{r['bytes']}\t{int(r['ok'])}\t{r['error']}\n")
    statuses = {}
    for r in results:
        key = f"{r['status']}:{r['cache']}"
        statuses[key] = statuses.get(key, 0) + 1
    fillers = [r for r in results if r["cache"] == "MISS" and not math.isnan(r["ttfb"])]
    filler = min(fillers, key=lambda r: r["ttfb"]) if fillers else None
    waiters = [r for r in results if r is not filler]
    ttfb = [r["ttfb"] for r in waiters if not math.isnan(r["ttfb"])]
    ttlb = [r["ttlb"] for r in waiters if not math.isnan(r["ttlb"])]
    summary = {
        "clients": len(results),
        "ok": sum(1 for r in results if r["ok"]),
        "statuses": ",".join(f"{k}={v}" for k, v in sorted(statuses.items())),
        "filler_ttfb": f"{filler['ttfb']:.4f}" if filler else "nan",
        "filler_ttlb": f"{filler['ttlb']:.4f}" if filler else "nan",
        "waiters": len(waiters),
        "ttfb_p50": f"{percentile(ttfb, 50):.4f}",
        "ttfb_p99": f"{percentile(ttfb, 99):.4f}",
        "ttfb_max": f"{max(ttfb) if ttfb else float('nan'):.4f}",
        "ttlb_p50": f"{percentile(ttlb, 50):.4f}",
        "ttlb_p99": f"{percentile(ttlb, 99):.4f}",
    }
    print(" ".join(f"{k}={v}" for k, v in summary.items()))


if __name__ == "__main__":
    asyncio.run(main())
