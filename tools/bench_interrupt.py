#!/usr/bin/env python3
"""How fast the person can cut the robot off (issue 31). Goals: robot p95 <= 100 ms, adapter p95 <= 50 ms.

- robot: on the simulator, a touch while the firmware speaks -> its last played
  sample (tools/bench_interrupt_robot.py's `measure_robot`, the firmware's
  half; "unknown" while that file is not there);
- adapter: through `soulstack body stackchan` with the fake robot and the fake
  xiaozhi-server on loopback: the robot's `listen start` while our speech
  streams -> the last Opus frame of ours it receives (0 when none came after
  it: frames are paced 60 ms apart, and the adapter stops before the next is
  due), and the same listen start -> our `tts stop` (how long the adapter
  takes to react). Each run is a real POST /speak (espeak-ng through the real
  `soulstack tts`, real libopus), cut at a random moment 0.1-0.5 s into the
  speech.

p50 and p95 over `--runs` interruptions (at least 50 by default). The last line reads
`interrupt_robot_ms_p95=N interrupt_adapter_ms_p95=N`.

    tools/bench-interrupt [--runs 50]
"""

import argparse
import asyncio
import inspect
import json
import os
import random
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
from soulstack.fakes.xiaozhi_robot import FakeRobot  # noqa: E402
from soulstack.fakes.xiaozhi_upstream import FakeUpstream  # noqa: E402
from soulstack.serving import listening  # noqa: E402
from soulstack.tts.server import make_tts_app as tts_app  # noqa: E402

SPEECH = "This is a long sentence the robot is saying, and the person is about to cut it off, as people do."


def percentile(values, share):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def _stops(robot) -> int:
    return sum(1 for m in robot.texts() if m["type"] == "tts" and m["state"] == "stop")


async def _until(check, timeout_s=10.0):
    deadline = time.monotonic() + timeout_s
    while not check():
        if time.monotonic() > deadline:
            raise TimeoutError("the robot never got what it waited for")
        await asyncio.sleep(0.002)


async def adapter_ms(runs: int, rng: random.Random) -> list:
    async with (
        FakeUpstream() as upstream,
        listening(tts_app(), "127.0.0.1", 0) as tts_port,
        aiohttp.ClientSession() as http,
    ):
        body = StackChanBody(upstream.url, tts_url=f"http://127.0.0.1:{tts_port}/tts", device_token="robot-token")
        async with body.serving("127.0.0.1", 0, "127.0.0.1", 0, vision_port=0) as (body_port, robot_port, _):
            robot = await FakeRobot(f"ws://127.0.0.1:{robot_port}/xiaozhi/v1/").connect()
            await _until(lambda: body.session is not None and body.session.online)
            latencies, stopped = [], []
            for _ in range(runs):
                stops, frames = _stops(robot), len(robot.received)
                async with http.post(f"http://127.0.0.1:{body_port}/speak", json={"text": SPEECH}) as answer:
                    if answer.status != 200:
                        raise RuntimeError(f"/speak answered {answer.status}: {await answer.text()}")
                await asyncio.sleep(rng.uniform(0.1, 0.5))
                pressed = time.perf_counter()
                await robot.start_listening()
                await _until(lambda: _stops(robot) > stops)
                stop_at = next(
                    at
                    for frame, at in zip(robot.received[frames:], robot.arrived[frames:], strict=True)
                    if isinstance(frame, str) and json.loads(frame).get("state") == "stop"
                )
                stopped.append((stop_at - pressed) * 1000)
                ours = [
                    at
                    for frame, at in zip(robot.received[frames:], robot.arrived[frames:], strict=True)
                    if isinstance(frame, bytes)
                ]
                latencies.append(max(0.0, (ours[-1] - pressed) * 1000) if ours else 0.0)
                await robot.stop_listening()  # the person has spoken: the next speech need not wait for them
            await robot.close()
    return latencies, stopped


def robot_ms(runs: int):
    """The firmware's half, when its bench is there (tools/bench_interrupt_robot.py); None otherwise."""
    sys.path.insert(0, str(ROOT / "tools"))
    try:
        from bench_interrupt_robot import measure_robot
    except ImportError:
        return None
    measured = measure_robot(runs)
    return asyncio.run(measured) if inspect.isawaitable(measured) else measured


def line(name: str, values) -> str:
    if not values:
        return f"{name}: unknown"
    return (
        f"{name}: p50 {statistics.median(values):.1f} ms, p95 {percentile(values, 0.95):.1f} ms, "
        f"max {max(values):.1f} ms over {len(values)} interruptions"
    )


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=50, help="interruptions per half (default: %(default)s)")
    parser.add_argument("--seed", type=int, default=31)
    parser.add_argument("--json", action="store_true", help="also print the figures as one JSON line")
    args = parser.parse_args()
    if args.runs < 1:
        parser.error("--runs must be at least 1")
    if not shutil.which("espeak-ng"):
        sys.exit("tools/bench-interrupt needs espeak-ng for the speech it cuts off (apt install espeak-ng)")
    robot = robot_ms(args.runs)
    adapter, stopped = asyncio.run(adapter_ms(args.runs, random.Random(args.seed)))
    print(line("robot (touch -> last played sample, simulator)", robot))
    print(line("adapter (listen start -> our last Opus frame, fake robot)", adapter))
    print(line("adapter (listen start -> our tts stop, fake robot)", stopped))
    robot_p95 = "unknown" if not robot else round(percentile(robot, 0.95))
    if args.json:
        print(json.dumps({"robot_ms": robot, "adapter_ms": adapter, "adapter_stop_ms": stopped}))
    print(f"interrupt_robot_ms_p95={robot_p95} interrupt_adapter_ms_p95={round(percentile(adapter, 0.95))}")


if __name__ == "__main__":
    main()
