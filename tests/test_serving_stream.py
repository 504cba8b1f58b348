"""A body that is not JSON read through the serving layer, on a real server on loopback, by raw
sockets that send what a stranger could: a stream (`read_stream`: ears' audio) or a whole body
(`read_body`: a photo upload) is held to its size, its whole-arrival time and its longest
silence, answered as {"message"}; one cut short is one debug line, never a traceback.
"""

import asyncio
import json
import logging
import time

from aiohttp import web

from soulstack.serving import GATE, BadRequest, Limits, listening, make_server_app, read_body, read_stream

from tests.helpers import until

MAX_BYTES = 64 * 1024
HEAD = (
    b"POST /stream HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: audio/L16; rate=16000; channels=1\r\n"
    b"Transfer-Encoding: chunked\r\n\r\n"
)


def chunk(data: bytes) -> bytes:
    return b"%x\r\n%s\r\n" % (len(data), data)


async def server(ended: list):
    """A server whose handler reads a stream and notes in `ended` how it ended (bytes, or the status)."""
    app = make_server_app()

    async def stream(request):
        size = 0
        try:
            async for piece in read_stream(request, max_bytes=MAX_BYTES, timeout_s=2.0, idle_s=0.5):
                size += len(piece)
        except BadRequest as error:
            ended.append(error.status)
            raise
        ended.append(size)
        return web.json_response({"bytes": size})

    app.router.add_post("/stream", stream)
    return app


async def send(port, *pieces, pause=0.0):
    """Write the head and `pieces` (`pause` s apart) -> (status, the answer's JSON, seconds taken)."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    started = time.monotonic()
    try:
        writer.write(HEAD)
        for piece in pieces:
            writer.write(piece)
            await writer.drain()
            await asyncio.sleep(pause)
        answer = await asyncio.wait_for(reader.read(65536), 10)
    finally:
        writer.close()
    head, _, body = answer.partition(b"\r\n\r\n")
    if b"Transfer-Encoding: chunked" in head:
        body = body.split(b"\r\n", 1)[1].rsplit(b"\r\n0\r\n", 1)[0]
    return int(head.split()[1]), json.loads(body), time.monotonic() - started


async def test_a_streamed_body_is_held_to_its_size_time_and_silence(caplog):
    ended = []
    app = await server(ended)
    async with listening(app, "127.0.0.1", 0) as port:
        # Whole and prompt: every byte, in chunks of the reader's size at most.
        status, answer, _ = await send(port, chunk(b"\1\0" * 5000), chunk(b"\2\0" * 5000), b"0\r\n\r\n")
        assert (status, answer) == (200, {"bytes": 20000})
        # Longer than the most it takes: 413, before the rest is waited for.
        status, answer, _ = await send(port, *[chunk(b"\0" * 8192)] * 9)
        assert status == 413 and f"larger than {MAX_BYTES} bytes" in answer["message"]
        # Silent past the longest silence: 408 at about idle_s, not the whole time.
        status, answer, took = await send(port, chunk(b"\0" * 100))
        assert status == 408 and "stopped arriving" in answer["message"] and took < 1.5, (answer, took)
        # A trickle that never falls silent for long, but never ends: 408 at the whole-arrival bound.
        status, answer, took = await send(port, *[chunk(b"\0" * 10)] * 12, pause=0.25)
        assert status == 408 and "within 2 s" in answer["message"] and 1.8 < took < 3.5, (answer, took)
        # Cut short: the handler is told (400 to no one), and the log has no traceback.
        caplog.clear()
        with caplog.at_level(logging.DEBUG):
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.write(HEAD + chunk(b"\0" * 100) + b"100\r\n\0\0")
            await writer.drain()
            await asyncio.sleep(0.1)
            writer.close()
            await asyncio.sleep(0.3)
        assert not [r for r in caplog.records if r.levelno >= logging.WARNING or r.exc_info]
    assert ended == [20000, 413, 408, 408, 400]


async def test_a_whole_body_that_is_not_json_is_held_to_its_size_and_time():
    app = make_server_app(limits=Limits(body_timeout_s=1.0))

    async def upload(request):
        return web.json_response({"bytes": len(await read_body(request, max_bytes=MAX_BYTES))})

    app.router.add_post("/stream", upload)
    async with listening(app, "127.0.0.1", 0) as port:
        status, answer, _ = await send(port, chunk(b"\xff\xd8" + b"\0" * 30000), b"0\r\n\r\n")
        assert (status, answer) == (200, {"bytes": 30002})
        status, answer, _ = await send(port, *[chunk(b"\0" * 8192)] * 9)
        assert status == 413, answer
        # A photo trickled in, never whole: 408 at the app's body bound (as a JSON body's).
        status, answer, took = await send(port, *[chunk(b"\0" * 10)] * 8, pause=0.2)
        assert status == 408 and "within 1 s" in answer["message"] and 0.9 < took < 2.0, (answer, took)
        # Its connection closes once the client's does (else the server's stop would wait for it).
        await until(lambda: app[GATE].open == 0, what="the connections to close")
