"""Text to the robot's speaker: text -> WAV (a TTS server) -> PCM at the session's rate -> Opus packets.

Two kinds of TTS server are spoken to: `soulstack tts` (POST {"text"} ->
WAV; the default, espeak-ng offline) and any OpenAI-compatible
`/v1/audio/speech` (POST {"model", "input", "voice", "response_format":
"wav"}). Opus comes from libopus through `opuslib`.
"""

import json

import aiohttp

try:
    import opuslib
except Exception as error:  # opuslib raises a bare Exception when libopus itself is missing
    opuslib, OPUS_MISSING = None, f"{error} (install it: apt install libopus0)"

from soulstack.audio import AudioError, little_endian, mono_samples
from soulstack.protocol.body_app import BodyUnavailable
from soulstack.serving import BadRequest

DEFAULT_TTS_URL = "http://127.0.0.1:9204/tts"
TTS_TIMEOUT_S = 30.0


class SpeechError(Exception):
    """The TTS server answered, but not with speech we can play (a body bug or a misconfiguration)."""


def is_openai_speech(url: str) -> bool:
    return url.rstrip("/").endswith("/audio/speech")


async def synthesize(
    http: aiohttp.ClientSession,
    url: str,
    text: str,
    voice: str | None = None,
    model: str | None = None,
    api_key: str | None = None,
) -> bytes:
    """WAV bytes of `text`; BadRequest when `soulstack tts` refuses the text itself (nothing to speak),
    BodyUnavailable when the TTS server cannot be reached or refuses otherwise."""
    headers = {}
    if is_openai_speech(url):
        payload = {"model": model or "tts-1", "input": text, "voice": voice or "alloy", "response_format": "wav"}
        if api_key:
            headers["Authorization"] = f"Bearer {api_key}"
    else:
        payload = {"text": text, **({"voice": voice} if voice else {})}
    try:
        async with http.post(
            url, json=payload, headers=headers, timeout=aiohttp.ClientTimeout(total=TTS_TIMEOUT_S)
        ) as answer:
            body = await answer.read()
            refused = _text_refused(answer.status, body)
            if refused and not is_openai_speech(url):
                # `soulstack tts` names what is wrong with the text itself ("...": nothing to speak): the
                # caller's to mend, a 400, never a body that is unavailable.
                raise BadRequest(f"{refused} (the text-to-speech server at {url})")
            if answer.status != 200:
                detail = body.decode(errors="replace").strip()[:200]
                raise BodyUnavailable(f"the text-to-speech server at {url} answered {answer.status}: {detail}")
            return body
    except (aiohttp.ClientError, TimeoutError) as error:
        raise BodyUnavailable(
            f"the text-to-speech server at {url} is unreachable ({type(error).__name__}: {error})"
        ) from None


def _text_refused(status: int, body: bytes) -> str | None:
    """The message of a 400 that is about the request's "text" (soulstack tts's words), else None."""
    if status != 400:
        return None
    try:
        message = json.loads(body).get("message")
    except (ValueError, AttributeError):
        return None
    return message if isinstance(message, str) and message.startswith('"text"') else None


def wav_to_pcm(wav_bytes: bytes, rate: int) -> bytes:
    """Mono 16-bit little-endian PCM at `rate` from any 16-bit PCM WAV."""
    try:
        return little_endian(mono_samples(wav_bytes, rate))
    except AudioError as error:
        raise SpeechError(f"the text-to-speech server's answer cannot be played: {error}") from None


def opus_packets(pcm: bytes, rate: int, frame_ms: int) -> list[bytes]:
    """Opus packets of `frame_ms` each; the last frame is padded with silence."""
    if opuslib is None:
        raise SpeechError(f"cannot encode speech as Opus: {OPUS_MISSING}")
    samples_per_frame = rate * frame_ms // 1000
    frame_bytes = 2 * samples_per_frame
    try:
        encoder = opuslib.Encoder(rate, 1, opuslib.APPLICATION_VOIP)
    except opuslib.OpusError as error:
        raise SpeechError(f"Opus cannot encode at {rate} Hz ({error})") from None
    packets = []
    for start in range(0, len(pcm), frame_bytes):
        chunk = pcm[start : start + frame_bytes].ljust(frame_bytes, b"\0")
        packets.append(encoder.encode(chunk, samples_per_frame))
    return packets
