"""SSE readers for the flock benchmarks: subscribers in their own processes, and the latencies they saw.

Shared by tools/bench_flock.py (the list stream) and tools/bench_flock_nests.py (the nest streams);
a reader process is tools/bench_flock.py run with --subscribe.
"""

import asyncio
import json
import sys
import time
from datetime import datetime
from pathlib import Path

import aiohttp

BENCH = Path(__file__).resolve().with_name("bench_flock.py")  # its --subscribe runs `subscribe` below


async def read_events(response, on_event, stop):
    """Parse an SSE stream, calling on_event(id, name, data_text) until stop() is true.

    Reads whole chunks and splits on the blank line between messages: the readers
    share two CPUs with the server, so they must stay cheap to measure the server.
    """
    buffer = b""
    async for chunk in response.content.iter_any():
        buffer += chunk
        *messages, buffer = buffer.split(b"\r\n\r\n")
        for message in messages:
            fields = {}
            for line in message.decode().split("\r\n"):
                if not line.startswith(":"):
                    key, _, value = line.partition(": ")
                    fields[key] = value
            if "data" in fields:
                on_event(int(fields["id"]), fields.get("event"), fields["data"])
                if stop():
                    return


def parse_ts(ts: str) -> float:
    return datetime.fromisoformat(ts.replace("Z", "+00:00")).timestamp()


async def subscribe(base, count, expected, query=""):
    """A reader process: `count` subscribers (all lists, or `query` such as nest_id=todo); prints
    "ready", then every latency (s) as JSON."""
    latencies = []
    counts = [0] * count
    async with aiohttp.ClientSession(base, connector=aiohttp.TCPConnector(limit=0)) as session:
        streams = [await session.get("/api/events?" + query) for _ in range(count)]

        async def follow(index, stream):
            def on_event(_id, name, data):
                start = data.index('"ts": "') + 7  # cheaper than json.loads for every delivery
                latencies.append(time.time() - parse_ts(data[start : data.index('"', start)]))
                counts[index] += 1

            await read_events(stream, on_event, lambda: counts[index] >= expected)

        print("ready", flush=True)
        await asyncio.wait_for(asyncio.gather(*(follow(i, s) for i, s in enumerate(streams))), 120)
        for stream in streams:
            stream.close()
    print(json.dumps(latencies), flush=True)


async def start_readers(base, subscribers, expected, processes=4, query=""):
    """Subscribers live in `processes` reader processes, so the readers do not slow each other down."""
    readers = [
        await asyncio.create_subprocess_exec(
            sys.executable,
            str(BENCH),
            "--subscribe",
            base,
            "--count",
            str(subscribers // processes),
            "--expect",
            str(expected),
            "--query",
            query,
            stdout=asyncio.subprocess.PIPE,
        )
        for _ in range(processes)
    ]
    for reader in readers:
        assert (await reader.stdout.readline()).strip() == b"ready"
    return readers


async def latencies_of(readers) -> tuple:
    """-> (p50 ms, p99 ms, deliveries) once every reader has seen what it expected."""
    latencies = []
    for reader in readers:
        latencies += json.loads(await reader.stdout.read())  # the rest of its output: one JSON list
        await reader.wait()
    latencies.sort()
    return latencies[len(latencies) // 2] * 1000, latencies[int(len(latencies) * 0.99)] * 1000, len(latencies)
