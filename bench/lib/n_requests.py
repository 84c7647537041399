#!/usr/bin/env python3
"""Sends exactly N GET requests, one after another, over one keep-alive connection, and
fails unless every answer has the expected status: used by bench/limits.sh's callgrind
pass, which divides a server's instruction count by a known number of requests.

    n_requests.py PORT PATH N [STATUS]
"""

import http.client
import sys


def main():
    port, path, count = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
    expected = int(sys.argv[4]) if len(sys.argv) > 4 else 200
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    for index in range(count):
        conn.request("GET", path)
        response = conn.getresponse()
        response.read()
        if response.status != expected:
            sys.exit(f"request {index + 1} of {count} to {path}: status {response.status}, expected {expected}")
        if response.will_close:
            conn.close()
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    conn.close()
    print(f"sent={count}")


if __name__ == "__main__":
    main()
