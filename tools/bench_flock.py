"""The flock's benchmark (run it as tools/bench-flock).

The server runs in a child process with a zero-latency model: an in-process
object implementing the Model protocol that answers at once (a triage tool
call for the Sentry, a line of text for crows and the Elder). The ledger is
seeded so every holder is trusted, so verdicts are `auto` and nothing waits for
a human. The parent drives it over loopback HTTP and real SSE connections:

1. items/s end to end: lists of 50 items, from the first POST to the last list.finished;
2. replay: time for a fresh client to receive 10,000 events via Last-Event-ID;
3. 200 SSE subscribers on the all-lists stream, spread over 4 reader processes,
   while a 5-item list arrives every 100 ms: delivery latency of every event
   (receive time minus the event's `ts`, which has millisecond resolution);
4. nests (tools/bench_flock_nests.py): messages posted and tagged per second,
   request -> claim -> deliver end to end, and delivery to 200 nest subscribers.

`--sse-churn N` measures something else: what N connections that come and go leave in an idle
flock's memory (tools/bench_flock_sse.py).
"""

import argparse
import asyncio
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import aiohttp  # noqa: E402
from aiohttp.test_utils import unused_port  # noqa: E402

from soulstack.flock.personas import ROSTER_NAMES  # noqa: E402
from soulstack.flock.lists.sentry import TASK_TYPES  # noqa: E402
from soulstack.llm.types import Message, Reply, TextBlock, ToolCall, Usage  # noqa: E402
from tools.bench_flock_readers import latencies_of, read_events, start_readers, subscribe  # noqa: E402


class ZeroModel:
    """Answers instantly; a benchmark stand-in for a model, never used by the server otherwise."""

    provider, model_id = "bench", "zero-latency"

    async def complete(self, system, messages, tools=None, *, tool_choice=None, max_tokens=4096, cache=False):
        if system.startswith("You are") and "talking in the nest" in system:  # a crow invoked in a nest
            prompt = messages[-1].text()
            reply = "[deliver] done" if "deliver the result" in prompt else "[claim] mine"
            return Reply(Message("assistant", [TextBlock(reply)]), "end_turn", Usage(20, 5))
        if tool_choice == "triage":
            call = ToolCall(
                "t1", "triage", {"mode": "solo", "task_type": "research", "subtasks": [], "reason": "quick"}
            )
            return Reply(Message("assistant", [call]), "tool_use", Usage(20, 10))
        return Reply(Message("assistant", [TextBlock("done")]), "end_turn", Usage(20, 5))


def serve(port: int, data_dir: str) -> None:
    from aiohttp import web

    from soulstack.flock.app import make_flock_app
    from soulstack.flock.lists.flow import FlockConfig
    from soulstack.flock.nests.harness import NestConfig
    from soulstack.flock.store import Store
    from soulstack.flock.trust import TRUSTED, TrustLedger

    store = Store(data_dir)
    ledger = TrustLedger(store)
    for holder in ["flock", *ROSTER_NAMES]:
        for task_type in TASK_TYPES:
            ledger.set_level(holder, task_type, TRUSTED)
    store.close()
    config = FlockConfig(lists_per_minute=1_000_000, token_budget=10_000_000, concurrency=50, max_model_calls=256)
    nest_config = NestConfig(messages_per_minute=1_000_000_000)
    app = make_flock_app(data_dir, ZeroModel(), config=config, nest_config=nest_config)
    web.run_app(app, host="127.0.0.1", port=port, print=None, access_log=None)


async def post_lists(session, count, items_per_list, tag):
    text = "\n".join(f"- {tag} task {n}" for n in range(items_per_list))
    ids = []
    for n in range(count):
        async with session.post("/api/lists", json={"text": text, "requester": f"bench-{tag}-{n}"}) as response:
            assert response.status == 202, await response.text()
            ids.append((await response.json())["list_id"])
    return ids


async def items_per_second(session, lists, items_per_list):
    finished = set()
    async with session.get("/api/events") as stream:
        start = time.perf_counter()
        ids = set(await post_lists(session, lists, items_per_list, "speed"))

        def on_event(_id, name, data):
            if name == "list.finished":
                finished.add(json.loads(data)["list_id"])

        await read_events(stream, on_event, lambda: ids <= finished)
        elapsed = time.perf_counter() - start
    return lists * items_per_list / elapsed


async def replay_seconds(session, count):
    async with session.get("/api/events") as probe:  # learn the newest id: post one list and see it
        ids = await post_lists(session, 1, 1, "probe")
        last = []
        await read_events(probe, lambda i, n, d: last.append(i), lambda: bool(last) and ids and last[-1] > 0)
    newest = last[-1]
    got = []
    start = time.perf_counter()
    async with session.get("/api/events", headers={"Last-Event-ID": str(max(0, newest - count))}) as stream:
        await read_events(stream, lambda i, n, d: got.append(i), lambda: len(got) >= count)
    elapsed = time.perf_counter() - start
    assert len(got) >= count, f"only {len(got)} events to replay"
    return elapsed


async def sse_latency(base, subscribers, lists, items_per_list):
    # Every subscriber sees every event of these lists: 2 per list, 8 per item (solo, all auto).
    readers = await start_readers(base, subscribers, lists * (2 + 8 * items_per_list))
    async with aiohttp.ClientSession(base) as session:
        for n in range(lists):  # a busy but human-scale pace: a list of 5 items every 100 ms
            await post_lists(session, 1, items_per_list, f"lat{n}")
            await asyncio.sleep(0.1)
    return await latencies_of(readers)


async def drive(base, nests_only=False):
    from tools.bench_flock_nests import nest_figures  # it imports the readers this module uses

    async with aiohttp.ClientSession(base, connector=aiohttp.TCPConnector(limit=0)) as session:
        for _ in range(200):
            try:
                async with session.get("/api/crows") as response:
                    if response.status == 200:
                        break
            except aiohttp.ClientConnectionError:
                await asyncio.sleep(0.05)
        if nests_only:
            nests = await nest_figures(base)
            print(
                f"nest_msgs_per_s={nests['msgs_per_s']:.0f} nest_chain_p50_ms={nests['chain_p50_ms']:.1f} "
                f"nest_sse_p99_ms={nests['sse_p99_ms']:.1f}"
            )
            return
        rate = await items_per_second(session, lists=60, items_per_list=50)
        print(f"end to end: {rate:.0f} items/s (60 lists x 50 items, zero-latency in-process model, auto verdicts)")
        replay = await replay_seconds(session, 10_000)
        print(f"replay: 10000 events in {replay:.3f} s")
    p50, p99, samples = await sse_latency(base, subscribers=200, lists=20, items_per_list=5)
    print(
        f"200 SSE subscribers (4 reader processes), a 5-item list every 100 ms: "
        f"p50 {p50:.1f} ms, p99 {p99:.1f} ms over {samples} deliveries"
    )
    nests = await nest_figures(base)
    print(
        f"items_per_s={rate:.0f} sse_p99_ms={p99:.1f} replay_10k_s={replay:.3f} "
        f"nest_msgs_per_s={nests['msgs_per_s']:.0f} nest_chain_p50_ms={nests['chain_p50_ms']:.1f} "
        f"nest_sse_p99_ms={nests['sse_p99_ms']:.1f}"
    )


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        prog="tools/bench-flock",
        description="Benchmark the flock server: items/s end to end, SSE delivery latency to 200 subscribers, "
        "time to replay 10k events. Last line: items_per_s=<n> sse_p99_ms=<n> replay_10k_s=<n>",
    )
    parser.add_argument("--serve", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--data", help=argparse.SUPPRESS)
    parser.add_argument("--subscribe", help=argparse.SUPPRESS)
    parser.add_argument("--count", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--expect", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--query", default="", help=argparse.SUPPRESS)
    parser.add_argument("--nests-only", action="store_true", help="measure only the nest figures")
    parser.add_argument(
        "--sse-churn",
        type=int,
        metavar="N",
        help="instead: N event-stream connections that come and go on an idle flock, its RSS before and after "
        "(tools/bench_flock_sse.py)",
    )
    args = parser.parse_args(argv)
    if args.sse_churn:
        from tools.bench_flock_sse import run

        return run(args.sse_churn)
    if args.subscribe:
        asyncio.run(subscribe(args.subscribe, args.count, args.expect, args.query))
        return 0
    if args.serve:
        serve(args.serve, args.data)
        return 0
    port = unused_port()
    with tempfile.TemporaryDirectory(prefix="bench-flock-") as data_dir:
        server = subprocess.Popen(
            [sys.executable, str(Path(__file__).resolve()), "--serve", str(port), "--data", data_dir]
        )
        try:
            asyncio.run(drive(f"http://127.0.0.1:{port}", args.nests_only))
        finally:
            server.terminate()
            server.wait(10)
    return 0


if __name__ == "__main__":
    sys.exit(main())
