"""The avatar's animation state: what the face looks like at a given moment.

Driven entirely by the milliseconds it is handed (`update(now_ms)`), so tests
step through minutes of blinking in microseconds and the display code only
draws a `Frame`. Timings follow StackChan's avatar conventions.
"""

import math

from .balloon import Balloon
from .clock import Rng
from .emotions import FACES

BLINK_OPEN_MS = (2500, 4500)
BLINK_CLOSED_MS = (300, 500)
SACCADE_MS = (500, 2500)
BREATH_MS = (3000, 6000)
EXPRESSION_BLEND_MS = 300
MOUTH_ATTACK = 0.6  # fraction of the gap to the target closed per frame when opening
MOUTH_DECAY = 0.25  # ... and when closing: quick to open, slower to close, like a real mouth


class Frame:
    """Everything the display needs to draw one frame."""

    def __init__(self):
        self.eyes_open = 1.0  # 0 closed .. 1 open
        self.gaze_x = 0.0  # -1 .. 1
        self.gaze_y = 0.0
        self.breath = 0.0  # -1 .. 1, offsets the whole face vertically
        self.expression = "neutral"
        self.previous = "neutral"  # the expression being blended away from
        self.blend = 1.0  # 0 = all previous, 1 = all expression
        self.mouth = 0.0  # 0 closed .. 1 wide open
        self.balloon = []  # lines of text to draw
        self.text = ""  # the balloon's whole text, for a screen that shows it at once (the simulator)
        self.caption = False  # True when the balloon holds a caption (the question a /look asked), not speech
        # "listening" whenever the microphone is live (privacy: always visible), "thinking" after someone
        # spoke until the answer comes, None otherwise.
        self.indicator = None

    def key(self):
        """A compact summary, so the display can skip redrawing an unchanged frame."""
        return (
            int(self.eyes_open * 8),
            int(self.gaze_x * 8),
            int(self.gaze_y * 8),
            int(self.breath * 4),
            self.expression,
            int(self.blend * 8),
            int(self.mouth * 8),
            tuple(self.balloon),
            self.caption,
            self.indicator,
        )


class Avatar:
    def __init__(self, now_ms=0, seed=7, columns=24, rows=2):
        self.rng = Rng(seed)
        self.frame = Frame()
        self.balloon = Balloon(columns, rows)
        self._eyes_closed = False
        self._next_blink = now_ms + self.rng.between(*BLINK_OPEN_MS)
        self._next_saccade = now_ms + self.rng.between(*SACCADE_MS)
        self._breath_start = now_ms
        self._breath_period = self.rng.between(*BREATH_MS)
        self._expression_at = now_ms - EXPRESSION_BLEND_MS
        self._mouth_target = 0.0

    # --- what the rest of the firmware asks of the face ---

    def set_expression(self, face, now_ms):
        if face not in FACES:
            face = "neutral"
        frame = self.frame
        if face == frame.expression:
            return
        frame.previous = frame.expression
        frame.expression = face
        frame.blend = 0.0
        self._expression_at = now_ms

    def set_mouth_level(self, level):
        """The audio level now, 0..1 (louder opens wider)."""
        self._mouth_target = max(0.0, min(1.0, level))

    def set_indicator(self, name):
        """ "listening", "thinking" or None (see Frame.indicator)."""
        self.frame.indicator = name

    def say(self, text, now_ms):
        self.balloon.show(text, now_ms)
        self.frame.text = text
        self.frame.caption = False

    def done_speaking(self, now_ms):
        self._mouth_target = 0.0
        self.balloon.done_speaking(now_ms)

    def show_text(self, text, now_ms, linger_ms=2000):
        """A brief caption (e.g. the question a /look asked), gone after `linger_ms`."""
        self.balloon.show(text, now_ms)
        self.balloon.hide_at = now_ms + linger_ms
        self.frame.text = text
        self.frame.caption = True

    # --- the animation step ---

    def update(self, now_ms):
        frame = self.frame
        rng = self.rng
        if now_ms >= self._next_blink:
            self._eyes_closed = not self._eyes_closed
            span = BLINK_CLOSED_MS if self._eyes_closed else BLINK_OPEN_MS
            self._next_blink = now_ms + rng.between(*span)
        sleepy = frame.expression == "sleepy"
        frame.eyes_open = 0.0 if self._eyes_closed else (0.4 if sleepy else 1.0)

        if now_ms >= self._next_saccade:
            frame.gaze_x = rng.uniform(-1.0, 1.0)
            frame.gaze_y = rng.uniform(-1.0, 1.0)
            self._next_saccade = now_ms + rng.between(*SACCADE_MS)

        phase = now_ms - self._breath_start
        if phase >= self._breath_period:  # a new breath, a slightly different length
            self._breath_start = now_ms
            self._breath_period = rng.between(*BREATH_MS)
            phase = 0
        frame.breath = math.sin(2 * math.pi * phase / self._breath_period)

        elapsed = now_ms - self._expression_at
        frame.blend = 1.0 if elapsed >= EXPRESSION_BLEND_MS else max(0.0, elapsed / EXPRESSION_BLEND_MS)

        gap = self._mouth_target - frame.mouth
        frame.mouth += gap * (MOUTH_ATTACK if gap > 0 else MOUTH_DECAY)
        if frame.mouth < 0.01:
            frame.mouth = 0.0

        frame.balloon = self.balloon.visible(now_ms)
        if not frame.balloon:
            frame.text = ""
            frame.caption = False
        return frame


def audio_level(samples, step=8):
    """Loudness 0..1 of little-endian signed 16-bit PCM, looking at every `step`-th sample.

    Sampling keeps it cheap enough to run per chunk on the ESP32.
    """
    view = memoryview(samples)
    total = 0
    count = 0
    for i in range(0, len(view) - 1, 2 * step):
        value = view[i] | (view[i + 1] << 8)
        if value >= 32768:
            value -= 65536
        total += value if value >= 0 else -value
        count += 1
    if not count:
        return 0.0
    # Speech averages roughly a quarter of full scale; scale so that reads as wide open.
    return min(1.0, total / count / 8000.0)
