"""How fast a tap stops the robot's speech, on the simulator: touch -> last played sample, in ms.

The real firmware runs under MicroPython with the fake HAL; `soulstack tts` makes
its speech (espeak-ng). Each run queues a long sentence on /speak, waits until
it plays, puts a finger on the screen and reads the fake speaker's log: the
moment its last sample ends (hal/fake.py's `until`: a stop cuts what it holds to
that moment). `measure_robot(runs)` returns one figure per run; tools/bench-interrupt
(issue 31) reports them beside the StackChan adapter's. Run alone it prints them:
    .venv/bin/python tools/bench_interrupt_robot.py [--runs N]
"""

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import aiohttp  # noqa: E402
from aiohttp import web  # noqa: E402
from aiohttp.test_utils import unused_port  # noqa: E402

from soulstack.serving import listening  # noqa: E402
from soulstack.sim.runner import Simulator  # noqa: E402
from soulstack.tts.server import make_tts_app  # noqa: E402

LONG = (
    "Let me tell you about the clouds over the harbour this morning, they were long and grey "
    "and moving slowly toward the hills while the boats went out one after another."
)


def wall_ms():
    return time.time_ns() / 1e6


def last_until(log: Path):
    lines = [line for line in log.read_text().split("\n") if line.startswith("until")] if log.exists() else []
    return int(lines[-1].split()[1]) if lines else None


class Nudges:
    """A soul's /nudge, recording what the robot sends (the `heard` nudge among them)."""

    def __init__(self):
        self.sent = []

    def app(self):
        app = web.Application()

        async def nudge(request):
            self.sent.append(json.loads(await request.read()))
            return web.json_response({"queued": True}, status=202)

        app.router.add_post("/nudge", nudge)
        return app


class RobotRig:
    """The simulated robot, its TTS server and a nudge recorder, on loopback."""

    def __init__(self, folder: Path, config=None, voices=None):
        self.folder = folder
        self.config = config
        self.voices = voices  # soulstack tts's voices (tts.voices.open_voices); espeak-ng alone by default
        self.log = folder / "speaker.log"
        self.nudges = Nudges()
        self.screen = []

    async def __aenter__(self):
        self.tts = listening(make_tts_app(voices=self.voices), "127.0.0.1", 0)
        tts_port = await self.tts.__aenter__()
        self.nudge_server = listening(self.nudges.app(), "127.0.0.1", 0)
        nudge_port = await self.nudge_server.__aenter__()
        self.port = unused_port()
        self.robot = Simulator(
            self.port,
            nudge_url=f"http://127.0.0.1:{nudge_port}/nudge",
            tts_url=f"http://127.0.0.1:{tts_port}/tts",
            fake={"speaker_log": str(self.log)},
            show=self.screen.append,
            config=self.config,
        )
        self.robot.start()
        if not await asyncio.to_thread(self.robot.wait_until_serving):
            raise RuntimeError("the simulated robot did not start: " + " ".join(self.robot.last_words))
        self.robot.release()
        self.http = aiohttp.ClientSession()
        return self

    async def __aexit__(self, *exc):
        await self.http.close()
        self.robot.stop()
        await self.nudge_server.__aexit__(None, None, None)
        await self.tts.__aexit__(None, None, None)

    async def speak(self, text):
        async with self.http.post(f"http://127.0.0.1:{self.port}/speak", json={"text": text}) as response:
            assert response.status == 200, await response.text()

    async def playing(self, ahead_ms=50, timeout_s=20):
        """Wait until the speaker holds at least `ahead_ms` of sound still to play."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            until = last_until(self.log)
            if until is not None and until - wall_ms() > ahead_ms:
                return
            await asyncio.sleep(0.01)
        raise RuntimeError("the robot never started playing its speech")

    async def interrupt(self):
        """Tap while it speaks; ms from the tap to the last sample played."""
        self.robot.touch()
        touched = wall_ms()
        await asyncio.sleep(0.4)
        self.robot.touch(down=False)
        return max(0.0, last_until(self.log) - touched)

    async def quiet(self, timeout_s=10):
        """Wait until the speaker has played everything (and the robot had time to notice)."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            until = last_until(self.log)
            if until is None or until < wall_ms() - 300:
                return
            await asyncio.sleep(0.05)


async def _measure(runs: int) -> list:
    figures = []
    with tempfile.TemporaryDirectory(prefix="soulstack-bench-interrupt-") as folder:
        async with RobotRig(Path(folder)) as rig:
            for _ in range(runs):
                await rig.speak(LONG)
                await rig.playing()
                await asyncio.sleep(0.05 + 0.25 * (len(figures) % 4) / 4)  # the tap lands anywhere in a chunk
                figures.append(await rig.interrupt())
                await rig.quiet()
    return figures


def measure_robot(runs: int) -> list:
    """ms from a tap to the last played sample, one per run (the simulated robot speaking each time)."""
    return asyncio.run(_measure(runs))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=20)
    args = parser.parse_args(argv)
    figures = sorted(measure_robot(args.runs))
    p95 = figures[min(len(figures) - 1, int(round(0.95 * (len(figures) - 1))))]
    print(f"runs {len(figures)}  p50 {statistics.median(figures):.0f} ms  p95 {p95:.0f} ms  max {figures[-1]:.0f} ms")
    print(f"interrupt_robot_ms_p95={p95:.0f}")


if __name__ == "__main__":
    main()
