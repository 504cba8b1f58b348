"""The TTS server: POST /tts {"text", optional "voice"/"lang"} -> audio/wav, 16 kHz mono 16-bit.

espeak-ng (a Debian package) speaks offline at its native 22050 Hz; the result
is resampled to the 16 kHz the firmware plays, with sox when it is installed
and with a small linear resampler otherwise.
"""

import asyncio
import re
import shutil
import tempfile
from pathlib import Path

from aiohttp import web

from soulstack.audio import AudioError, little_endian, mono_samples, mono_wav
from soulstack.serving import error_response, make_server_app, read_json

TARGET_RATE = 16000
MAX_TEXT = 2000
VOICE_PATTERN = re.compile(r"^[A-Za-z0-9_+\-]{1,40}$")


class TtsError(Exception):
    def __init__(self, status, message):
        super().__init__(message)
        self.status = status
        self.message = message


def parse_request(payload):
    """(text, voice) from a request body, or TtsError(400) naming what is wrong."""
    if not isinstance(payload, dict):
        raise TtsError(400, 'send a JSON object like {"text": "hello"}')
    text = payload.get("text")
    if not isinstance(text, str) or not text.strip():
        raise TtsError(400, '"text" must be a non-empty string')
    if len(text) > MAX_TEXT:
        raise TtsError(400, f'"text" is {len(text)} characters; at most {MAX_TEXT}')
    voice = payload.get("voice", payload.get("lang", "en"))
    if not isinstance(voice, str) or not VOICE_PATTERN.match(voice):
        raise TtsError(400, '"voice"/"lang" must be an espeak-ng voice name such as "en", "en-us" or "zh"')
    return text, voice


def to_16k_mono(wav_bytes: bytes) -> bytes:
    """Any 16-bit PCM WAV -> 16 kHz mono 16-bit WAV, in Python."""
    try:
        samples = mono_samples(wav_bytes, TARGET_RATE)
    except AudioError as error:
        raise TtsError(500, f"espeak-ng wrote unusable audio: {error}") from None
    return mono_wav(little_endian(samples), TARGET_RATE)


async def _run(argv, stdin=None):
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
    listing = (await _run([espeak, "--voices"])).decode(errors="replace").splitlines()[1:]
    names = set()
    for line in listing:
        fields = line.split()
        if len(fields) >= 5:
            names.update((fields[1].lower(), fields[3].lower(), fields[4].rsplit("/", 1)[-1].lower()))
        names.update(alias.lower() for alias in re.findall(r"\(([^\s()]+) \d+\)", line))
    return names


async def synthesize(text: str, voice: str) -> bytes:
    """16 kHz mono WAV bytes of `text` spoken by espeak-ng."""
    espeak = shutil.which("espeak-ng")
    if not espeak:
        raise TtsError(503, "espeak-ng is not installed on this computer (sudo apt install espeak-ng)")
    if voice.split("+", 1)[0].lower() not in await known_voices(espeak):
        raise TtsError(400, f'espeak-ng has no voice "{voice}" (see espeak-ng --voices)')
    with tempfile.TemporaryDirectory(prefix="soulstack-tts-") as folder:
        raw = Path(folder) / "speech.wav"
        await _run([espeak, "-v", voice, "--stdin", "-w", str(raw)], text.encode())
        sox = shutil.which("sox")
        if sox:
            # Into a file, not stdout: sox can only write correct WAV sizes when it can seek.
            resampled = Path(folder) / "speech-16k.wav"
            await _run(
                [sox, str(raw), "-r", str(TARGET_RATE), "-c", "1", "-b", "16", "-e", "signed-integer", str(resampled)]
            )
            return resampled.read_bytes()
        return to_16k_mono(raw.read_bytes())


async def speak(request):
    try:
        text, voice = parse_request(await read_json(request))
        audio = await synthesize(text, voice)
    except TtsError as problem:
        return error_response(problem.status, problem.message)
    return web.Response(body=audio, content_type="audio/wav")


def make_tts_app(token: str | None = None) -> web.Application:
    app = make_server_app(token, client_max_size=64 * 1024, how_to_lock="--token-file FILE (or $TTS_TOKEN)")
    app.router.add_post("/tts", speak)
    app.router.add_post("/", speak)
    return app
