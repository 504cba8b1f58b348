"""Malformed HTTP against every host server, as real processes on loopback (issue 47, item 11).

aiohttp refuses a request it cannot parse (a bad chunk size, a NUL in a header) with a 400 before
any handler runs, and logged a traceback for each through its `aiohttp.server` logger: 600 of them
grew each server's log by some 200 KB. The serving layer (host/serving.py, `_BadHttpLog`) makes each
one debug line and counts it in /health; at the default level the whole flood costs the log one
line. Raw sockets send the requests, so nothing between the test and the server tidies them.
"""

import asyncio
import logging
import re
import socket
from concurrent.futures import ThreadPoolExecutor

import pytest

from soulstack.serving import listening, make_server_app
from tools import fuzzkit

HEAD = b"Host: 127.0.0.1\r\nAuthorization: Bearer " + fuzzkit.TOKEN.encode() + b"\r\n"

# Each is refused by aiohttp's parser itself; each kind takes another path to its logger.
MALFORMED = {
    "a bad chunk size": b"POST /health HTTP/1.1\r\n"
    + HEAD
    + b"Transfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n",
    "a NUL in a header": b"GET /health HTTP/1.1\r\n" + HEAD + b"X-Bad: a\x00b\r\n\r\n",
    "a negative Content-Length": b"GET /health HTTP/1.1\r\n" + HEAD + b"Content-Length: -5\r\n\r\n",
    "a bad method after a good request": b"GET /health HTTP/1.1\r\n" + HEAD + b"\r\nG\x01T / HTTP/1.1\r\n\r\n",
    "TLS on the HTTP port": b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03" + b"\x00" * 40 + b"\r\n\r\n",
}
FLOOD = 600  # what the issue measured: +212 KB of log on each server
SERVERS = ("soul", "ears", "flock", "tts", "terminal", "stackchan")


def send(port: int, raw: bytes) -> bytes:
    """Everything the server answers to `raw` until it closes the connection (it does after a 400)."""
    with socket.create_connection(("127.0.0.1", port), timeout=20) as sock:
        sock.sendall(raw)
        answer = b""
        while piece := sock.recv(65536):
            answer += piece
    return answer


def first_answer(port: int, raw: bytes) -> bytes:
    """The server's answer to `raw` as soon as it is whole (a small JSON one), without waiting for the close."""
    with socket.create_connection(("127.0.0.1", port), timeout=20) as sock:
        sock.sendall(raw)
        answer = b""
        while not answer.rstrip().endswith(b"}") and (piece := sock.recv(65536)):
            answer += piece
    return answer


@pytest.fixture(scope="module")
def servers():
    with fuzzkit.Servers(soul_model={"provider": "brainstem"}) as running:
        starts = [getattr(running, f"start_{name}") for name in SERVERS]
        with ThreadPoolExecutor(len(starts)) as pool:
            list(pool.map(lambda start: start(), starts))
        yield running


@pytest.mark.parametrize("name", SERVERS)
def test_a_flood_of_malformed_requests_is_counted_and_leaves_the_log_one_line(servers, name):
    server = servers.servers[name]
    log = servers.folder / f"{name}.log"
    status, health = fuzzkit.call(server.port, "GET", "/health", token=fuzzkit.TOKEN)
    assert status == 200 and health["malformedRequests"] == 0, health
    before = log.stat().st_size

    kinds = list(MALFORMED.items())
    for number in range(FLOOD):
        kind, raw = kinds[number % len(kinds)]
        statuses = re.findall(rb"HTTP/1\.[01] (\d{3}) ", send(server.port, raw))
        assert statuses and statuses[-1] == b"400", (kind, statuses)

    grown = log.read_bytes()[before:].decode(errors="replace")
    assert "Traceback" not in grown and "Error handling request" not in grown, grown[:2000]
    lines = [line for line in grown.splitlines() if "malformed" in line]
    # The first is said once at info; the terminal body draws a screen and keeps no info log at all.
    assert len(lines) == (0 if name == "terminal" else 1), grown[:2000]
    assert all("later ones are counted in /health" in line for line in lines), lines
    assert len(grown) < 2048, f"{len(grown)} bytes of log for {FLOOD} malformed requests:\n{grown[:2000]}"

    status, health = fuzzkit.call(server.port, "GET", "/health", token=fuzzkit.TOKEN)
    assert status == 200 and health["malformedRequests"] == FLOOD, health
    # The count is the server's own to tell: /health keeps its bearer check.
    assert fuzzkit.call(server.port, "GET", "/health")[0] == 401


async def test_at_debug_level_each_malformed_request_is_one_line_without_the_peers_bytes(caplog):
    caplog.set_level(logging.DEBUG)
    app = make_server_app(fuzzkit.TOKEN)
    async with listening(app, "127.0.0.1", 0) as port:
        for raw in MALFORMED.values():
            await asyncio.to_thread(send, port, raw)
    said = [record for record in caplog.records if record.name.startswith(("aiohttp", "soulstack.serving"))]
    assert len(said) == len(MALFORMED), [record.getMessage() for record in said]
    assert [record.levelno for record in said] == [logging.INFO] + [logging.DEBUG] * (len(MALFORMED) - 1)
    for record in said:
        line = record.getMessage()
        assert record.exc_info is None and "\n" not in line and "malformed HTTP request from 127.0.0.1" in line
        assert "X-Bad" not in line and "\\x" not in line, line  # the parser's words, not what the peer sent


async def test_a_body_declared_over_the_cap_is_413_before_any_of_it_is_waited_for():
    # Before, read_json waited the whole body timeout (30 s) for bytes it would refuse anyway.
    from aiohttp import web

    from soulstack.serving import read_json

    async def echo(request):
        return web.json_response(await read_json(request))

    app = make_server_app(fuzzkit.TOKEN)
    app.router.add_post("/echo", echo)
    raw = (
        b"POST /echo HTTP/1.1\r\n"
        + HEAD
        + b"Content-Type: application/json\r\nContent-Length: 99999999999\r\nConnection: close\r\n\r\n{"
    )
    async with listening(app, "127.0.0.1", 0) as port:
        answer = await asyncio.to_thread(first_answer, port, raw)
        assert answer.startswith(b"HTTP/1.1 413"), answer[:200]
        assert b'"message": "the request body is too large (99999999999 bytes; at most 1048576)"' in answer
        # The server is as able as before.
        good = (
            b"POST /echo HTTP/1.1\r\n"
            + HEAD
            + b"Content-Type: application/json\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}"
        )
        assert (await asyncio.to_thread(send, port, good)).startswith(b"HTTP/1.1 200")


async def test_a_body_that_is_not_what_its_content_encoding_says_is_a_400_naming_it_and_gzip_still_works():
    # A trial found a 500 and two tracebacks in the log for `Content-Encoding: gzip` on a plain body.
    import gzip

    from aiohttp import web

    from soulstack.serving import read_json

    async def echo(request):
        return web.json_response(await read_json(request))

    app = make_server_app(fuzzkit.TOKEN)
    app.router.add_post("/echo", echo)

    def post(body: bytes, encoding: str) -> bytes:
        raw = (
            b"POST /echo HTTP/1.1\r\n"
            + HEAD
            + b"Content-Type: application/json\r\nContent-Encoding: "
            + encoding.encode()
            + b"\r\nContent-Length: "
            + str(len(body)).encode()
            + b"\r\nConnection: close\r\n\r\n"
            + body
        )
        return send(port, raw)

    async with listening(app, "127.0.0.1", 0) as port:
        for encoding in ("gzip", "deflate"):
            answer = await asyncio.to_thread(post, b'{"reason": "x"}', encoding)
            assert answer.startswith(b"HTTP/1.1 400"), answer[:300]
            assert (
                f'"message": "the request body is not {encoding} as its Content-Encoding says: send it as '
                'plain JSON, or encoded as declared"'.encode()
                in answer
            ), answer
        answer = await asyncio.to_thread(post, gzip.compress(b'{"reason": "x"}'), "gzip")
        assert answer.startswith(b"HTTP/1.1 200") and answer.endswith(b'{"reason": "x"}'), answer
