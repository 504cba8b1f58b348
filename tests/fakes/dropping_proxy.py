"""A loopback HTTP proxy that loses answers: the request reaches the server, its answer never comes back.

`DroppingProxy(target_port, drop=1)` passes each request whole to the server behind it and reads the
server's whole answer; for the first `drop` requests it then closes the client's connection without a
word, as a Wi-Fi link that dies after the request went out does. The server acted; the sender cannot
know it. Later requests get the server's answer. `requests` holds every request body, in order.
"""

import asyncio


async def _read_message(reader) -> tuple[bytes, bytes]:
    """(head, body) of one HTTP message with a Content-Length (or none); b"" head at the end of the stream."""
    try:
        head = await reader.readuntil(b"\r\n\r\n")
    except asyncio.IncompleteReadError:
        return b"", b""
    length = 0
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value.strip())
    return head, await reader.readexactly(length)


class DroppingProxy:
    def __init__(self, target_port: int, drop: int = 1):
        self.target_port = target_port
        self.drop = drop
        self.requests: list[bytes] = []
        self.answered: list[bytes] = []  # the answers passed back, in order
        self._changed = asyncio.Condition()

    async def _serve(self, reader, writer):
        upstream_reader, upstream_writer = await asyncio.open_connection("127.0.0.1", self.target_port)
        try:
            while True:
                head, body = await _read_message(reader)
                if not head:
                    return
                upstream_writer.write(head + body)
                await upstream_writer.drain()
                answer_head, answer_body = await _read_message(upstream_reader)
                async with self._changed:
                    self.requests.append(body)
                    dropped = len(self.requests) <= self.drop
                    if not dropped:
                        self.answered.append(answer_head + answer_body)
                    self._changed.notify_all()
                if dropped:
                    return  # the server has acted; the sender hears nothing
                writer.write(answer_head + answer_body)
                await writer.drain()
        except ConnectionError:
            pass
        finally:
            upstream_writer.close()
            writer.close()

    async def wait_for_answers(self, count: int, timeout_s: float = 30.0):
        async with self._changed:
            await asyncio.wait_for(self._changed.wait_for(lambda: len(self.answered) >= count), timeout_s)

    async def __aenter__(self) -> int:
        self.server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        return self.server.sockets[0].getsockname()[1]

    async def __aexit__(self, *exc):
        self.server.close()
        await self.server.wait_closed()
