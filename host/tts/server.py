"""The TTS server: POST /tts {"text", optional "voice"/"lang"} -> audio/wav, 16 kHz mono 16-bit.

The voice (voices.py) is Piper's neural voice in this process, a Wyoming server,
or espeak-ng. A neural voice takes a fair part of a second per sentence, so a
text of several sentences (cut by the one sentence rule, protocol/sentences.py)
is streamed: the first sentence's audio leaves as soon as it is made, while the
next is being made. Its length cannot be known up front, so that answer has no
Content-Length: HTTP/1.1 clients get it chunked, the robot (HTTP/1.0) gets it
until the connection closes, and its WAV header says "length unknown" (0xFFFFFFFF,
as sox and ffmpeg write a stream). The firmware reckons from Content-Length how
much of a cut-off sentence was heard; it speaks one sentence per /speak, and one
sentence is sent whole after it is made, with its exact Content-Length, so that
reckoning holds where it matters. espeak-ng takes ~15 ms for a whole text and is
always sent that way. A failure before the first byte is an honest error status;
a later sentence that fails ends the answer short (chunked clients see it cut).
A text the voice makes no sound for at all (punctuation alone, to Piper) is a 400
saying there is nothing to speak, never a WAV with no samples in it.
"""

import asyncio
import logging

from aiohttp import web

from soulstack.protocol.sentences import split_sentences
from soulstack.serving import error_response, make_server_app, read_json
from soulstack.tts.espeak import VOICE_PATTERN
from soulstack.tts.speech import TtsError, wav_header
from soulstack.tts.voices import Voices

log = logging.getLogger(__name__)

MAX_TEXT = 2000  # characters: /speak's own limit (protocol/sentences.py MAX_SPEAK_CHARS)
FIRST_PIECE = 3200  # bytes (100 ms): the first write is short, so playback starts at once
PIECE = 16000  # bytes (half a second) in each later write
VOICES = web.AppKey("voices", Voices)


def parse_request(payload):
    """(text, the voice or language asked for or None) from a request body, or TtsError(400) naming what is wrong."""
    if not isinstance(payload, dict):
        raise TtsError(400, 'send a JSON object like {"text": "hello"}')
    text = payload.get("text")
    if not isinstance(text, str) or not text.strip():
        raise TtsError(400, '"text" must be a non-empty string')
    if len(text) > MAX_TEXT:
        raise TtsError(400, f'"text" is {len(text)} characters; at most {MAX_TEXT}')
    voice = payload.get("voice", payload.get("lang"))
    if voice is not None and (not isinstance(voice, str) or not VOICE_PATTERN.match(voice)):
        raise TtsError(400, '"voice"/"lang" must be a voice or language name such as "en", "en-us" or "zh"')
    return text, voice


def pieces(audio: bytes):
    """`audio` in the pieces it is written in: the first short, so the robot starts playing sooner."""
    start, size = 0, FIRST_PIECE
    while start < len(audio):
        yield audio[start : start + size]
        start, size = start + size, PIECE


async def write_audio(response: web.StreamResponse, audio: bytes):
    for piece in pieces(audio):
        await response.write(piece)
        await asyncio.sleep(0)  # the server free for others between pieces


def sounds(audio: bytes) -> bool:
    """Whether `audio` (16-bit samples) holds any sample but 0: a voice given nothing it can say makes
    no samples (Piper) or only zeros (espeak-ng)."""
    return bool(audio.strip(b"\0"))


async def first_sound(choice, units: list[str], text: str) -> tuple[list[str], bytes]:
    """The units from the first one the voice makes a sound for, and that unit's audio; TtsError(400)
    when it makes none for any. Which texts have nothing to say is the voice's to tell, not a rule of
    characters: Piper is silent for "..." and "✓" but says "*" and "%", espeak-ng says "!?"."""
    for index, unit in enumerate(units):
        audio = await choice.synthesize(unit)
        if sounds(audio):
            return units[index:], audio
    shown = text.strip() if len(text.strip()) <= 40 else text.strip()[:40] + "..."
    raise TtsError(400, f'"text" has nothing to speak: {choice.describe()} makes no sound for {shown!r}')


async def speak(request):
    try:
        text, asked = parse_request(await read_json(request))
        choice = await request.app[VOICES].choose(text, asked)
        units = split_sentences(text, final=True)[0] if choice.voice.streams else [text.strip()]
        units, first = await first_sound(choice, units, text)
    except TtsError as problem:
        if problem.status >= 500:  # the voice failed, not the request: the owner reads the log, not the robot's
            log.warning("tts: %s", problem.message)
        return error_response(problem.status, problem.message)
    response = web.StreamResponse(headers={"Content-Type": "audio/wav"})
    if len(units) == 1:
        response.content_length = 44 + len(first)
    # The next sentence is made while this one goes out.
    upcoming = asyncio.ensure_future(choice.synthesize(units[1])) if len(units) > 1 else None
    try:
        await response.prepare(request)
        await response.write(wav_header(len(first) if len(units) == 1 else None))
        await write_audio(response, first)
        for index in range(1, len(units)):
            try:
                audio = await upcoming
            except TtsError as problem:
                log.warning("tts: sentence %d of %d failed, the answer ends short: %s", index + 1, len(units), problem)
                if request.transport is not None:
                    request.transport.close()  # chunked clients see the answer cut off, not a whole one
                return response
            upcoming = asyncio.ensure_future(choice.synthesize(units[index + 1])) if index + 1 < len(units) else None
            await write_audio(response, audio)
        await response.write_eof()
    except ConnectionResetError:
        pass  # the robot hung up (a tap cut the sentence off): nobody is left to hear the rest
    finally:
        if upcoming is not None and not upcoming.done():
            upcoming.cancel()  # no one will hear it: a sentence not yet begun is never made
    return response


def make_tts_app(token: str | None = None, voices: Voices | None = None) -> web.Application:
    """The server speaking with `voices` (default: espeak-ng alone, as `--voice espeak`)."""
    app = make_server_app(token, client_max_size=64 * 1024, how_to_lock="--token-file FILE (or $TTS_TOKEN)")
    app[VOICES] = voices or Voices.espeak_only()
    app.router.add_post("/tts", speak)
    app.router.add_post("/", speak)
    return app
