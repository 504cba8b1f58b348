"""`--recogniser openai`: any OpenAI-compatible `POST /v1/audio/transcriptions` server, through the openai SDK.

OpenAI itself, Groq, whisper.cpp's server or a faster-whisper server on the
LAN. Such a server takes a whole file, so the session keeps the audio
(recognise.WholeSession) and sends it as a WAV once the utterance ends. No
speculation here: a cloud server may charge for every request.
"""

from soulstack.audio import mono_wav
from soulstack.ears.recognise import RATE, RecogniserError, WholeSession


class OpenAITranscriber:
    name = "openai"
    speculate = False

    def __init__(self, base_url: str | None, api_key: str | None, model: str, timeout_s: float = 30):
        from openai import AsyncOpenAI

        self.base_url = base_url
        self.model = model
        self.client = AsyncOpenAI(base_url=base_url, api_key=api_key or "none", max_retries=0, timeout=timeout_s)

    def describe(self) -> str:
        where = "" if self.on_this_computer() else " (the audio leaves this computer)"
        return f"openai-compatible {self.model} at {self.base_url or 'OpenAI'}{where}"

    def on_this_computer(self) -> bool:
        """Whether the server is on loopback (a whisper.cpp server here): then the audio stays here."""
        import ipaddress
        from urllib.parse import urlsplit

        host = urlsplit(self.base_url or "").hostname or ""
        if host == "localhost":
            return True
        try:
            return ipaddress.ip_address(host).is_loopback
        except ValueError:
            return False

    async def warm(self):
        pass

    async def aclose(self):
        """Close the client's connections (ears' process ends with them; a test that makes many must)."""
        await self.client.close()

    def session(self):
        return WholeSession(self)

    async def transcribe(self, pcm: bytes) -> str:
        import openai

        try:
            result = await self.client.audio.transcriptions.create(
                model=self.model, file=("utterance.wav", mono_wav(pcm, RATE), "audio/wav")
            )
        except openai.APIStatusError as error:
            raise RecogniserError(f"the transcription server answered {error.status_code}: {error.message}") from None
        except openai.APIError as error:
            raise RecogniserError(f"the transcription server could not be reached: {error}") from None
        return (getattr(result, "text", None) or "").strip()
