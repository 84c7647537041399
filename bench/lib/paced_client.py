#!/usr/bin/env python3
"""Sends GET requests at a fixed rate for a fixed time, over a few keep-alive connections,
and prints what it saw: used by bench/auth_basic.sh for its 100 requests/s of basic
authentication next to a wrk load.

    paced_client.py PORT PATH RATE SECONDS CONNECTIONS [HEADER: VALUE ...]

Each connection sends at RATE / CONNECTIONS requests per second on its own schedule
(request i at start + i * period, never earlier; a late request is sent at once and the
schedule is kept, so a slow server is not given more time). Prints one line:

    sent=N rate=R statuses=200:N,... p50_ms=.. p99_ms=.. max_ms=.. late_p99_ms=..

where late is how far behind its schedule a request was sent (the client's own lag).
"""

import http.client
import sys
import threading
import time


def main():
    port, path = int(sys.argv[1]), sys.argv[2]
    rate, seconds, connections = float(sys.argv[3]), float(sys.argv[4]), int(sys.argv[5])
    headers = {}
    for header in sys.argv[6:]:
        name, value = header.split(":", 1)
        headers[name.strip()] = value.strip()
    period = connections / rate
    start = time.monotonic() + 0.2
    end = start + seconds
    lock = threading.Lock()
    latencies, lateness, statuses = [], [], {}

    def run(index):
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        due = start + index * period / connections
        while due < end:
            now = time.monotonic()
            if due > now:
                time.sleep(due - now)
            sent = time.monotonic()
            try:
                conn.request("GET", path, headers=headers)
                response = conn.getresponse()
                response.read()
                status = str(response.status)
                if response.getheader("Connection", "").lower() == "close":
                    conn.close()
                    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
            except (OSError, http.client.HTTPException) as error:
                status = type(error).__name__
                conn.close()
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
            took = time.monotonic() - sent
            with lock:
                latencies.append(took)
                lateness.append(max(0.0, sent - due))
                statuses[status] = statuses.get(status, 0) + 1
            due += period
        conn.close()

    threads = [threading.Thread(target=run, args=(i,)) for i in range(connections)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    def percentile(values, fraction):
        if not values:
            return float("nan")
        ordered = sorted(values)
        return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]

    sent = len(latencies)
    print(
        f"sent={sent} rate={sent / seconds:.1f} "
        f"statuses={','.join(f'{k}:{v}' for k, v in sorted(statuses.items()))} "
        f"p50_ms={percentile(latencies, 0.5) * 1000:.2f} p99_ms={percentile(latencies, 0.99) * 1000:.2f} "
        f"max_ms={max(latencies, default=float('nan')) * 1000:.2f} "
        f"late_p99_ms={percentile(lateness, 0.99) * 1000:.2f}"
    )


if __name__ == "__main__":
    main()
