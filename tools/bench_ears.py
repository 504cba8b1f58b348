"""How soon the robot answers a person (run it as tools/bench-ears).

Every part is real and on loopback, with ears' and tts' defaults: a recorded utterance ("what time is
it" and others, said by Piper's en_US-joe-medium with a least-significant bit of noise, so never the
same bytes twice) is played into the simulated robot's room in real time (the firmware under
MicroPython, the fake HAL's microphone); the robot end-points it after its default 0.7 s of silence
and streams it to `soulstack ears` (its default recogniser in this process, as the ears command runs it);
ears hands the words to a real soul (build_soul) whose model is the fake Messages API, paced so that
its first sentence takes `--model-ms`; the first sentence goes to the robot's /speak, which fetches
its speech from `soulstack tts` (the Piper voice) and plays it on the fake speaker. `--recogniser
pocketsphinx` and `--voice espeak` give the old rig. Clocks: the wall clock of this machine, shared
by the processes (the fake HAL's speaker log, ears' timeline, this process).

Stages, per run (ms):
  endpoint   last voiced sample in the room -> ears has the end of the stream, minus the configured
             silence the robot waits for (listen.silence_ms): our end-pointing and upload
  recognise  the end of the stream -> the recogniser's words (begun in the silence before: ears' head start)
  soul       the words -> the soul's first sentence complete at ears, minus the model's own time
  model      the fake model's own time before it wrote the first sentence (not ours)
  speak      the first sentence -> the robot's /speak took it
  tts        /speak took it -> the first sample played (the robot fetching the voice's speech, playback start)
  total      last voiced sample -> first played sample (everything, the silence window included)
  beyond     total - model: end of speech -> the first played sample, the model's own time taken out
             (goal on 2 cores: p50 <= 900 ms, p95 <= 1300 ms, the 0.7 s silence window included)
ears_overhead = total - silence - recognise - model: everything that is ours but the recogniser.
Last line: ears_overhead_ms_p50=N ears_overhead_ms_p95=N ears_total_ms_p50=N (goal: overhead p95 <= 150).
"""

import argparse
import array
import asyncio
import random
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from aiohttp.test_utils import unused_port  # noqa: E402

from soulstack.audio import little_endian, mono_samples, mono_wav  # noqa: E402
from soulstack.ears.commands import default_recogniser  # noqa: E402
from soulstack.ears.server import Ears, make_ears_app  # noqa: E402
from soulstack.ears.soul import Body, Soul  # noqa: E402
from soulstack.fakes.anthropic_api import FakeAnthropic, message, tool_use  # noqa: E402
from soulstack.fakes.soul_body import RecordingBody  # noqa: E402
from soulstack.serving import listening  # noqa: E402
from soulstack.sim.runner import Simulator  # noqa: E402
from soulstack.tts.server import make_tts_app  # noqa: E402
from soulstack.tts.voices import DEFAULT_VOICE, open_voices  # noqa: E402
from tools.bench_soul import awake_soul  # noqa: E402

# Phrases, taken in turn: the soul's converse reuses the answer to the same words for 15 s, so no phrase
# comes back sooner than that. (pocketsphinx, with --recogniser pocketsphinx, makes these out too.)
PHRASES = (
    "what time is it",
    "hello there",
    "what is your name",
    "thank you very much",
    "where are you",
    "are you awake",
)
ANSWER = "It is three o'clock. Time for tea!"
VOICE = ["-v", "en-us+f2", "-s", "160"]  # espeak-ng's, for --recogniser pocketsphinx
SILENCE_MS = 700  # the firmware's default listen.silence_ms
STAGES = ("endpoint", "recognise", "soul", "model", "speak", "tts", "total", "beyond", "overhead")


async def utterance(phrase, number, voices=None):
    """(16 kHz WAV bytes of `phrase`, ms from its start to its last voiced sample): said by `voices`
    (soulstack tts's, tts.voices.open_voices) or, without them, by espeak-ng.

    A least-significant bit of noise, different each run: a microphone never hears the same bytes
    twice, and ears takes the same bytes again for a resend."""
    if voices is not None:
        pcm = await spoken(voices, phrase)
        samples = array.array("h", pcm)
    else:
        with tempfile.TemporaryDirectory() as folder:
            raw = Path(folder) / "q.wav"
            subprocess.run(["espeak-ng", *VOICE, "-w", str(raw), phrase], check=True)
            samples = mono_samples(raw.read_bytes(), 16000)
    noise = random.Random(number)
    for i in range(len(samples)):
        samples[i] = max(-32768, min(32767, samples[i] + noise.choice((-1, 0, 1))))
    voiced = [i for i, value in enumerate(samples) if abs(value) > 600]
    return mono_wav(little_endian(samples), 16000), voiced[-1] / 16.0


async def spoken(voices, phrase) -> bytes:
    choice = await voices.choose(phrase, None)
    return await choice.synthesize(phrase)


def words_only(text: str) -> str:
    return " ".join(re.sub(r"[^\w\s']", " ", text.lower()).split())


def log_times(path: Path, kind: str) -> list:
    if not path.exists():
        return []
    return [int(line.split()[1]) for line in path.read_text().split("\n") if line.startswith(kind + " ")]


class Model:
    """The fake model: for a person's words (heard by the robot), waits `model_s` and answers; anything
    else (waking up, say), sleep. Words misheard are answered too, and counted: a bench that stalled on
    a mishearing would measure nothing."""

    def __init__(self, model_s):
        self.model_s = model_s
        self.spans = []  # (asked, answered) wall times for each answer
        self.misheard = []  # the words of each question not heard as said

    async def __call__(self, body):
        last = body["messages"][-1]["content"]
        text = last if isinstance(last, str) else " ".join(block.get("text", "") for block in last)
        sleep = tool_use("sleep", {"minutes": 60})
        quoted = re.search(r"\(heard by stackchan\): \u201c(.*?)\u201d", text)
        if quoted is None:
            return sleep
        if words_only(quoted[1]) not in PHRASES:
            self.misheard.append(quoted[1])
        asked = time.time()
        await asyncio.sleep(self.model_s)
        self.spans.append((asked, time.time()))
        call = {
            "type": "tool_use",
            "id": f"toolu_bench{len(self.spans):04d}",
            "name": "sleep",
            "input": {"minutes": 60},
        }
        return message({"type": "text", "text": ANSWER}, call)


def recogniser(args):
    if args.recogniser == "pocketsphinx":
        from soulstack.ears.sphinx import PocketSphinx

        return PocketSphinx()
    if args.recogniser == "moonshine":
        from soulstack.ears.moonshine import Moonshine

        return Moonshine()
    from soulstack.ears.whisper import Whisper

    return Whisper()


async def run(args) -> list:
    model = Model(args.model_ms / 1000)
    voices = await open_voices(args.voice)
    said_by = voices if args.recogniser != "pocketsphinx" else None  # pocketsphinx makes out espeak-ng's voice only
    rows = []
    with tempfile.TemporaryDirectory(prefix="soulstack-bench-ears-") as folder:
        folder = Path(folder)
        log = folder / "speaker.log"
        async with (
            RecordingBody() as own_body,
            FakeAnthropic(default=model) as fake,
            awake_soul(str(folder / "soul"), own_body, fake) as (_soul, soul_url),
        ):
            robot_port = unused_port()
            ears = Ears(
                recogniser(args),
                Soul(soul_url, None),
                {"stackchan": Body("stackchan", f"http://127.0.0.1:{robot_port}", None)},
            )
            async with (
                listening(make_ears_app(ears), "127.0.0.1", 0) as ears_port,
                listening(make_tts_app(voices=voices), "127.0.0.1", 0) as tts_port,
            ):
                robot = Simulator(
                    robot_port,
                    nudge_url=soul_url + "/nudge",
                    tts_url=f"http://127.0.0.1:{tts_port}/tts",
                    fake={"speaker_log": str(log)},
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                    config={
                        "ears_url": f"http://127.0.0.1:{ears_port}/utterance",
                        "listen": {"conversation": False, "silence_ms": SILENCE_MS},
                    },
                ).start()
                try:
                    if not await asyncio.to_thread(robot.wait_until_serving):
                        raise RuntimeError("the simulated robot did not start")
                    for number in range(args.runs):
                        phrase = PHRASES[number % len(PHRASES)]
                        wav, last_voiced_ms = await utterance(phrase, number, said_by)
                        rows.append(await one_run(robot, ears, model, log, wav, last_voiced_ms))
                        print(f"run {number + 1}: total {rows[-1]['total']:.0f} ms", file=sys.stderr, flush=True)
                finally:
                    robot.stop()
    return rows, model.misheard


async def one_run(robot, ears, model, log, wav, last_voiced_ms):
    starts, sounds, heard = len(log_times(log, "start")), len(log_times(log, "sound")), len(ears.timeline)
    robot.touch()
    await asyncio.sleep(0.12)
    robot.touch(down=False)
    await asyncio.sleep(0.2)  # the microphone is live (its indicator is on)
    robot.play_into_room(wav)
    deadline = time.monotonic() + 20
    while len(log_times(log, "start")) <= starts or len(ears.timeline) <= heard:
        if time.monotonic() > deadline:
            raise RuntimeError(
                f"no answer was played within 60 s: {ears.timeline} {log.read_text() if log.exists() else None!r:.300} {ears.stats}"
            )
        await asyncio.sleep(0.01)
    await asyncio.sleep(0.05)
    times = ears.timeline[-1]
    sound = log_times(log, "sound")[sounds] / 1000
    first_sample = log_times(log, "start")[starts] / 1000
    asked, answered = model.spans[-1]
    last_voiced = sound + last_voiced_ms / 1000
    ms = {
        "endpoint": (times["stream_end"] - last_voiced) * 1000 - SILENCE_MS,
        "recognise": (times["recognised"] - times["stream_end"]) * 1000,
        "model": (answered - asked) * 1000,
        "speak": (times["first_spoken"] - times["first_sentence"]) * 1000,
        "tts": (first_sample - times["first_spoken"]) * 1000,
        "total": (first_sample - last_voiced) * 1000,
    }
    ms["soul"] = (times["first_sentence"] - times["recognised"]) * 1000 - ms["model"]
    ms["beyond"] = ms["total"] - ms["model"]
    ms["overhead"] = ms["total"] - SILENCE_MS - ms["recognise"] - ms["model"]
    # Wait until the whole answer has played out (its sentences fetch their speech one by one, with
    # silences between): a tap while it speaks would cut it off instead of starting the next run.
    while log_times(log, "until") and log_times(log, "until")[-1] > time.time() * 1000 - 1500:
        await asyncio.sleep(0.05)
    return ms


def pct(values, p):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(p / 100 * (len(ordered) - 1))))]


def report(rows, misheard, args) -> list:
    lines = [
        f"{len(rows)} runs; {args.recogniser}, {args.voice}; model's first sentence after {args.model_ms} ms; "
        f"robot waits {SILENCE_MS} ms of silence",
        f"misheard {len(misheard)} of {len(rows)}" + "".join(f"; {words!r}" for words in misheard),
        f"{'stage':<10} {'p50 ms':>8} {'p95 ms':>8}",
    ]
    for stage in STAGES:
        values = [row[stage] for row in rows]
        lines.append(f"{stage:<10} {statistics.median(values):>8.0f} {pct(values, 95):>8.0f}")
    overhead = [row["overhead"] for row in rows]
    total = [row["total"] for row in rows]
    lines.append(
        f"ears_overhead_ms_p50={statistics.median(overhead):.0f} ears_overhead_ms_p95={pct(overhead, 95):.0f} "
        f"ears_total_ms_p50={statistics.median(total):.0f}"
    )
    return lines


def parse(argv):
    parser = argparse.ArgumentParser(prog="tools/bench-ears", description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=20, help="utterances (default 20)")
    parser.add_argument("--model-ms", type=int, default=300, help="the fake model's time to its first sentence")
    parser.add_argument(
        "--recogniser",
        choices=("moonshine", "whisper", "pocketsphinx"),
        default=default_recogniser("en"),
        help="default: ears' own for English",
    )
    parser.add_argument("--voice", default=DEFAULT_VOICE, help=f"as soulstack tts --voice (default {DEFAULT_VOICE})")
    return parser.parse_args(argv)


def main(argv=None):
    args = parse(argv)
    for line in report(*asyncio.run(run(args)), args):
        print(line)


if __name__ == "__main__":
    main()
