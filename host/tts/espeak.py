"""The espeak-ng program: a voice of its own (`--voice espeak[:VOICE]`) and the phonemes of Piper's voices.

espeak-ng is GPL-3 and soulstack is MIT, so it is only ever run as a separate
program (a Debian package), never linked or imported: text goes in on stdin,
a WAV or IPA phonemes come out on stdout. A run costs ~15 ms.
"""

import asyncio
import io
import re
import shutil
import wave
from pathlib import Path

from soulstack.tts.speech import TtsError, pcm_samples, to_robot

VOICE_PATTERN = re.compile(r"^[A-Za-z0-9_+\-]{1,40}$")
_voices: dict[
    str, set[str]
] = {}  # espeak-ng's path -> the voice names it knows (asked once: a process each time costs ~15 ms)
_mandarin: dict[str, str] = {}  # espeak-ng's path -> the voice that reads Chinese characters as Mandarin there


def program() -> str:
    """espeak-ng's path, or TtsError(503) saying how to install it."""
    espeak = shutil.which("espeak-ng")
    if not espeak:
        raise TtsError(503, "espeak-ng is not installed on this computer (sudo apt install espeak-ng)")
    return espeak


async def run(argv: list[str], stdin: bytes | None = None) -> bytes:
    process = await asyncio.create_subprocess_exec(
        *argv, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
    )
    out, err = await process.communicate(stdin)
    if process.returncode:
        complaint = err.decode(errors="replace").strip()
        raise TtsError(500, f"{Path(argv[0]).name} failed: {complaint[:200]}")
    return out


async def known_voices(espeak: str) -> set:
    """Every name espeak-ng answers to: languages, voice names, files, aliases (it silently
    falls back to English for an unknown one, so we check first)."""
    if espeak in _voices:
        return _voices[espeak]
    listing = (await run([espeak, "--voices"])).decode(errors="replace").splitlines()[1:]
    names: set[str] = set()
    for line in listing:
        fields = line.split()
        if len(fields) >= 5:
            names.update((fields[1].lower(), fields[3].lower(), fields[4].rsplit("/", 1)[-1].lower()))
        names.update(alias.lower() for alias in re.findall(r"\(([^\s()]+) \d+\)", line))
    _voices[espeak] = names
    return names


async def check_voice(espeak: str, voice: str):
    """TtsError(400) unless espeak-ng knows `voice` (a variant after "+" is espeak-ng's own business)."""
    if not VOICE_PATTERN.match(voice) or voice.split("+", 1)[0].lower() not in await known_voices(espeak):
        raise TtsError(400, f'espeak-ng has no voice "{voice}" (see espeak-ng --voices)')


async def mandarin(espeak: str) -> str:
    """The espeak-ng voice that reads Chinese characters right: `cmn`, except where it does not.

    Debian 12's espeak-ng 1.51 turns 你好 into pinyin with tone digits and, its `cmn` voice
    reading Latin letters as English, says "ni three hao three" (its IPA shows the switch:
    "(en)nɪ5θɹˈiː5 ..."); its `cmn-latn-pinyin` reads the same pinyin as Mandarin. So ask once."""
    if espeak not in _mandarin:
        heard = await run([espeak, "-q", "--ipa", "-v", "cmn", "--stdin"], "你好".encode())
        broken = b"(en)" in heard and "cmn-latn-pinyin" in await known_voices(espeak)
        _mandarin[espeak] = "cmn-latn-pinyin" if broken else "cmn"
    return _mandarin[espeak]


async def as_spoken(espeak: str, voice: str) -> str:
    """`voice`, or the one that reads Chinese right where `voice` is espeak-ng's Mandarin."""
    return await mandarin(espeak) if voice.lower() == "cmn" else voice


class EspeakVoice:
    """espeak-ng's formant voice: fast (~15 ms a sentence), robotic, and it knows ~100 languages."""

    streams = False  # the whole text takes as long as one run: it is made at once and its length is known

    def __init__(self, voice: str = "en"):
        self.voice = voice

    def describe(self) -> str:
        return f"espeak-ng {self.voice}"

    async def synthesize(self, text: str, voice: str | None = None) -> bytes:
        """`text` spoken by espeak-ng's `voice` (default: this one's), as 16 kHz mono 16-bit bytes."""
        espeak = program()
        voice = voice or self.voice
        await check_voice(espeak, voice)
        voice = await as_spoken(espeak, voice)
        wav_bytes = await run([espeak, "-v", voice, "--stdin", "--stdout"], text.encode())
        try:
            with wave.open(io.BytesIO(wav_bytes)) as source:
                rate, width, channels = source.getframerate(), source.getsampwidth(), source.getnchannels()
                frames = source.readframes(source.getnframes())
            return to_robot(pcm_samples(frames, width, channels), rate)
        except (wave.Error, EOFError, ValueError) as error:
            raise TtsError(500, f"espeak-ng wrote unusable audio: {error}") from None


# Clause punctuation the Piper models were trained with in their phoneme strings; CJK marks stand for theirs.
_CLAUSE_MARKS = {",": ",", ".": ".", ";": ";", ":": ":", "!": "!", "?": "?", "\u2026": "."}
_CLAUSE_MARKS.update({"\uff0c": ",", "\u3001": ",", "\u3002": ".", "\uff1b": ";", "\uff1a": ":"})
_CLAUSE_MARKS.update({"\uff01": "!", "\uff1f": "?", "\u2014": ";"})  # a dash: espeak-ng's clause break too
# A clause ends at a run of those marks: Latin ones before whitespace or the end ("3.5" goes on), CJK ones and a dash at once.
_CLAUSE_END = re.compile(r"[,.;:!?\u2026]+(?=\s|$)|[\uff0c\u3001\u3002\uff1b\uff1a\uff01\uff1f\u2014]+")
_LANGUAGE_FLAG = re.compile(r"\([^)]*\)")  # "(en)" ... "(cmn)": where espeak-ng switched language for a word


def clauses(sentence: str) -> list[tuple[str, str]]:
    """(words, their mark: "," "." ... or "") for each clause of `sentence`."""
    out, start = [], 0
    for match in _CLAUSE_END.finditer(sentence):
        out.append((sentence[start : match.start()], _CLAUSE_MARKS[match.group()[-1]]))
        start = match.end()
    out.append((sentence[start:], ""))
    return [(words.strip(), mark) for words, mark in out if words.strip()]


async def ipa(sentence: str, voice: str) -> str:
    """`sentence` as espeak-ng's IPA with its clause punctuation kept, as Piper's voices were trained:
    "Hello, world." -> "həlˈoʊ, wˈɜːld."

    espeak-ng's program prints each clause's phonemes on a line of its own and drops the
    punctuation, so the sentence is cut into clauses here, each phonemized (concurrently:
    ~15 ms a run), and its mark put back."""
    espeak = program()
    voice = await as_spoken(espeak, voice)
    parts = clauses(sentence)
    runs = [run([espeak, "-q", "--ipa", "-v", voice, "--stdin"], words.encode()) for words, _ in parts]
    pieces = []
    for (_, mark), out in zip(parts, await asyncio.gather(*runs), strict=True):
        lines = [_LANGUAGE_FLAG.sub("", line).strip() for line in out.decode(errors="replace").splitlines()]
        phonemes = " ".join(line for line in lines if line)
        if phonemes:
            pieces.append(phonemes + mark)
    return " ".join(pieces)
