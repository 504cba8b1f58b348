"""SSE churn on an idle flock (tools/bench-flock --sse-churn N): what a connection leaves behind.

A real `soulstack flock` (no model: the brainstem) is started and made ready first: one nest
message makes Jev load its classifier (scikit-learn; the flock does it by itself 2 s after
start, and it is most of an idle flock's memory, ~90 MB, which an RSS read taken before it would
count as growth), and 20 lists are posted (skipped, for want of a model) so that replays carry
events. Then N sequential cycles, each a new connection that asks for a stream and leaves as soon
as the response's head is in, in turn: every list (live), the page's opening view (?recent=20),
one list (replayed whole) and the todo nest. RSS is read before, every N/4 cycles, and after a
settle. Last line:
    sse_cycles=N rss_before_mb=X rss_after_mb=Y growth_mb=Z
"""

import asyncio
import os
import subprocess
import sys
import tempfile

import aiohttp
from aiohttp.test_utils import unused_port


def rss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith("VmRSS:")) / 1024


async def ready(base: str) -> str:
    """Wait for the flock; load Jev, post 20 lists; -> one list's id."""
    async with aiohttp.ClientSession(base) as session:
        for _ in range(600):
            try:
                async with session.get("/api/crows") as response:
                    if response.status == 200:
                        break
            except aiohttp.ClientConnectionError:
                await asyncio.sleep(0.05)
        async with session.post("/api/nests/todo/messages", json={"author": "owner", "text": "hello"}) as response:
            assert response.status == 201, await response.text()  # tagged: Jev is loaded
        for n in range(20):
            text = "\n".join(f"- errand {k} of list {n}" for k in range(5))
            async with session.post("/api/lists", json={"text": text, "requester": f"churn{n}"}) as response:
                assert response.status == 202, await response.text()
                list_id = (await response.json())["list_id"]
    return list_id


async def cycle(port: int, path: str) -> None:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n".encode())
    head = await reader.readuntil(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200"), head[:80]
    writer.close()
    await writer.wait_closed()


async def churn(pid: int, port: int, count: int, list_id: str) -> None:
    paths = ["/api/events", "/api/events?recent=20", f"/api/events?list_id={list_id}", "/api/events?nest_id=todo"]
    await asyncio.sleep(2)  # what the lists' work and the first replies allocated settles
    before = rss_mb(pid)
    print(f"before: {before:.1f} MB", flush=True)
    for n in range(count):
        await cycle(port, paths[n % len(paths)])
        if (n + 1) % max(1, count // 4) == 0:
            print(f"after {n + 1} cycles: {rss_mb(pid):.1f} MB", flush=True)
    await asyncio.sleep(2)
    after = rss_mb(pid)
    print(f"sse_cycles={count} rss_before_mb={before:.1f} rss_after_mb={after:.1f} growth_mb={after - before:.1f}")


def run(count: int) -> int:
    port = unused_port()
    env = {k: v for k, v in os.environ.items() if k not in ("ANTHROPIC_API_KEY", "OPENAI_BASE_URL", "FLOCK_CONFIG")}
    with tempfile.TemporaryDirectory(prefix="bench-flock-sse-") as data_dir:
        server = subprocess.Popen(
            [sys.executable, "-m", "soulstack.cli", "flock", "--port", str(port), "--data", data_dir],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:

            async def drive():
                list_id = await ready(f"http://127.0.0.1:{port}")
                await churn(server.pid, port, count, list_id)

            asyncio.run(drive())
        finally:
            server.terminate()
            server.wait(10)
    return 0
