"""Recognisers: 16 kHz mono 16-bit PCM in, words out. One `Session` per utterance, fed while it arrives.

`pocketsphinx` (the default): offline, English, the model from its own wheel. A
decoder takes ~0.4 s to load, so each is loaded once and kept in a pool; a
session hands it the audio as it arrives, so most of the work is done before the
person stops speaking. `openai`: any OpenAI-compatible `/v1/audio/transcriptions`
server (OpenAI, Groq, whisper.cpp's server, faster-whisper servers) through the
openai SDK; such a server takes a whole file, so the session keeps the audio and
sends it as a WAV at the end.

A recogniser that fails raises `RecogniserError` with a sentence; one that heard
no words returns "".
"""

import asyncio
import io
import wave

RATE = 16000


class RecogniserError(Exception):
    pass


def wav_bytes(pcm: bytes) -> bytes:
    out = io.BytesIO()
    with wave.open(out, "wb") as file:
        file.setnchannels(1)
        file.setsampwidth(2)
        file.setframerate(RATE)
        file.writeframes(pcm)
    return out.getvalue()


class PocketSphinx:
    name = "pocketsphinx"

    def __init__(self):
        self.idle = []  # loaded decoders not in use

    async def warm(self):
        """Load one decoder now, so the first utterance does not wait for it."""
        self.idle.append(await asyncio.to_thread(self._load))

    @staticmethod
    def _load():
        try:
            from pocketsphinx import Decoder
        except ImportError as error:
            raise RecogniserError(f"pocketsphinx is not installed ({error}); pip install pocketsphinx") from None
        return Decoder(samprate=RATE, loglevel="FATAL")

    def session(self):
        return _SphinxSession(self)


class _SphinxSession:
    def __init__(self, owner: PocketSphinx):
        self.owner = owner
        self.decoder = None
        self.odd = b""  # a byte of a sample split across two chunks

    async def feed(self, pcm: bytes):
        pcm = self.odd + pcm
        cut = len(pcm) & ~1
        self.odd = pcm[cut:]
        if self.decoder is None:
            self.decoder = self.owner.idle.pop() if self.owner.idle else await asyncio.to_thread(self.owner._load)
            self.decoder.start_utt()
        if cut:
            await asyncio.to_thread(self.decoder.process_raw, pcm[:cut], False, False)

    async def finish(self) -> str:
        if self.decoder is None:
            return ""
        try:
            await asyncio.to_thread(self.decoder.end_utt)
            hypothesis = self.decoder.hyp()
        except RuntimeError as error:
            raise RecogniserError(f"pocketsphinx failed: {error}") from None
        self.owner.idle.append(self.decoder)
        self.decoder = None
        return hypothesis.hypstr.strip() if hypothesis else ""

    def abandon(self):
        # The decoder may still be working in its thread: it is dropped, never put back half-used
        # (the pool loads a fresh one when it runs short).
        self.decoder = None


class OpenAITranscriber:
    name = "openai"

    def __init__(self, base_url: str | None, api_key: str | None, model: str, timeout_s: float = 30):
        from openai import AsyncOpenAI

        self.model = model
        self.client = AsyncOpenAI(base_url=base_url, api_key=api_key or "none", max_retries=0, timeout=timeout_s)

    async def warm(self):
        pass

    def session(self):
        return _BufferedSession(self)

    async def transcribe(self, pcm: bytes) -> str:
        import openai

        try:
            result = await self.client.audio.transcriptions.create(
                model=self.model, file=("utterance.wav", wav_bytes(pcm), "audio/wav")
            )
        except openai.APIStatusError as error:
            raise RecogniserError(f"the transcription server answered {error.status_code}: {error.message}") from None
        except openai.APIError as error:
            raise RecogniserError(f"the transcription server could not be reached: {error}") from None
        return (getattr(result, "text", None) or "").strip()


class _BufferedSession:
    def __init__(self, owner: OpenAITranscriber):
        self.owner = owner
        self.audio = bytearray()

    async def feed(self, pcm: bytes):
        self.audio += pcm

    async def finish(self) -> str:
        return await self.owner.transcribe(bytes(self.audio))

    def abandon(self):
        self.audio = bytearray()
