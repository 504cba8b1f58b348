"""`--recogniser wyoming --wyoming-url tcp://HOST:10300`: any Wyoming speech-to-text server.

Wyoming is the protocol of Home Assistant's voice servers (PyPI `wyoming`, MIT):
`wyoming-faster-whisper` on port 10300 is the usual one, and SenseVoice or
others may stand behind it. So a person who already runs Home Assistant's
voice can point ears at it. Each utterance is one connection: `transcribe`
(with the language), `audio-start`, the audio in `audio-chunk`s, `audio-stop`,
then the server's `transcript`.

At start ears asks `describe` and says in its start line which models the
server offers. The audio given is that of recognise.WholeSession (the speech,
trimmed the same way whatever the chunks), sent in fixed chunks of `CHUNK`
samples, so the server too hears the same audio the same way every time.
"""

import logging

from soulstack import wyoming_link
from soulstack.errors import connection_failure
from soulstack.ears.recognise import RATE, RecogniserError, WholeSession

log = logging.getLogger(__name__)

CHUNK = 1024  # samples per audio-chunk event
ANSWER_S = 60  # a big model on a slow machine may take a while; a dead one should not hang an utterance


class WyomingRecogniser:
    name = "wyoming"
    speculate = True  # a server in the house: recognising in the quiet before the stream ends costs nothing more

    def __init__(self, url: str, language: str | None = "en"):
        self.url = url
        self.language = None if language == "auto" else language
        self.offers = None  # what `describe` said, once asked

    def describe(self) -> str:
        offered = self.offers or "it did not answer describe yet"
        return f"wyoming at {self.url} ({offered}), language {self.language or 'auto'}"

    async def warm(self):
        try:
            self.offers = await self.ask_describe()
        except RecogniserError as error:
            log.warning("%s; ears will try it for each utterance", error)

    async def ask_describe(self) -> str:
        """The server's speech-to-text programs and models, in a few words."""
        try:
            info = await wyoming_link.describe(self.url)
        except (TimeoutError, OSError) as error:  # ConnectionError (an OSError): it hung up
            raise RecogniserError(
                f"the Wyoming server at {self.url} does not answer ({connection_failure(error)})"
            ) from None
        programs = info.asr or []
        if not programs:
            raise RecogniserError(f"the Wyoming server at {self.url} offers no speech-to-text (is it a TTS server?)")
        return "; ".join(
            f"{program.name}: {', '.join(model.name for model in program.models) or 'no models'}"
            for program in programs
        )

    def session(self):
        return WholeSession(self)

    async def transcribe(self, pcm: bytes) -> str:
        from wyoming.asr import Transcribe, Transcript
        from wyoming.audio import AudioChunk, AudioStart, AudioStop
        from wyoming.error import Error

        audio = {"rate": RATE, "width": 2, "channels": 1}
        try:
            async with wyoming_link.client(self.url, ANSWER_S) as client:
                await client.write_event(Transcribe(language=self.language).event())
                await client.write_event(AudioStart(**audio).event())
                for start in range(0, len(pcm), 2 * CHUNK):
                    await client.write_event(AudioChunk(audio=pcm[start : start + 2 * CHUNK], **audio).event())
                await client.write_event(AudioStop().event())
                while True:
                    event = await client.read_event()
                    if event is None:
                        raise RecogniserError(f"the Wyoming server at {self.url} hung up without a transcript")
                    if Transcript.is_type(event.type):
                        return (Transcript.from_event(event).text or "").strip()
                    if Error.is_type(event.type):
                        raise RecogniserError(f"the Wyoming server said: {Error.from_event(event).text}")
        except (TimeoutError, OSError) as error:
            why = connection_failure(error)
            raise RecogniserError(f"the Wyoming server at {self.url} could not be reached ({why})") from None
