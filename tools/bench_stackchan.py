#!/usr/bin/env python3
"""What the xiaozhi proxy body adds, measured on loopback with the test fakes (goal: relay p99 < 2 ms).

- relay: one-way latency of a 60 ms Opus-sized binary frame from the fake
  robot to the fake xiaozhi-server, straight and through the adapter; the
  difference is what the adapter adds per frame.
- speak: POST /speak until the robot holds its first audio frame (includes
  espeak-ng through the real `soulstack tts` server and Opus encoding).
- look: POST /look until the JPEG is back (MCP call, the robot's chunked
  multipart upload, base64).

    tools/bench-stackchan [--frames 2000] [--rounds 10]
"""

import argparse
import asyncio
import os
import shutil
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
VENV_PYTHON = ROOT / ".venv" / "bin" / "python"
if VENV_PYTHON.exists() and Path(sys.prefix).resolve() != (ROOT / ".venv").resolve():
    os.execv(str(VENV_PYTHON), [str(VENV_PYTHON), __file__, *sys.argv[1:]])
sys.path.insert(0, str(ROOT))

import aiohttp  # noqa: E402

from soulstack.adapters.stackchan.body import StackChanBody  # noqa: E402
from soulstack.serving import listening  # noqa: E402
from soulstack.tts.server import make_tts_app as tts_app  # noqa: E402
from soulstack.fakes.xiaozhi_robot import FakeRobot  # noqa: E402
from soulstack.fakes.xiaozhi_upstream import FakeUpstream  # noqa: E402

FRAME = bytes(range(256)) * 1  # about the size of one 60 ms Opus packet of speech


def percentile(values, share):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


async def one_way_ms(robot: FakeRobot, record: dict) -> float:
    """One frame's trip from robot.send to the upstream's receipt, in ms."""
    before = len(record["arrived"])
    sent = time.perf_counter()
    await robot.send(FRAME)
    while len(record["arrived"]) == before:
        await asyncio.sleep(0)
    return (record["arrived"][before] - sent) * 1000


async def bench(frames: int, rounds: int):
    async with FakeUpstream() as upstream, listening(tts_app(), "127.0.0.1", 0) as tts_port:
        direct = await FakeRobot(upstream.url).connect()
        direct_record = upstream.connections[-1]

        body = StackChanBody(upstream.url, tts_url=f"http://127.0.0.1:{tts_port}/tts")
        async with (
            body.serving("127.0.0.1", 0, "127.0.0.1", 0, vision_port=0) as (body_port, robot_port, _),
            aiohttp.ClientSession() as http,
        ):
            robot = await FakeRobot(f"ws://127.0.0.1:{robot_port}/xiaozhi/v1/").connect()
            while not (body.session and body.session.online):
                await asyncio.sleep(0.01)
            # Straight and relayed frames alternate, so both see the same moment of a busy machine.
            straight, relayed = [], []
            for _ in range(frames):
                straight.append(await one_way_ms(direct, direct_record))
                relayed.append(await one_way_ms(robot, upstream.connections[-1]))
            added = [through - plain for through, plain in zip(relayed, straight, strict=True)]
            p50, p99 = statistics.median(added), percentile(added, 0.99)
            print(
                f"relay, {frames} frames: straight p50 {statistics.median(straight):.3f} ms p99 {percentile(straight, 0.99):.3f} ms; "
                f"through the adapter p50 {statistics.median(relayed):.3f} ms p99 {percentile(relayed, 0.99):.3f} ms"
            )
            print(
                f"relay: the adapter adds p50 {p50:.3f} ms, p90 {percentile(added, 0.90):.3f} ms, p99 {p99:.3f} ms per frame, "
                f"pair by pair (goal p99 < 2 ms); load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs "
                "(robot, adapter and server share one process, so on a busy machine p99 is scheduling)"
            )

            url = f"http://127.0.0.1:{body_port}"
            if shutil.which("espeak-ng"):
                firsts = []
                for _ in range(rounds):
                    await asyncio.sleep(0)
                    count = sum(isinstance(f, bytes) for f in robot.received)
                    started = time.perf_counter()
                    async with http.post(f"{url}/speak", json={"text": "Hello, I am here."}) as answer:
                        assert answer.status == 200, await answer.text()
                    while sum(isinstance(f, bytes) for f in robot.received) == count:
                        await asyncio.sleep(0.001)
                    firsts.append((time.perf_counter() - started) * 1000)
                    while body.session.voice.locked():
                        await asyncio.sleep(0.01)
                print(
                    f"speak, {rounds} utterances: first audio frame at the robot p50 {statistics.median(firsts):.1f} ms, "
                    f"max {max(firsts):.1f} ms (espeak-ng + Opus included)"
                )
            else:
                print("speak: skipped (espeak-ng is not installed)")

            looks = []
            for _ in range(rounds):
                started = time.perf_counter()
                async with http.post(f"{url}/look", json={"question": "who is there?"}) as answer:
                    assert answer.status == 200 and "image" in await answer.json()
                looks.append((time.perf_counter() - started) * 1000)
            print(
                f"look, {rounds} photos: round trip p50 {statistics.median(looks):.1f} ms, max {max(looks):.1f} ms "
                f"(MCP call + chunked multipart upload of {len(robot.photo)} bytes)"
            )
            await robot.close()
        await direct.close()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frames", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=10)
    args = parser.parse_args()
    asyncio.run(bench(args.frames, args.rounds))


if __name__ == "__main__":
    main()
