"""A nudge storm against a real soul (run it as tools/bench-storm).

A misbehaving body once sent 1,000 nudges in 10 s and the soul woke 273 times
(273 model calls: a day's budget in seconds). This bench sends that storm to a
real soul (host/soul/run.py's build_soul, its own HTTP server on loopback, the
wall clock) whose model is the real anthropic SDK talking to
host/fakes/anthropic_api.py (every waking answers "sleep 60 minutes") and
whose body is a real Body Protocol server. Two storms, each against a fresh
soul, both at once: the same reason 1,000 times, and 1,000 different reasons.
`--without-coalescing` adds the same two with nudge.minIntervalSeconds 0, the
soul as it was before coalescing.

Each storm posts its nudges evenly over `--seconds` (one HTTP request each,
every answer must be 202), then waits until the soul has shown every waiting
nudge in a snapshot and is asleep again. Counted: nudges acknowledged,
wakings and model calls the storm caused (the start waking left out), and how
many of the distinct reasons appear in a snapshot the model was sent (read
back from the fake's recorded requests). Last line:
    wakings_identical=<n> wakings_distinct=<n> reasons_seen=<n>/<n>
"""

import argparse
import asyncio
import logging
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import aiohttp  # noqa: E402

from soulstack.soul import config  # noqa: E402
from soulstack.soul.prompts import texts  # noqa: E402
from soulstack.soul.run import build_soul, serve_and_live  # noqa: E402
from soulstack.fakes.anthropic_api import FakeAnthropic, tool_use  # noqa: E402
from soulstack.fakes.soul_body import RecordingBody  # noqa: E402

IDENTICAL = "someone's face appeared in front of me"


def reasons(kind: str, count: int) -> list:
    if kind == "identical":
        return [IDENTICAL] * count
    return [f"a bird landed on the sill, bird number {i:04d}" for i in range(count)]


def shown_reasons(bodies: list) -> set:
    """Every reason a snapshot sent to the model named ("Woken by: ..." and the like), counts taken off."""
    text = texts("en").TEXT
    heads = [text[key].split("{reason}")[0] for key in ("woke_nudge", "arrived_while_thinking")]
    shown = set()
    for body in bodies:
        for block in body["messages"][-1]["content"]:
            for line in block.get("text", "").splitlines() if isinstance(block, dict) else []:
                for head in heads:
                    if line.startswith(head):
                        reason = line[len(head) :]
                        shown.add(reason.rsplit(" (x", 1)[0] if reason.endswith(")") and " (x" in reason else reason)
    return shown


async def post_on_schedule(url: str, sent: list, seconds: float, senders: int = 32) -> list:
    """POST each reason at its moment (evenly over `seconds`), several in flight so a slow answer
    does not hold back the next; the HTTP statuses, in order."""
    statuses = [0] * len(sent)
    started = time.monotonic()
    queue = asyncio.Queue()
    for index in range(len(sent)):
        queue.put_nowait(index)

    async def sender(http):
        while not queue.empty():
            index = queue.get_nowait()
            await asyncio.sleep(max(0.0, started + index * seconds / len(sent) - time.monotonic()))
            async with http.post(url, json={"reason": sent[index]}) as response:
                statuses[index] = response.status

    async with aiohttp.ClientSession() as http:
        await asyncio.gather(*(sender(http) for _ in range(senders)))
    return statuses


async def storm(kind: str, args, min_interval_s: float) -> dict:
    sent = reasons(kind, args.nudges)
    with tempfile.TemporaryDirectory(prefix="bench-storm-") as tmp:
        async with (
            RecordingBody() as body,
            FakeAnthropic(default=lambda request: tool_use("sleep", {"minutes": 60})) as fake,
        ):
            cfg, _warnings = config.from_dict(
                {
                    "soulDir": str(Path(tmp) / "soul"),
                    "timezone": "UTC",
                    "model": {"provider": "anthropic", "id": "claude-sonnet-5-5", "keepWarm": False},
                    "body": {"name": "the desk robot", "endpoints": body.endpoints()},
                    "persona": {"name": "Pip", "human": "Ana"},
                    "nudge": {"port": 0, "minIntervalSeconds": min_interval_s},
                    "budget": {"maxWakesPerDay": 100000},  # count wakings, not the hunger stretch
                }
            )
            env = {"ANTHROPIC_API_KEY": "bench", "ANTHROPIC_BASE_URL": fake.base_url}
            soul = build_soul(cfg, env=env)
            lines = []
            task = asyncio.create_task(serve_and_live(soul, announce=lines.append))
            try:
                while not (lines and soul.state == "asleep"):
                    await asyncio.sleep(0.01)
                url = lines[0].split()[2] + "/nudge"
                wakings_before, calls_before = soul.wakings, len(fake.bodies)
                started = time.monotonic()
                statuses = await post_on_schedule(url, sent, args.seconds)
                posted_s = time.monotonic() - started
                while soul.inbox.entries or soul.state != "asleep":
                    await asyncio.sleep(0.05)
                settled_s = time.monotonic() - started
            finally:
                task.cancel()
                await asyncio.gather(task, return_exceptions=True)
            seen = shown_reasons(fake.bodies[calls_before:])
            return {
                "storm": kind,
                "minIntervalSeconds": min_interval_s,
                "nudges": len(sent),
                "accepted": statuses.count(202),
                "posted_s": posted_s,
                "settled_s": settled_s,
                "wakings": soul.wakings - wakings_before,
                "model_calls": len(fake.bodies) - calls_before,
                "received": soul.inbox.received,
                "distinct": len(set(sent)),
                "seen": len(set(sent) & seen),
            }


def print_row(row: dict) -> None:
    print(
        f"{row['storm']:>9}  interval {row['minIntervalSeconds']:>4g} s  nudges {row['nudges']:>5}  "
        f"202s {row['accepted']:>5}  posted in {row['posted_s']:5.1f} s  settled after {row['settled_s']:5.1f} s  "
        f"wakings {row['wakings']:>4}  model calls {row['model_calls']:>4}  "
        f"distinct reasons in a snapshot {row['seen']}/{row['distinct']}"
    )


async def main(args) -> int:
    runs = [("identical", args.interval), ("distinct", args.interval)]
    if args.without_coalescing:
        runs += [("identical", 0), ("distinct", 0)]
    rows = await asyncio.gather(*(storm(kind, args, interval) for kind, interval in runs))
    for row in rows:
        print_row(row)
    identical, distinct = rows[0], rows[1]
    print(
        f"wakings_identical={identical['wakings']} wakings_distinct={distinct['wakings']} "
        f"reasons_seen={identical['seen'] + distinct['seen']}/{identical['distinct'] + distinct['distinct']}"
    )
    return 0


def parse_args(argv=None):
    parser = argparse.ArgumentParser(prog="tools/bench-storm", description=__doc__.split("\n\n")[0])
    parser.add_argument("--nudges", type=int, default=1000, help="nudges per storm (default: %(default)s)")
    parser.add_argument("--seconds", type=float, default=10.0, help="how long each storm lasts (default: %(default)s)")
    parser.add_argument(
        "--interval",
        type=float,
        default=60.0,
        help="the souls' nudge.minIntervalSeconds (default: %(default)s, the config's default)",
    )
    parser.add_argument(
        "--without-coalescing",
        action="store_true",
        help="also run both storms with nudge.minIntervalSeconds 0 (the soul before coalescing)",
    )
    return parser.parse_args(argv)


if __name__ == "__main__":
    logging.basicConfig(level=logging.ERROR)
    sys.exit(asyncio.run(main(parse_args())))
