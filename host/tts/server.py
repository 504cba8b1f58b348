"""The TTS server: POST /tts {"text", optional "voice"/"lang"} -> audio/wav, 16 kHz mono 16-bit.

espeak-ng (a Debian package) speaks offline at its native 22050 Hz; the result
is resampled to the 16 kHz the firmware plays, with sox when it is installed
and with a small linear resampler otherwise.

The answer is sent as it is made, so the robot starts playing sooner: espeak-ng
itself takes ~10 ms for a sentence and is run to its end first (so that its
failure is still an honest error status, and the length is known: the robot
reckons from Content-Length how much of a cut-off sentence was heard), then the
Python resampler's output goes out a piece at a time, the first one short.
The voices espeak-ng knows are asked once per server, not for every request.
"""

import array
import asyncio
import io
import re
import shutil
import struct
import tempfile
import wave
from pathlib import Path

from aiohttp import web

from soulstack.audio import AudioError, little_endian, mono_samples, resample_linear, resampled_length
from soulstack.serving import error_response, make_server_app, read_json

TARGET_RATE = 16000
MAX_TEXT = 2000
VOICE_PATTERN = re.compile(r"^[A-Za-z0-9_+\-]{1,40}$")
FIRST_PIECE = 1600  # samples (100 ms): the first piece out is short, so playback starts at once
PIECE = 8000  # samples (half a second) in each later piece
_voices = {}  # espeak-ng's path -> the voice names it knows (asked once: a process each time costs ~10 ms)


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


def read_speech(wav_bytes: bytes) -> tuple[array.array, int]:
    """(mono samples, their rate) of a 16-bit PCM WAV, or TtsError(500)."""
    try:
        with wave.open(io.BytesIO(wav_bytes)) as source:
            rate = source.getframerate()
        return mono_samples(wav_bytes, rate), rate
    except (AudioError, wave.Error, EOFError) as error:
        raise TtsError(500, f"espeak-ng wrote unusable audio: {error}") from None


def wav_header(count: int) -> bytes:
    """The 44-byte header of a 16 kHz mono 16-bit WAV holding `count` samples."""
    data = 2 * count
    return struct.pack(
        "<4sI4s4sIHHIIHH4sI",
        b"RIFF",
        36 + data,
        b"WAVE",
        b"fmt ",
        16,
        1,
        1,
        TARGET_RATE,
        2 * TARGET_RATE,
        2,
        16,
        b"data",
        data,
    )


def pieces(samples: array.array, rate: int):
    """The samples at 16 kHz as little-endian bytes, resampled a piece at a time (the first short)."""
    count = resampled_length(len(samples), rate, TARGET_RATE)
    start, size = 0, FIRST_PIECE
    while start < count:
        yield little_endian(resample_linear(samples, rate, TARGET_RATE, start, start + size))
        start, size = start + size, PIECE


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
    if espeak in _voices:
        return _voices[espeak]
    listing = (await _run([espeak, "--voices"])).decode(errors="replace").splitlines()[1:]
    names = set()
    for line in listing:
        fields = line.split()
        if len(fields) >= 5:
            names.update((fields[1].lower(), fields[3].lower(), fields[4].rsplit("/", 1)[-1].lower()))
        names.update(alias.lower() for alias in re.findall(r"\(([^\s()]+) \d+\)", line))
    _voices[espeak] = names
    return names


async def synthesize(text: str, voice: str) -> tuple[array.array, int]:
    """(mono samples, their rate) of `text` spoken by espeak-ng (16 kHz already when sox is here)."""
    espeak = shutil.which("espeak-ng")
    if not espeak:
        raise TtsError(503, "espeak-ng is not installed on this computer (sudo apt install espeak-ng)")
    if voice.split("+", 1)[0].lower() not in await known_voices(espeak):
        raise TtsError(400, f'espeak-ng has no voice "{voice}" (see espeak-ng --voices)')
    sox = shutil.which("sox")
    if not sox:
        return read_speech(await _run([espeak, "-v", voice, "--stdin", "--stdout"], text.encode()))
    with tempfile.TemporaryDirectory(prefix="soulstack-tts-") as folder:
        raw = Path(folder) / "speech.wav"
        await _run([espeak, "-v", voice, "--stdin", "-w", str(raw)], text.encode())
        # Into a file, not stdout: sox can only write correct WAV sizes when it can seek.
        resampled = Path(folder) / "speech-16k.wav"
        await _run(
            [sox, str(raw), "-r", str(TARGET_RATE), "-c", "1", "-b", "16", "-e", "signed-integer", str(resampled)]
        )
        return read_speech(resampled.read_bytes())


async def speak(request):
    try:
        text, voice = parse_request(await read_json(request))
        samples, rate = await synthesize(text, voice)
    except TtsError as problem:
        return error_response(problem.status, problem.message)
    response = web.StreamResponse(headers={"Content-Type": "audio/wav"})
    response.content_length = 44 + 2 * resampled_length(len(samples), rate, TARGET_RATE)
    try:
        await response.prepare(request)
        await response.write(wav_header(resampled_length(len(samples), rate, TARGET_RATE)))
        for piece in pieces(samples, rate):
            await response.write(piece)
            await asyncio.sleep(0)  # out now, and the server free for others, while the next piece is made
        await response.write_eof()
    except ConnectionResetError:
        pass  # the robot hung up (a tap cut the sentence off): nobody is left to hear the rest
    return response


def make_tts_app(token: str | None = None) -> web.Application:
    app = make_server_app(token, client_max_size=64 * 1024, how_to_lock="--token-file FILE (or $TTS_TOKEN)")
    app.router.add_post("/tts", speak)
    app.router.add_post("/", speak)
    return app
