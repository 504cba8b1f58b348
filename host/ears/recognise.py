"""What every recogniser shares: 16 kHz mono 16-bit PCM in, words out, one session per utterance.

A recogniser has `name`, `describe()` (the start line's words), `warm()` and
`session()`; a whole-utterance one also `transcribe(pcm)` and `speculate`
(whether to guess early, below). A session is fed the audio as it arrives
(`feed`), then either `finish()`es (the words, "" for none; `RecogniserError` with a sentence when
the recogniser failed) or is `abandon()`ed (a stream cut off or refused):
an abandoned session must cost nothing afterwards, no reload, no memory.

Whole-utterance recognisers (Whisper, a Wyoming server, an OpenAI-compatible
server) hear the audio once it is complete, so `WholeSession` keeps it. Two
rules make them predictable and quick:

- **The same audio gives the same words, however it was cut into chunks.**
  The recogniser is given `speech_end(audio)` of it: the audio up to a little
  after its last voiced 30 ms frame, frames counted from the first sample, so
  the trim depends on the samples only, never on how they arrived.
- **The words are usually ready when the stream ends.** A robot ends an
  utterance after hearing `listen.silence_ms` (0.7 s) of silence. Once the
  stream has gone quiet for `SPECULATE_AFTER_S`, the session starts
  recognising the speech so far; if the rest of the stream is silence, the
  audio to recognise is exactly the audio already being recognised, so that
  result is the answer. If the person speaks on, it is thrown away and the
  whole is recognised at the end. Either way the words are those of
  `speech_end(all of it)`.
"""

import asyncio
import bisect
import functools
import os
from pathlib import Path

RATE = 16000
FRAME = RATE * 30 // 1000  # samples in a 30 ms frame
VOICED_RMS = 250  # a frame this loud (of 32767) may be speech; quieter is the room
VOICED_SHARE = 8  # ... and it must be within 18 dB of the loudest frame so far
ROOM_MARGIN = 2.5  # ... and 8 dB above the room's own level
TAIL_S = 0.25  # kept after the last voiced frame: the end of a word fades below the threshold
SPECULATE_AFTER_S = 0.3  # this long quiet after speech and recognition starts on the speech so far
LOOKAHEAD_FRAMES = round(SPECULATE_AFTER_S * RATE / FRAME)  # a frame is judged against this much after it


class RecogniserError(Exception):
    pass


def simplified(text: str) -> str:
    """Chinese in simplified characters (OpenCC's t2s): a zh soul writes them; Whisper often hears traditional."""
    return _traditional_to_simplified().convert(text)


@functools.lru_cache(maxsize=1)
def _traditional_to_simplified():
    import opencc

    return opencc.OpenCC("t2s")


class Voicing:
    """Which 30 ms frames of a stream are voiced, kept as the stream arrives (frames from sample 0).

    A frame is voiced when it is louder than `VOICED_RMS`, within 18 dB of the loudest frame, and
    8 dB above the room (the quietest fifth of the frames): a fan or a street is no speech. Each frame
    is judged for good against the stream up to `LOOKAHEAD_S` after it, never against more: were the
    quiet that follows speech to count, each second of it would lower the room's level, a word's
    fading end would turn voiced, and the speech's end would creep later while the robot waits out
    its silence (an early guess would never be the answer). Frames without their lookahead yet are
    judged against all there is, until they have it."""

    def __init__(self):
        self.pending = b""  # bytes of the frame not yet complete
        self.levels = []  # every whole frame's RMS, in order
        self.sorted_levels = []  # the same, sorted: the room is their quietest fifth
        self.loudest = 0.0
        self.judged = 0  # frames judged for good (those with their whole lookahead)
        self.last_judged_voiced = -1

    def add(self, pcm: bytes):
        import numpy

        data = self.pending + pcm
        whole = len(data) - len(data) % (2 * FRAME)
        self.pending = data[whole:]
        if whole:
            frames = numpy.frombuffer(data[:whole], dtype="<i2").astype(numpy.float64).reshape(-1, FRAME)
            for level in numpy.sqrt(numpy.mean(frames * frames, axis=1)).tolist():
                self._arrive(level)

    def _arrive(self, level: float):
        self.levels.append(level)
        bisect.insort(self.sorted_levels, level)
        self.loudest = max(self.loudest, level)
        complete = len(self.levels) - 1 - LOOKAHEAD_FRAMES  # this frame's lookahead just arrived
        if complete >= 0:
            if self.levels[complete] >= self._floor():
                self.last_judged_voiced = complete
            self.judged = complete + 1

    def _floor(self) -> float:
        room = self.sorted_levels[len(self.sorted_levels) // 5]
        return max(VOICED_RMS, self.loudest / VOICED_SHARE, room * ROOM_MARGIN)

    def last_voiced(self) -> int:
        """The index of the last voiced frame, -1 when none is."""
        if len(self.levels) > self.judged:
            floor = self._floor()
            for index in range(len(self.levels) - 1, self.judged - 1, -1):
                if self.levels[index] >= floor:
                    return index
        return self.last_judged_voiced

    def speech_end(self, total_bytes: int) -> int:
        """How many bytes of the stream so far `speech_end` keeps (all of it when nothing was voiced)."""
        last = self.last_voiced()
        if last < 0:
            return total_bytes
        end = 2 * ((last + 1) * FRAME + int(TAIL_S * RATE))
        return min(total_bytes, end)

    def quiet_s(self) -> float:
        """Seconds of whole frames since the last voiced one (0 when nothing was voiced yet)."""
        last = self.last_voiced()
        return 0.0 if last < 0 else (len(self.levels) - 1 - last) * FRAME / RATE


def cache_root(cache: Path | None = None) -> Path:
    """soulstack's folder in the user cache (`cache` itself when given), where the local models keep
    what they make once: Whisper base joined (whisper.assembled_base), Moonshine's decoder converted."""
    return cache or Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "soulstack"


def float_samples(pcm: bytes):
    """16-bit PCM as the float32 samples in [-1, 1) that the local models take (an odd last byte dropped)."""
    import numpy

    return numpy.frombuffer(pcm[: len(pcm) & ~1], dtype="<i2").astype(numpy.float32) / 32768.0


def speech_end(pcm: bytes) -> bytes:
    """`pcm` up to `TAIL_S` after its last voiced frame: what a whole-utterance recogniser is given."""
    voicing = Voicing()
    voicing.add(pcm)
    return pcm[: voicing.speech_end(len(pcm) & ~1)]


class WholeSession:
    """The audio of one utterance, kept for a recogniser that hears it whole: `owner.transcribe(pcm)`.
    With `owner.speculate`, recognition starts in the quiet before the stream ends (module docstring)."""

    def __init__(self, owner):
        self.owner = owner
        self.audio = bytearray()
        self.voicing = Voicing()
        self.guess = None  # (the bytes it hears, the task recognising them)

    async def feed(self, pcm: bytes):
        self.audio += pcm
        self.voicing.add(pcm)
        if self.owner.speculate and self.voicing.quiet_s() >= SPECULATE_AFTER_S:
            end = self.voicing.speech_end(len(self.audio) & ~1)
            # One guess at a time: a guess still running holds the model, and a newer one would only queue
            # behind it (the answer at the end waits for the model either way).
            if self.guess is None or (self.guess[0] != end and self.guess[1].done()):
                self._drop_guess()
                self.guess = (end, asyncio.create_task(self.owner.transcribe(bytes(self.audio[:end]))))

    async def finish(self) -> str:
        end = self.voicing.speech_end(len(self.audio) & ~1)
        if self.guess is not None and self.guess[0] == end:
            task, self.guess = self.guess[1], None
            return await task
        self._drop_guess()
        pcm = bytes(self.audio[:end])
        self.audio = bytearray()
        return await self.owner.transcribe(pcm)

    def abandon(self):
        self._drop_guess()
        self.audio = bytearray()

    def _drop_guess(self):
        if self.guess is not None:
            task = self.guess[1]
            task.cancel()
            # A guess already running in a thread finishes there; its answer (or failure) is unwanted.
            task.add_done_callback(lambda done: done.cancelled() or done.exception())
            self.guess = None
