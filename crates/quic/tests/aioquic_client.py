"""An HTTP/3 client on aioquic for tests/aioquic.rs: fetches /0, then /1 .. /N-1 at once,
on one connection, and prints each answer as "STATUS BODY" in request order.

Usage: aioquic_client.py PORT COUNT. Every request carries the same long field, so that
aioquic's QPACK encoder (ls-qpack) puts it in the dynamic table the server allowed and
refers to it, possibly before the server has the entry (a blocked stream).
"""

import asyncio
import ssl
import sys

from aioquic.asyncio.client import connect
from aioquic.asyncio.protocol import QuicConnectionProtocol
from aioquic.h3.connection import H3_ALPN, H3Connection
from aioquic.h3.events import DataReceived, HeadersReceived
from aioquic.quic.configuration import QuicConfiguration


class Client(QuicConnectionProtocol):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.http = H3Connection(self._quic)
        self.pending = {}
        self.answers = {}

    def quic_event_received(self, event):
        for received in self.http.handle_event(event):
            if not isinstance(received, (HeadersReceived, DataReceived)):
                continue
            answer = self.answers.setdefault(received.stream_id, [None, b""])
            if isinstance(received, HeadersReceived):
                answer[0] = dict(received.headers)[b":status"]
            else:
                answer[1] += received.data
            if received.stream_ended:
                self.pending.pop(received.stream_id).set_result(answer)

    async def get(self, path):
        stream_id = self._quic.get_next_available_stream_id()
        head = [
            (b":method", b"GET"),
            (b":scheme", b"https"),
            (b":authority", b"localhost"),
            (b":path", path.encode()),
            (b"x-repeated", b"the same value on every request " * 3),
        ]
        self.http.send_headers(stream_id, head, end_stream=True)
        answer = asyncio.get_running_loop().create_future()
        self.pending[stream_id] = answer
        self.transmit()
        return await answer


async def main(port, count):
    configuration = QuicConfiguration(
        is_client=True, alpn_protocols=H3_ALPN, verify_mode=ssl.CERT_NONE
    )
    async with connect(
        "127.0.0.1", port, configuration=configuration, create_protocol=Client
    ) as client:
        # The first request alone: by its answer the server's SETTINGS (and so its
        # dynamic table) have arrived; the others then go at once.
        answers = [await client.get("/0")]
        answers += await asyncio.gather(*(client.get(f"/{n}") for n in range(1, count)))
        for status, body in answers:
            print(status.decode(), body.decode())


asyncio.run(asyncio.wait_for(main(int(sys.argv[1]), int(sys.argv[2])), 20))
