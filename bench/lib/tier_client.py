#!/usr/bin/env python3
"""The client of bench/tier.sh: keep-alive HTTP/1.1 GETs that note which cache node
answered (X-Node), whether it was a hit (X-Cache) and how long each took.

  tier_client.py load HOST PORT --keys N --zipf S --requests R --threads T --seed X
      Zipf-distributed keys /k/0 .. /k/N-1 (key i has weight 1/(i+1)^S), the same
      sequence for a given seed; prints JSON: requests, failed, hits, by node, p50/p99 ms.
      With --until FILE the threads stop when FILE exists instead of after R requests.
  tier_client.py map HOST PORT --keys N [--prefix /m/]
      GETs each key once; prints JSON {key: node}.
  tier_client.py probe HOST PORT --key K --away NODE --deadline SECONDS
      Asks for K until a node other than NODE answers; prints the seconds it took.
  tier_client.py latency HOST PORT --keys-file F --requests R
      One connection, one request at a time over the keys in F (JSON list); prints p50/p99 ms.
"""

import argparse
import bisect
import http.client
import json
import os
import random
import sys
import threading
import time


class Connection:
    """A keep-alive connection that reconnects once when the server closed it."""

    def __init__(self, host, port):
        self.host, self.port = host, port
        self.conn = None
        self.retries = 0

    def get(self, path):
        for attempt in range(2):
            if self.conn is None:
                self.conn = http.client.HTTPConnection(self.host, self.port, timeout=10)
            try:
                self.conn.request("GET", path, headers={"Host": "tier"})
                response = self.conn.getresponse()
                response.read()
                return response.status, response.getheader("X-Node", ""), response.getheader(
                    "X-Cache", "")
            except (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError):
                self.conn.close()
                self.conn = None
                # A kept connection the server closed between requests: retried once, as
                # a browser does. A second failure counts.
                if attempt == 1:
                    raise
                self.retries += 1
        raise RuntimeError("unreachable")


def percentile(values, fraction):
    if not values:
        return float("nan")
    values = sorted(values)
    return values[min(len(values) - 1, int(fraction * len(values)))]


def zipf_cumulative(keys, s):
    total, cumulative = 0.0, []
    for rank in range(keys):
        total += 1.0 / (rank + 1) ** s
        cumulative.append(total)
    return cumulative


def load(args):
    cumulative = zipf_cumulative(args.keys, args.zipf)
    lock = threading.Lock()
    stats = {"requests": 0, "failed": 0, "retried": 0, "hits": 0, "nodes": {}, "errors": []}
    times = []
    per_thread = args.requests // args.threads

    def worker(index):
        rng = random.Random(args.seed * 1000 + index)
        conn = Connection(args.host, args.port)
        local_times, local = [], {"requests": 0, "failed": 0, "hits": 0, "nodes": {}}
        errors = []
        done = 0
        while True:
            if args.until:
                if os.path.exists(args.until):
                    break
            elif done >= per_thread:
                break
            done += 1
            key = bisect.bisect_left(cumulative, rng.random() * cumulative[-1])
            started = time.perf_counter()
            try:
                status, node, cache = conn.get(f"/k/{key}")
            except Exception as error:  # noqa: BLE001 - every failure is counted
                status, node, cache = 0, "", ""
                errors.append(repr(error))
            local_times.append((time.perf_counter() - started) * 1000)
            local["requests"] += 1
            if status != 200:
                local["failed"] += 1
                if status:
                    errors.append(f"status {status}")
            if cache == "HIT":
                local["hits"] += 1
            local["nodes"][node] = local["nodes"].get(node, 0) + 1
        with lock:
            for name in ("requests", "failed", "hits"):
                stats[name] += local[name]
            stats["retried"] += conn.retries
            for node, count in local["nodes"].items():
                stats["nodes"][node] = stats["nodes"].get(node, 0) + count
            times.extend(local_times)
            stats["errors"].extend(errors[:5])

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(args.threads)]
    started = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    stats["seconds"] = round(time.perf_counter() - started, 2)
    stats["hit_ratio"] = round(stats["hits"] / max(1, stats["requests"]), 4)
    stats["p50_ms"] = round(percentile(times, 0.50), 3)
    stats["p99_ms"] = round(percentile(times, 0.99), 3)
    print(json.dumps(stats))


def mapping(args):
    conn = Connection(args.host, args.port)
    result = {}
    for key in range(args.keys):
        path = f"{args.prefix}{key}"
        status, node, _ = conn.get(path)
        result[path] = node if status == 200 else f"status {status}"
    print(json.dumps(result))


def probe(args):
    conn = Connection(args.host, args.port)
    started = time.perf_counter()
    while time.perf_counter() - started < args.deadline:
        try:
            status, node, _ = conn.get(args.key)
        except Exception:  # noqa: BLE001 - a failure is one more try
            status, node = 0, ""
        if status == 200 and node != args.away:
            print(round(time.perf_counter() - started, 3))
            return
        time.sleep(0.02)
    print("timeout")


def latency(args):
    with open(args.keys_file) as file:
        keys = json.load(file)
    conn = Connection(args.host, args.port)
    times = []
    for index in range(args.requests):
        started = time.perf_counter()
        status, _, _ = conn.get(keys[index % len(keys)])
        times.append((time.perf_counter() - started) * 1000)
        if status != 200:
            print(json.dumps({"failed": status}))
            return
    print(json.dumps({"p50_ms": round(percentile(times, 0.5), 3),
                      "p99_ms": round(percentile(times, 0.99), 3)}))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("mode", choices=["load", "map", "probe", "latency"])
    parser.add_argument("host")
    parser.add_argument("port", type=int)
    parser.add_argument("--keys", type=int, default=1000)
    parser.add_argument("--zipf", type=float, default=1.0)
    parser.add_argument("--requests", type=int, default=10000)
    parser.add_argument("--threads", type=int, default=8)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--until")
    parser.add_argument("--prefix", default="/m/")
    parser.add_argument("--key")
    parser.add_argument("--away")
    parser.add_argument("--deadline", type=float, default=15)
    parser.add_argument("--keys-file")
    args = parser.parse_args()
    {"load": load, "map": mapping, "probe": probe, "latency": latency}[args.mode](args)


if __name__ == "__main__":
    sys.exit(main())
