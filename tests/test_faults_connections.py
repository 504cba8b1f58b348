"""Connections a stranger holds open, as real servers on loopback.

The serving layer (host/serving.py, soulstack.connections) closes a connection whose request
head does not arrive in time, answers a body that trickles 408, answers a connection over a cap
at once and honestly (429 for one address holding too many, 503 for a full server), and logs a
hang-up mid-body as one debug line. Real `soulstack flock` and `soulstack soul` processes at the
usual 1,024-file limit, and a terminal body, keep serving people under 1,100 idle connections from another address;
the flock's event stream ends when its reader leaves, so 10,000 readers coming and going leave
its memory flat (2,000 here, where each left behind cost 16 KB before; tools/bench-soak runs 10,000).
"""

import asyncio
import logging
import os
import resource
import subprocess
import sys
import time

import aiohttp
from aiohttp import web

from soulstack.fakes.soul_body import RecordingBody
from soulstack.serving import Limits, listening, make_server_app, read_json
from tests.helpers import free_port
from tests.helpers import ROOT, until_real
from tests.soul.helpers import start_soul, stop_with_ctrl_c, write_config

STRANGER = "127.0.0.2"  # another loopback address: the attacker's, so the cap per address is its own


async def echo(request):
    return web.json_response(await read_json(request))


async def ping(request):
    return web.json_response({"ok": True})


async def small_server(**limits):
    app = make_server_app(limits=Limits(**limits))
    app.router.add_post("/echo", echo)
    app.router.add_get("/ping", ping)
    return app


async def read_answer(reader, timeout=5.0):
    return await asyncio.wait_for(reader.read(4096), timeout)


async def test_slow_heads_and_bodies_are_cut_off_and_caps_answer_honestly(caplog):
    app = await small_server(max_connections=6, max_per_client=3, header_timeout_s=0.5, body_timeout_s=0.5)
    async with listening(app, "127.0.0.1", 0) as port:
        # A request head that never ends is closed after the header bound.
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(b"GET /ping HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: 1")
        started = time.monotonic()
        assert await read_answer(reader) == b""
        assert 0.4 < time.monotonic() - started < 3
        writer.close()
        # A body that trickles: 408 with a message.
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(
            b"POST /echo HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 50\r\n\r\n{"
        )
        answer = await read_answer(reader)
        assert answer.startswith(b"HTTP/1.1 408") and b'"message"' in answer
        writer.close()
        # One address may hold 3: the fourth is told so, as JSON, at once.
        held = [await asyncio.open_connection("127.0.0.1", port) for _ in range(3)]
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        answer = await read_answer(reader)
        assert answer.startswith(b"HTTP/1.1 429") and b"your address holds 3 connections" in answer
        # The server holds 6: from another address, 3 more fit, then 503.
        held += [await asyncio.open_connection("127.0.0.1", port, local_addr=(STRANGER, 0)) for _ in range(3)]
        reader, writer = await asyncio.open_connection("127.0.0.1", port, local_addr=("127.0.0.3", 0))
        answer = await read_answer(reader)
        assert answer.startswith(b"HTTP/1.1 503") and b"the most it serves at once" in answer
        for _, held_writer in held:
            held_writer.close()
        # Once they are gone, people are served again.
        async with aiohttp.ClientSession() as http:
            for _ in range(50):
                try:
                    async with http.get(f"http://127.0.0.1:{port}/ping") as response:
                        if response.status == 200:
                            break
                except aiohttp.ClientError:
                    pass
                await asyncio.sleep(0.05)
            else:
                raise AssertionError("never served again")
        # A client hanging up mid-body: one debug line, no error, no traceback.
        caplog.clear()
        with caplog.at_level(logging.DEBUG):
            for _ in range(5):
                reader, writer = await asyncio.open_connection("127.0.0.1", port)
                writer.write(
                    b"POST /echo HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                    b"Content-Length: 50\r\n\r\n{"
                )
                await writer.drain()
                await asyncio.sleep(0.05)
                writer.close()
            await asyncio.sleep(0.2)
        ours = [r for r in caplog.records if r.levelno >= logging.WARNING or r.exc_info]
        left = [r for r in caplog.records if "the client left" in r.getMessage()]
        assert ours == [] and len(left) == 5 and all(r.levelno == logging.DEBUG for r in left)


# --- real processes at a 1,024-file limit ----------------------------------------------------------


def at_1024_files():
    resource.setrlimit(resource.RLIMIT_NOFILE, (1024, 1024))


def raise_own_file_limit():
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, min(hard, 16384)), hard))


def rss_kb(pid) -> int:
    with open(f"/proc/{pid}/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith("VmRSS:"))


async def settled_rss_kb(pid, within_kb=512, timeout=30.0) -> int:
    """The process's RSS once it stops moving (the flock trains Jev in a thread after it starts)."""
    readings = [rss_kb(pid)]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        await asyncio.sleep(0.5)
        readings.append(rss_kb(pid))
        if len(readings) >= 4 and max(readings[-4:]) - min(readings[-4:]) <= within_kb:
            break
    return readings[-1]


async def hold_idle(port, count):
    """`count` connections from the stranger's address that never send a byte (some are refused)."""
    held = []
    for _ in range(count):
        try:
            held.append(await asyncio.open_connection("127.0.0.1", port, local_addr=(STRANGER, 0)))
        except OSError:
            pass
    return held


async def timed_get(http, url):
    started = time.monotonic()
    if url.endswith("/status"):  # a body's Body Protocol route is a POST
        asking = http.post(url, json={})
    else:
        asking = http.get(url)
    async with asking as response:
        assert response.status == 200, await response.text()
    return time.monotonic() - started


async def sse_churn(port, count, workers=32):
    """`count` readers open the all-lists stream, see its head, and leave."""
    request = f"GET /api/events HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAccept: text/event-stream\r\n\r\n".encode()
    left = iter(range(count))

    async def worker():
        for _ in left:
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.write(request)
            head = await reader.readuntil(b"\r\n\r\n")
            assert head.startswith(b"HTTP/1.1 200")
            writer.close()

    await asyncio.gather(*(worker() for _ in range(workers)))


async def test_flock_soul_and_body_serve_people_under_1100_idle_connections_sse_churn_leaves_no_memory(tmp_path):
    raise_own_file_limit()
    port = free_port()
    flock = subprocess.Popen(
        [sys.executable, "-m", "soulstack.cli", "flock", "--provider", "brainstem", "--port", str(port)]
        + ["--data", str(tmp_path / "crows"), "--heartbeat", "60"],
        cwd=ROOT,
        env={**os.environ, "ANTHROPIC_API_KEY": "", "OPENAI_BASE_URL": ""},
        stdout=subprocess.DEVNULL,
        stderr=open(tmp_path / "flock.log", "w"),
        preexec_fn=at_1024_files,
    )
    body_port = free_port()
    terminal = subprocess.Popen(  # a body: the terminal's, a host server like the others
        [sys.executable, "-m", "soulstack.cli", "body", "terminal", "--port", str(body_port)],
        cwd=ROOT,
        env={**os.environ, "BODY_TOKEN": "", "NUDGE_TOKEN": ""},
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=open(tmp_path / "body.log", "w"),
        preexec_fn=at_1024_files,
    )
    async with RecordingBody() as body, aiohttp.ClientSession() as http:
        soul_port = free_port()
        soul_config = write_config(tmp_path, body, soul_port)
        soul = start_soul(soul_config, tmp_path / "soul.log")
        held = []
        try:
            flock_url, soul_url = f"http://127.0.0.1:{port}/api/trust", f"http://127.0.0.1:{soul_port}/health"
            body_url = f"http://127.0.0.1:{body_port}/status"
            await until_real(lambda: _ok(http, flock_url), what="the flock")
            await until_real(lambda: _ok(http, soul_url), what="the soul")
            await until_real(lambda: _ok(http, body_url), what="the terminal body")
            for server_port in (port, soul_port, body_port):
                held += await hold_idle(server_port, 1100)
            times = [await timed_get(http, url) for _ in range(20) for url in (flock_url, soul_url, body_url)]
            assert max(times) < 1.0, times

            await sse_churn(port, 500)  # warm up: what a first stream allocates once
            before = await settled_rss_kb(flock.pid)
            await sse_churn(port, 2_000)  # tools/bench-soak runs 10,000 (and more) for its figures
            growth_mb = (await settled_rss_kb(flock.pid) - before) / 1024
            assert growth_mb <= 10, f"the flock grew {growth_mb:.1f} MB over 2,000 readers coming and going"
            assert await timed_get(http, flock_url) < 1.0
        finally:
            for _, writer in held:
                writer.close()
            for process in (flock, terminal):
                process.terminate()
                process.wait(timeout=20)
            await stop_with_ctrl_c(soul)
    for log in ("flock.log", "soul.log", "body.log"):
        assert "Traceback" not in (tmp_path / log).read_text(), log


async def _ok(http, url):
    try:
        return await timed_get(http, url) >= 0
    except (aiohttp.ClientConnectionError, AssertionError):
        return False
