"""Any Wyoming text-to-speech server as the voice (`--voice wyoming:tcp://HOST:10200`): Home Assistant's
wyoming-piper, or whatever else speaks the protocol, on this machine or another in the house.

The protocol (PyPI `wyoming`, MIT): `synthesize` {"text"} -> `audio-start`, `audio-chunk`...,
`audio-stop`; `describe` -> `info`, which lists the voices it offers. One connection per
sentence, so any server streams sentence by sentence whether or not it splits text itself.
Its audio comes at the server's own rate, width and channels: made 16 kHz mono here.
"""

import logging

from soulstack import wyoming_link
from soulstack.errors import connection_failure
from soulstack.tts.piper import VoiceProblem
from soulstack.tts.speech import TtsError, pcm_samples, to_robot

log = logging.getLogger(__name__)

SENTENCE_TIMEOUT_S = 60.0  # a slow server (a Pi 4 with a high-quality voice) may take seconds per sentence
LEADING_MARKS = " \t\r\n.…!?。！？"  # what may stand before a sentence's first word and is never spoken
MAX_AUDIO_BYTES = 32 * 1024 * 1024  # one sentence: far beyond any real one, so a broken server cannot fill memory


def check_uri(uri: str) -> str:
    """`uri` if it is a Wyoming address we can reach (tcp://HOST:PORT or unix://PATH); VoiceProblem if not."""
    if wyoming_link.uri_problem(uri):
        raise VoiceProblem(f"--voice wyoming:{uri}: give the server as tcp://HOST:PORT (wyoming-piper: 10200)")
    return uri


class WyomingVoice:
    """A Wyoming TTS server: `await describe_server()` once at start, then `await synthesize(sentence)`."""

    streams = True

    def __init__(self, uri: str):
        self.uri = check_uri(uri)
        self.offers: list[
            tuple
        ] = []  # (program, its version, how many voices it lists) for each TTS program it describes

    async def describe_server(self):
        """Ask the server what it offers, then have it say a word (VoiceProblem when it cannot).

        The word is for the person starting us (a server that cannot speak is said at once, not at
        the robot's first sentence) and for the robot: wyoming-piper loads its voice on the first
        request (~1.7 s here), which is better spent now."""
        try:
            info = await wyoming_link.describe(self.uri)
        except (TimeoutError, OSError) as error:  # ConnectionError (an OSError): it hung up
            raise VoiceProblem(
                f"the Wyoming server at {self.uri} does not answer ({connection_failure(error)})"
            ) from None
        if not info.tts:
            raise VoiceProblem(f"the Wyoming server at {self.uri} offers no text-to-speech (is it an ASR server?)")
        # wyoming-piper lists every voice it could download as installed: the names say what it offers,
        # not what it has, so we ask for none and its own default voice (its --voice) speaks.
        self.offers = [(program.name, program.version, len(program.voices or [])) for program in info.tts]
        try:
            await self.synthesize("Hello.")
        except TtsError as problem:
            raise VoiceProblem(problem.message) from None

    def describe(self) -> str:
        offers = ", ".join(
            f"{name}{' ' + version if version else ''} ({count} voices listed)" for name, version, count in self.offers
        )
        return f"wyoming {self.uri}: {offers}; its default voice speaks"

    async def synthesize(self, sentence: str, voice: str | None = None) -> bytes:
        """`sentence` spoken by the server (by its voice `voice` when given) as 16 kHz mono 16-bit bytes."""
        from wyoming.audio import AudioChunk, AudioStop
        from wyoming.error import Error
        from wyoming.tts import Synthesize, SynthesizeVoice

        # wyoming-piper cuts the text into sentences again and fails on one of punctuation alone: "... Hi."
        # would fail whole for its "...". The marks before the first word say nothing a voice can speak.
        spoken = sentence.lstrip(LEADING_MARKS)
        if not spoken:
            return b""  # no sound for it: the tts server's 400 "nothing to speak"
        request = Synthesize(text=spoken, voice=SynthesizeVoice(name=voice) if voice else None)
        groups: list[tuple] = []  # runs of chunks in one format: (rate, width, channels, [bytes...])
        size = 0
        try:
            async with wyoming_link.client(self.uri, SENTENCE_TIMEOUT_S) as client:
                await client.write_event(request.event())
                while True:
                    event = await client.read_event()
                    if event is None:
                        raise TtsError(502, f"the Wyoming server at {self.uri} hung up in the middle of a sentence")
                    if Error.is_type(event.type):
                        said = Error.from_event(event).text
                        if not any(char.isalnum() for char in spoken):
                            # wyoming-piper makes no samples for punctuation alone, as Piper does here, and
                            # then fails writing an empty WAV ("# channels not specified"): no sound for it,
                            # which the server turns into its 400 "nothing to speak", not a broken server.
                            log.debug("wyoming: %s made no sound for %r (it said: %s)", self.uri, sentence, said)
                            return b""
                        raise TtsError(502, f"the Wyoming server at {self.uri} said: {said}")
                    if AudioStop.is_type(event.type):
                        break
                    if AudioChunk.is_type(event.type):
                        chunk = AudioChunk.from_event(event)
                        size += len(chunk.audio)
                        if size > MAX_AUDIO_BYTES:
                            raise TtsError(502, f"the Wyoming server at {self.uri} sent over 32 MB for one sentence")
                        form = (chunk.rate, chunk.width, chunk.channels)
                        if not groups or groups[-1][0] != form:
                            groups.append((form, []))
                        groups[-1][1].append(chunk.audio)
                    # anything else (audio-start, a newer protocol's extras) says nothing we need
        except (TimeoutError, OSError) as error:
            raise TtsError(
                503, f"the Wyoming voice server at {self.uri} does not answer ({connection_failure(error)})"
            ) from None
        try:
            return b"".join(to_robot(pcm_samples(b"".join(parts), w, c), r) for (r, w, c), parts in groups)
        except ValueError as error:  # a width we cannot read, a rate of 0
            raise TtsError(502, f"the Wyoming server at {self.uri} sent audio we cannot play: {error}") from None
