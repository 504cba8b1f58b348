"""Nudges: telling the soul, in words, that something happened to the body.

Face detection fires every frame a face is in view; sent raw, that woke the
soul over and over (wake storms). So: a face counts as *appeared* only after
`frames` consecutive detections following an absence of `absent_frames`
consecutive misses, and each kind of nudge has its own minimum interval.

Every nudge the robot sends carries a `nudge_id` (`NudgeIds`), and a nudge sent
again (over Wi-Fi after a lost answer, or up the cable instead) keeps it: the
soul counts it once.
"""

import binascii
import os

REASONS = {
    "face": "someone's face appeared in front of me",
    "pickup": "someone picked me up",
    "touch": "someone touched my face",
    "button": "someone pressed my button",
}

DEFAULT_WINDOWS_MS = {
    "face": 600000,  # 10 minutes
    "pickup": 120000,
    "touch": 60000,
    "button": 30000,
}


class NudgeIds:
    """Ids no other nudge of this robot had: a random tag for this boot and a count ("r1a2b3c4d-7").

    A robot has no clock it can trust at boot, and its count starts again at each one; the tag keeps
    two boots (or two robots) apart. The soul takes 1-64 of A-Z a-z 0-9 . _ : - (host/protocol/nudges.py).
    """

    def __init__(self, tag=None):
        self.tag = "r" + (tag or binascii.hexlify(os.urandom(4)).decode())
        self.count = 0

    def next(self):
        self.count += 1
        return self.tag + "-" + str(self.count)


class Windows:
    """Per-kind minimum intervals between nudges."""

    def __init__(self, windows_ms=None):
        self.windows_ms = dict(DEFAULT_WINDOWS_MS)
        if windows_ms:
            self.windows_ms.update(windows_ms)
        self.last_ms = {}

    def allow(self, kind, now_ms):
        """True (and remembered) when a `kind` nudge may go out now."""
        last = self.last_ms.get(kind)
        if last is not None and now_ms - last < self.windows_ms.get(kind, 0):
            return False
        self.last_ms[kind] = now_ms
        return True

    def forget(self, kind, last_ms=None):
        """The nudge could not be delivered: do not count it against the window."""
        if last_ms is None:
            self.last_ms.pop(kind, None)
        else:
            self.last_ms[kind] = last_ms


class FacePresence:
    """Turns per-frame detections into 'a face appeared' events."""

    def __init__(self, frames=3, absent_frames=10):
        self.frames = frames
        self.absent_frames = absent_frames
        self.present = False
        self.hits = 0
        self.misses = absent_frames  # start as "long absent" so the first face counts

    def observe(self, detected):
        """Feed one detection result; True exactly when presence begins."""
        if detected:
            self.hits += 1
            self.misses = 0
            if not self.present and self.hits >= self.frames:
                self.present = True
                return True
        else:
            self.misses += 1
            self.hits = 0
            if self.present and self.misses >= self.absent_frames:
                self.present = False
        return False


class Motion:
    """Picked-up detection from the accelerometer: |a| away from 1 g for a few samples."""

    def __init__(self, threshold_g=0.35, samples=3):
        self.threshold_g = threshold_g
        self.samples = samples
        self.count = 0

    def observe(self, ax, ay, az):
        magnitude = (ax * ax + ay * ay + az * az) ** 0.5
        if abs(magnitude - 1.0) > self.threshold_g:
            self.count += 1
            return self.count == self.samples
        self.count = 0
        return False


class Nudger:
    """Decides which nudges go out; `pending` collects the reasons for the sender."""

    def __init__(self, windows_ms=None, face_frames=3, face_absent_frames=10, max_pending=8):
        self.windows = Windows(windows_ms)
        self.face = FacePresence(face_frames, face_absent_frames)
        self.motion = Motion()
        self.pending = []
        self.max_pending = max_pending
        self.ids = NudgeIds()

    def event(self, kind, now_ms):
        """Something of `kind` happened; returns the reason when a nudge is due, else None."""
        if not self.windows.allow(kind, now_ms):
            return None
        reason = REASONS[kind]
        if len(self.pending) < self.max_pending:
            self.pending.append((kind, reason, now_ms))
        return reason

    def face_seen(self, detected, now_ms):
        if self.face.observe(detected):
            return self.event("face", now_ms)
        return None

    def accel(self, ax, ay, az, now_ms):
        if self.motion.observe(ax, ay, az):
            return self.event("pickup", now_ms)
        return None

    def take(self):
        """The oldest undelivered nudge (kind, reason, at_ms), or None."""
        return self.pending.pop(0) if self.pending else None

    def failed(self, kind):
        """Delivery failed: the next event of this kind may try again."""
        self.windows.forget(kind)
