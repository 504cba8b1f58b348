"""End-pointing on the device: where an utterance starts and ends in the microphone's stream.

An energy voice-activity detector over 20 ms frames of 16 kHz mono 16-bit PCM.
The noise floor adapts: it starts at the first frame heard (the room as the
microphone opens; a fixed guess would take any room louder than it for speech),
and follows the room, down at once and up slowly (~0.6 s
while nobody speaks, ~5 s during an utterance, so a fan that starts is learnt
and ends the utterance it began, while the syllables of speech are too short
to be learnt);
a frame is voiced when its energy stands `ratio` times above the floor (and
above a fixed minimum, so a silent room's floor of ~0 does not make every click
speech). Speech starts after `start_frames` voiced frames in a row; the
`preroll_frames` before it are kept and sent first, so the first syllable (which
rises out of the noise before it counts as voiced) is not cut. It ends after
`end_frames` unvoiced frames, at `max_frames`, or when nobody started speaking
within `wait_frames` (a tap and then silence).

Pure: handed frames, never a clock or a microphone; the same on both runtimes.
"""

FRAME_MS = 20
FRAME_BYTES = 640  # 20 ms at 16 kHz, 16-bit mono
PREROLL_FRAMES = 15
START_FRAMES = 3


def frame_energy(frame, step=4):
    """Mean absolute amplitude of little-endian signed 16-bit PCM, every `step`-th sample (cheap on the ESP32)."""
    view = memoryview(frame)
    total = 0
    count = 0
    for i in range(0, len(view) - 1, 2 * step):
        value = view[i] | (view[i + 1] << 8)
        if value >= 32768:
            value = 65536 - value
        total += value
        count += 1
    return total // count if count else 0


class Preroll:
    """The last `frames` frames heard, in one buffer made once (a long-running heap has no room for fresh ones).

    `room`, when given, is that buffer: a memoryview of at least frames * frame_bytes made by the caller
    (the body shares one block between the microphone and the speaker, which never run at once)."""

    def __init__(self, frames, frame_bytes=FRAME_BYTES, room=None):
        self.frame_bytes = frame_bytes
        size = frames * frame_bytes
        self.view = room[:size] if room is not None else memoryview(bytearray(size))
        self.ring = self.view
        self.at = 0  # where the next frame goes
        self.count = 0

    def clear(self):
        self.at = 0
        self.count = 0

    def add(self, frame):
        size = self.frame_bytes
        self.ring[self.at : self.at + size] = frame
        self.at = (self.at + size) % len(self.ring)
        if self.count < len(self.ring) // size:
            self.count += 1

    def pieces(self):
        """What it holds, oldest first, as at most two views into the buffer."""
        held = self.count * self.frame_bytes
        begin = (self.at - held) % len(self.ring)
        if held == 0:
            return []
        if begin < self.at:
            return [self.view[begin : self.at]]
        return [self.view[begin:], self.view[: self.at]]


class Endpointer:
    """Feed frames; each `feed` answers what they mean for the utterance (see `feed`)."""

    def __init__(
        self,
        ratio=3,
        min_level=300,
        start_frames=START_FRAMES,
        end_frames=35,
        preroll_frames=PREROLL_FRAMES,
        max_frames=750,
        wait_frames=250,
        floor=None,
        room=None,
    ):
        self.ratio = ratio
        self.min_level = min_level
        self.start_frames = start_frames
        self.end_frames = end_frames
        self.max_frames = max_frames
        self.wait_frames = wait_frames
        self.floor = floor
        self.preroll = Preroll(preroll_frames + start_frames, room=room)
        self.reset()

    def reset(self, wait=True):
        """A fresh listening turn; `wait` False listens with no deadline for speech to start (conversation mode)."""
        self.preroll.clear()
        self.speaking = False
        self.voiced_run = 0
        self.quiet_run = 0
        self.frames = 0  # frames since speech started (the pre-roll counted)
        self.waited = 0  # frames heard before speech started
        self.waiting = wait
        self.reason = None

    def threshold(self):
        level = self.floor * self.ratio
        return level if level > self.min_level else self.min_level

    def _learn(self, energy, shift):
        # Down at once (a quieter room is the truth), up by 1/2**shift of the gap per frame.
        if energy < self.floor:
            self.floor = energy
        else:
            self.floor += (energy - self.floor) >> shift

    def feed(self, frame):
        """One frame in; what it means:
        "idle"   nobody is speaking yet (the frame is kept in the pre-roll)
        "start"  speech began: send `preroll.pieces()` (the frames before it and this one)
        "audio"  speech goes on (pauses inside it included): send this frame
        "end"    the utterance is over; `reason` says why: "silence", "max_length", or "no_speech"
        """
        energy = frame_energy(frame)
        if self.floor is None:
            self.floor = energy  # the room, or the first of speech: down at once at its first pause
        voiced = energy > self.threshold()
        if not self.speaking:
            self.waited += 1
            self.voiced_run = self.voiced_run + 1 if voiced else 0
            self._learn(energy, 5)
            self.preroll.add(frame)
            if self.voiced_run >= self.start_frames:
                self.speaking = True
                self.frames = self.preroll.count
                return "start"
            if self.waiting and self.waited >= self.wait_frames:
                self.reason = "no_speech"
                return "end"
            return "idle"
        self.frames += 1
        self._learn(energy, 8)
        if voiced:
            self.quiet_run = 0
        else:
            self.quiet_run += 1
        if self.frames >= self.max_frames:
            self.reason = "max_length"
            return "end"
        if self.quiet_run >= self.end_frames:
            self.reason = "silence"
            return "end"
        return "audio"
