"""Which voice speaks a request: `--voice` for the soul's language, and one for Chinese.

`--voice piper:NAME|PATH` (default: en_US-joe-medium, installed with soulstack),
`wyoming:tcp://HOST:PORT` or `espeak[:VOICE]`. A zh soul's words (a request with
"lang"/"voice" "zh", or, when none is named, a text with Han characters in it: the
firmware sends only the text) go to a Chinese voice: a Chinese Piper voice in the voice
folder when the person has one, else espeak-ng's `cmn`.
Nothing is ever downloaded: a voice is a file the person has, or a server they run.
"""

import shutil
from pathlib import Path

from soulstack.cjk import chinese
from soulstack.tts import DEFAULT_VOICE, VOICE_KINDS, espeak
from soulstack.tts.espeak import EspeakVoice
from soulstack.tts.piper import PiperVoice, VoiceProblem, default_voice_dir, find_voice, zh_voice
from soulstack.tts.speech import TtsError
from soulstack.tts.wyoming_voice import WyomingVoice


def family(name: str) -> str:
    """A voice or language name's language family: "en-us" -> "en", "zh_CN" and "cmn" -> "zh"."""
    first = name.lower().replace("_", "-").split("-", 1)[0]
    return "zh" if first in ("zh", "cmn") else first


class Choice:
    """A voice and what to tell it: the espeak-ng voice name, or nothing."""

    def __init__(self, voice, name: str | None = None):
        self.voice = voice
        self.name = name

    def describe(self) -> str:
        if isinstance(self.voice, EspeakVoice):
            return f"espeak-ng {self.name or self.voice.voice}"
        return self.voice.describe()

    async def synthesize(self, text: str) -> bytes:
        return await self.voice.synthesize(text, self.name)


class Voices:
    """The server's voices: `main` for its language, `zh` for Chinese (`zh_why`: why that one)."""

    def __init__(self, main, zh: Choice, zh_why: str = "", note: str = ""):
        self.main = main
        self.zh = zh
        self.zh_why = zh_why
        self.note = note  # what the person should know at start (espeak-ng missing)

    @classmethod
    def espeak_only(cls, voice: str = "en") -> "Voices":
        """espeak-ng alone, checked at each request (what `make_tts_app` speaks with unless told)."""
        return cls(EspeakVoice(voice), Choice(EspeakVoice("cmn"), "cmn"))

    def describe(self) -> str:
        zh = self.zh.describe() + (f" ({self.zh_why})" if self.zh_why else "")
        return f"voice {self.main.describe()}{self.note}; Chinese: {zh}"

    async def choose(self, text: str, asked: str | None) -> Choice:
        """The voice for a request's `text` and its "voice"/"lang" (`asked`, None when it names none)."""
        wanted = family(asked) if asked else ("zh" if chinese(text) else None)
        if wanted == "zh":
            return self.zh
        if isinstance(self.main, EspeakVoice):
            return Choice(self.main, asked or self.main.voice)  # espeak-ng knows ~100 languages by name
        if not isinstance(self.main, PiperVoice) or wanted in (None, self.main.language):
            return Choice(self.main)  # a Wyoming server's default voice: its language is its owner's choice
        # A language the Piper voice does not speak: espeak-ng's voice for it, or an honest 400.
        assert asked is not None, "a language other than the main voice's was asked for by name"
        await espeak.check_voice(espeak.program(), asked)
        return Choice(EspeakVoice(asked), asked)


async def open_voices(spec: str, voice_dir: Path | None = None) -> Voices:
    """The voices `--voice spec` names, loaded and warm; VoiceProblem (one line for the person) if not.

    A missing espeak-ng is no reason not to start (it is a package, not a choice, and may be
    installed later): the start line says so and each request is a 503 until it is there."""
    voice_dir = voice_dir or default_voice_dir()
    kind, _, rest = spec.partition(":")
    note = "" if shutil.which("espeak-ng") else " (espeak-ng is not installed: sudo apt install espeak-ng)"
    main: EspeakVoice | PiperVoice | WyomingVoice
    if kind == "espeak":
        main = EspeakVoice(rest or "en")
        if not note:
            await _check_espeak(main.voice, f"--voice {spec}")
    elif kind == "piper":
        name, model = find_voice(rest or DEFAULT_VOICE.split(":", 1)[1], voice_dir)
        main = PiperVoice.load(model, name)
        main.warm()
        note = note and " (its phonemes come from espeak-ng, which is not installed: sudo apt install espeak-ng)"
    elif kind == "wyoming":
        main = WyomingVoice(rest)
        await main.describe_server()
        note = ""  # only its Chinese needs espeak-ng (said there)
    else:
        raise VoiceProblem(f"--voice {spec}: say which voice as {VOICE_KINDS}")
    return Voices(main, *await _chinese(main, voice_dir), note=note)


async def _chinese(main, voice_dir: Path) -> tuple[Choice, str]:
    """The voice for Chinese and why it is that one."""
    if isinstance(main, PiperVoice) and main.language == "zh":
        return Choice(main), ""
    model, problem = zh_voice(voice_dir)
    if model is not None:
        voice = PiperVoice.load(model)
        voice.warm()
        return Choice(voice), f"from {voice_dir}"
    why = problem or f"no Chinese Piper voice in {voice_dir}"
    if not shutil.which("espeak-ng"):
        return Choice(EspeakVoice("cmn"), "cmn"), why + "; espeak-ng is not installed, so Chinese is a 503 until it is"
    spoken = await espeak.mandarin(espeak.program())
    if spoken != "cmn":
        why += f"; as {spoken}: this espeak-ng's cmn reads Chinese characters as English"
    return Choice(EspeakVoice("cmn"), "cmn"), why


async def _check_espeak(voice: str, what: str):
    try:
        await espeak.check_voice(espeak.program(), voice)
    except TtsError as problem:
        raise VoiceProblem(f"{what}: {problem.message}") from None
