#!/usr/bin/env python3
"""A TCP relay that moves bytes with splice(2) through a pipe, never through its own memory,
for bench/stream_copies.sh: the cost of a relay without the two copies per byte of a
read/write relay, to set beside nginx's and Portico's.

    splice_relay.py LISTEN_PORT UPSTREAM_PORT

Listens on 127.0.0.1:LISTEN_PORT; each connection gets a connection to
127.0.0.1:UPSTREAM_PORT and one thread per direction: splice from the socket into a pipe,
then from the pipe into the other socket, up to PIPE_BYTES at a time. A direction that ends
shuts the other socket's write side. Runs until killed. Only the standard library is used.
"""

import fcntl
import os
import socket
import sys
import threading

PIPE_BYTES = 1 << 20
F_SETPIPE_SZ = 1031


def pump(source, destination):
    read_end, write_end = os.pipe()
    try:
        fcntl.fcntl(write_end, F_SETPIPE_SZ, PIPE_BYTES)
    except OSError:
        pass
    flags = os.SPLICE_F_MOVE | os.SPLICE_F_MORE
    try:
        while True:
            moved = os.splice(source.fileno(), write_end, PIPE_BYTES, flags=flags)
            if moved == 0:
                break
            while moved:
                moved -= os.splice(read_end, destination.fileno(), moved, flags=flags)
    except OSError:
        pass
    finally:
        os.close(read_end)
        os.close(write_end)
        try:
            destination.shutdown(socket.SHUT_WR)
        except OSError:
            pass


def serve(client, upstream_port):
    upstream = socket.create_connection(("127.0.0.1", upstream_port))
    directions = [
        threading.Thread(target=pump, args=(client, upstream)),
        threading.Thread(target=pump, args=(upstream, client)),
    ]
    for thread in directions:
        thread.start()
    for thread in directions:
        thread.join()
    client.close()
    upstream.close()


def main():
    listen_port, upstream_port = int(sys.argv[1]), int(sys.argv[2])
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", listen_port))
    listener.listen(128)
    while True:
        client, _ = listener.accept()
        threading.Thread(target=serve, args=(client, upstream_port), daemon=True).start()


if __name__ == "__main__":
    main()
