"""Nest figures for tools/bench-flock (see tools/bench_flock.py for the server and its zero-latency model).

1. messages posted and tagged per second: the owner's `say`s, one after another
   over one keep-alive connection (each is checked, tagged by the local Jev,
   stored, logged to jev.jsonl with an fsync, and streamed);
2. request -> claim -> deliver end to end: a request to a crow, until the crow's
   deliver arrives on the nest stream (two invocations of the zero-latency model);
3. 200 subscribers on one nest's stream (4 reader processes) while a message is
   posted every 20 ms: delivery latency (receive time minus the record's `ts`).
"""

import asyncio
import json
import time

import aiohttp

from tools.bench_flock_readers import latencies_of, read_events, start_readers

NEST = "todo"


async def post(session, body) -> dict:
    async with session.post(f"/api/nests/{NEST}/messages", json={"author": "owner", **body}) as response:
        assert response.status == 201, await response.text()
        return await response.json()


async def messages_per_second(session, count=500) -> float:
    start = time.perf_counter()
    for n in range(count):
        await post(session, {"text": f"Thanks, note {n}.", "kind": "say"})
    return count / (time.perf_counter() - start)


async def chain_ms(session, chains=30) -> tuple:
    """-> (p50, p99) ms from posting a request to its deliver arriving on the stream."""
    times = []
    async with session.get("/api/events", params={"nest_id": NEST}) as stream:
        for n in range(chains):
            start = time.perf_counter()
            request = await post(session, {"text": f"Can you draft the launch email, version {n}?", "to": "Pepper"})
            delivered = []

            def on_event(_id, _name, data):
                record = json.loads(data)
                if record["kind"] == "deliver" and record["refers_to"] == request["msg_id"]:
                    delivered.append(record)

            await asyncio.wait_for(read_events(stream, on_event, lambda: bool(delivered)), 30)
            times.append((time.perf_counter() - start) * 1000)
    times.sort()
    return times[len(times) // 2], times[int(len(times) * 0.99)]


async def nest_figures(base) -> dict:
    async with aiohttp.ClientSession(base) as session:
        rate = await messages_per_second(session)
        print(f"nests: {rate:.0f} messages/s posted and tagged (owner says, one connection)")
        chain_p50, chain_p99 = await chain_ms(session)
        print(f"nests: request -> claim -> deliver p50 {chain_p50:.1f} ms, p99 {chain_p99:.1f} ms (zero-latency model)")
        messages = 100
        readers = await start_readers(base, 200, messages, query=f"nest_id={NEST}")
        for n in range(messages):
            await post(session, {"text": f"Morning, note {n}.", "kind": "say"})
            await asyncio.sleep(0.02)
    p50, p99, samples = await latencies_of(readers)
    print(
        f"nests: 200 subscribers, a message every 20 ms: p50 {p50:.1f} ms, p99 {p99:.1f} ms over {samples} deliveries"
    )
    return {"msgs_per_s": rate, "chain_p50_ms": chain_p50, "sse_p99_ms": p99}
