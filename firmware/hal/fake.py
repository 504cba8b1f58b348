"""The fake hardware: deterministic, for tests and `soulstack body sim`.

Everything it is asked to do is recorded so a test can see it. The camera
returns a real JPEG (an 80x60 drawing of a face, made once with Pillow and
kept here as bytes), padded with a JPEG comment segment to the size of a real
QVGA frame (~15 KB). Like a camera driver's frame buffer, that frame is
allocated once, at start-up, and handed out again on every snapshot: asking a
long-running heap for a fresh 15 KB run per /look failed with MemoryError at
256 KB even with 136 KB free, because the newest small objects (the request's,
the animation's) sat inside the one free run big enough (docs/firmware.md,
"Memory"). The face detector follows a script: a list of booleans, or the
existence of a file (`fake.face_file` in config.json) the simulator's user or
a test can create and delete.

The screen is words: with `fake.screen` (a file path; the simulator passes one
end of a pipe) each change of what the robot shows is one line there —
`face: happy`, `says: "hello"`, `looking: who is there?`, `error: ...`, and
the notes the body makes (`nudge -> soul: ...`). Blinks, glances and the
moving mouth are left out: they change many times a second. Whenever the
microphone opens or closes the screen says `mic: live` / `mic: off`.

The room is files too: `fake.touch_file` is a finger on the screen while it
exists; `fake.mic_file` is a sound in the room (16 kHz mono 16-bit WAV or raw
PCM): from the moment it appears it plays in real time, once (the file is taken
away), and a live microphone hears it; otherwise the room is quiet. The speaker
and the microphone share one I2S bus on the CoreS3: playing while the
microphone is live is refused here (an error line and `overlaps` count), as
the real board would garble it. With `fake.speaker_log` every change to what
the speaker will play writes `until <wall ms>`: when its last queued sample
ends (a stop cuts it to now), so a test or a benchmark knows when sound stops;
`start <wall ms>` when an utterance's first sample plays, and `sound <wall ms>`
when a sound began in the room. With `fake.speaker_pcm` every sample played is
appended to that file (raw PCM at the rate it was played), so a test can hear
what the robot said.
"""

import os

from core.clock import system_clock

from hal.face_jpeg import FACE_JPEG  # the picture itself (the UIFlow2 camera double hands it out too)


def _one_line(text, most=160):
    text = text.replace("\n", " ")
    return text if len(text) <= most else text[: most - 3] + "..."


def _exists(path):
    try:
        os.stat(path)
        return True
    except OSError:
        return False


def _wall_ms():
    import time

    return time.time_ns() // 1000000


def _frame(pad):
    """SOI, a comment segment of `pad` zero bytes (a comment may hold anything), then the real image."""
    out = bytearray(2 + (4 + pad if pad else 0) + len(FACE_JPEG) - 2)
    out[0:2] = FACE_JPEG[0:2]
    at = 2
    if pad:
        length = pad + 2  # a segment length counts its own two bytes
        out[at : at + 4] = bytes((0xFF, 0xFE, length >> 8, length & 0xFF))
        at += 4 + pad
    out[at:] = memoryview(FACE_JPEG)[2:]
    return out


class Hal:
    name = "fake"
    camera_expected = True

    def __init__(self, config, clock=None):
        fake = config.get("fake", {})
        self.clock = clock or system_clock()
        self.has_camera = fake.get("camera", True)
        # Allocated at start, while the heap is still in one piece (a camera driver reserves its buffer at init too).
        try:
            self.frame_buffer = _frame(fake.get("jpeg_pad", 14000)) if self.has_camera else None
        except MemoryError:
            self.frame_buffer = None  # camera_problem says so; the rest of the body still works
        self.has_speaker = fake.get("speaker", True)
        self.has_display = fake.get("display", True)
        self.face_file = fake.get("face_file")
        self.face_script = []  # booleans consumed one per detection, before face_file is asked
        self.frames_drawn = 0
        self.last_frame = None
        self.errors = []
        self.played_bytes = 0
        self.play_rate = None
        self.servo_commands = []
        self.torque = None
        self.snapshots = 0
        self.events = []  # ("touch"|"button") the test or sim injects
        self.accel = (0.0, 0.0, 1.0)
        screen = fake.get("screen")
        # Unbuffered bytes: each line leaves at once (MicroPython's flush() fails on a pipe).
        self.screen = open(screen, "wb", 0) if screen else None
        self.shown_face = None  # what the screen's lines last said, so only changes are written
        self.shown_text = ""
        self.shown_caption = False
        self.flash_bytes = fake.get("flash_free")  # free flash to report (None: what the computer's disk has)
        self.halt_at = fake.get("halt_at")  # a checkpoint where the "power is cut" (see checkpoint)
        self.halt_file = fake.get("halt_file")
        self.touch_file = fake.get("touch_file")
        self._touching = False
        self.mic_file = fake.get("mic_file")
        self.mic_on = False
        self.overlaps = 0  # speaker writes while the microphone was live (must stay 0)
        self._sound = None  # the room's sound: [open file, when it started (ms), bytes handed out]
        self._mic_read_ms = 0
        log = fake.get("speaker_log")
        self.speaker_log = open(log, "a") if log else None
        heard = fake.get("speaker_pcm")
        self.speaker_pcm = open(heard, "ab") if heard else None
        self._audio_until = 0  # wall ms when what the speaker holds has played out

    def begin(self):
        pass

    def update(self):
        pass

    # --- network: the simulator is always on the (loopback) network ---

    def wifi_connect(self, ssid, password):
        pass

    def wifi_status(self):
        return True, "127.0.0.1", "connected"

    def wifi_failed(self):
        return False

    # --- display ---

    def display_problem(self):
        return None if self.has_display else "the fake display is switched off in config"

    def draw(self, frame):
        self.frames_drawn += 1
        self.last_frame = frame
        shown = frame.indicator if frame.indicator == "thinking" else frame.expression
        if shown != self.shown_face:
            self.shown_face = shown
            self._show("face: " + shown)
        if frame.text != self.shown_text or frame.caption != self.shown_caption:
            self.shown_text = frame.text
            self.shown_caption = frame.caption
            if frame.text:
                text = _one_line(frame.text)
                self._show("looking: " + text if frame.caption else 'says: "' + text + '"')

    def show_error(self, text):
        self.errors.append(text)
        self._show("error: " + _one_line(text))

    def note(self, text):
        self._show(_one_line(text))

    def _show(self, line):
        if self.screen:
            self.screen.write((line + "\n").encode())

    # --- camera and faces ---

    def camera_problem(self):
        if not self.has_camera:
            return "camera not ready: the fake camera is switched off in config"
        if self.frame_buffer is None:
            return "camera not ready: no memory for its frame buffer (give the simulator a bigger --heap)"
        return None

    def snapshot_jpeg(self, quality=70):
        """The camera's frame buffer, holding a JPEG: the same buffer every time (see the module doc)."""
        if not self.has_camera:
            raise OSError("no camera")
        self.snapshots += 1
        return self.frame_buffer

    def detect_face(self):
        """True/False, or None when face detection is unavailable."""
        if not self.has_camera:
            return None
        if self.face_script:
            return self.face_script.pop(0)
        if self.face_file:
            return _exists(self.face_file)
        return False

    # --- speaker ---

    def speaker_problem(self):
        return None if self.has_speaker else "the fake speaker is switched off in config"

    def play_start(self, rate, channels):
        self.play_rate = rate
        self.play_channels = channels
        self._first_chunk = True

    def play(self, pcm):
        if self.mic_on:
            self.overlaps += 1
            self.show_error("the speaker played while the microphone was live (one I2S bus)")
            return
        self.played_bytes += len(pcm)
        if self.speaker_pcm:
            self.speaker_pcm.write(pcm)
            self.speaker_pcm.flush()
        now = _wall_ms()
        rate = (self.play_rate or 16000) * (getattr(self, "play_channels", 1) or 1) * 2
        if getattr(self, "_first_chunk", False) and self.speaker_log:
            self._first_chunk = False
            self.speaker_log.write("start " + str(max(now, self._audio_until)) + "\n")  # its first sample
        self._audio_until = max(now, self._audio_until) + len(pcm) * 1000 // rate
        self._log_until()

    def playing(self):
        return self._audio_until > _wall_ms()

    def play_stop(self):
        """Stop at once, dropping what the speaker still holds (M5.Speaker.stop() on the robot)."""
        self._audio_until = min(self._audio_until, _wall_ms())
        self._log_until()

    def play_end(self):
        self._log_until()

    def _log_until(self):
        if self.speaker_log:
            self.speaker_log.write("until " + str(self._audio_until) + "\n")
            self.speaker_log.flush()

    # --- microphone: the room's sound, in real time (see the module doc) ---

    def mic_problem(self):
        return None if self.mic_file else "the fake microphone has no fake.mic_file in config"

    def mic_start(self):
        if self._audio_until > _wall_ms():
            raise OSError("the microphone cannot start while the speaker plays (one I2S bus)")
        self.mic_on = True
        self._mic_read_ms = self.clock.ms()
        self._show("mic: live")

    def mic_stop(self):
        if self.mic_on:
            self.mic_on = False
            self._show("mic: off")

    def _room(self):
        """The sound playing in the room now, started when its file appeared."""
        if self._sound is None and self.mic_file and _exists(self.mic_file):
            handle = open(self.mic_file, "rb")
            head = handle.read(44)
            if head[:4] != b"RIFF":
                handle.seek(0)
            os.remove(self.mic_file)
            self._sound = [handle, self.clock.ms(), 0]
            if self.speaker_log:
                self.speaker_log.write("sound " + str(_wall_ms()) + "\n")  # when the room's sound began
        return self._sound

    def mic_read(self, buffer):
        """Fill `buffer` with what the microphone caught since the last read (whole 20 ms frames); bytes filled."""
        now = self.clock.ms()
        frames = min((now - self._mic_read_ms) // 20, len(buffer) // 640)
        if not self.mic_on or frames <= 0:
            return 0
        if now - self._mic_read_ms > 500:
            self._mic_read_ms = now - 20 * frames  # a loop that stalled lost the rest, as a DMA ring would
        self._mic_read_ms += 20 * frames
        want = frames * 640
        view = memoryview(buffer)
        sound = self._room()
        got = 0
        if sound is not None:
            handle, began, given = sound
            due = (self._mic_read_ms - began) * 32  # bytes of the sound played into the room by then
            skip = due - want - given
            if skip > 0:  # the room went on while the microphone was not listening
                handle.seek(skip, 1)
                given += skip
            got = handle.readinto(view[:want]) or 0
            sound[2] = given + got
            if got < want:
                handle.close()
                self._sound = None
        for at in range(got, want):
            buffer[at] = 0  # the quiet room
        return want

    # --- touch, button, IMU ---

    def read_accel(self):
        return self.accel

    def poll_event(self):
        """ "touch", "button", or None."""
        if self.touch_file:
            touching = _exists(self.touch_file)
            began = touching and not self._touching
            self._touching = touching
            if began:
                return "touch"
        if self.mic_file and not self.mic_on:
            self._room()  # a sound that starts while nobody listens plays all the same
        return self.events.pop(0) if self.events else None

    # --- servos ---

    def servo_send(self, axis, degrees):
        self.servo_commands.append((axis, degrees))
        if len(self.servo_commands) > 200:
            del self.servo_commands[:100]

    def servo_torque(self, on):
        self.torque = on

    # --- flash: the simulator's folder stands for the robot's filesystem ---

    def flash_free(self, path):
        """(bytes free, block size) of the filesystem holding `path`."""
        stat = os.statvfs(path or "/")
        free = stat[0] * stat[4]
        if self.flash_bytes is not None:
            free = min(free, self.flash_bytes)
        return free, stat[0]

    def checkpoint(self, name):
        """A point in an update where a test cuts the power: at `fake.halt_at` the robot freezes for good.

        It writes the checkpoint's name to `fake.halt_file` first, so the test knows when to kill it
        (`kill -9` of a frozen process is a power cut at exactly that point). Real HALs have no checkpoints.
        """
        if name != self.halt_at:
            return
        if self.halt_file:
            with open(self.halt_file, "w") as handle:
                handle.write(name)
        import time

        while True:
            time.sleep(1)

    # --- watchdog: fake hardware has none of its own; the loader's (slots.py, on a trial boot) is fed from here ---

    def watchdog_start(self, timeout_ms):
        pass

    def watchdog_feed(self):
        try:
            import slots
        except ImportError:
            return
        feed = getattr(slots, "feed", None)  # it feeds only once the set serves
        if feed:
            feed()
