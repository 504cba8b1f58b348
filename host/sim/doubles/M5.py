"""A double of UIFlow2's `M5` module (M5Unified/M5GFX bindings) for the CoreS3.

Written from m5stack/uiflow-micropython: docs/en/hardware/display.rst
("Display", "newCanvas"), docs/en/hardware/speaker.rst ("Speaker"),
docs/en/hardware/mic.rst ("Mic": begin, end, isRunning, isEnabled,
isRecording's 0/1/2, record(rec_data[, rate[, stereo]])), and,
where the docs leave a signature out or name it differently (drawString,
push, setVolume's `vol`), from the bindings in m5stack/components/M5Unified/
(mpy_m5gfx.cpp gfx_drawString: text, x, y, font; gfx_push: exactly x and
y; mpy_m5spk.cpp spk_setVolume). Imu.getAccel(), Touch.getCount() and
BtnA/BtnPWR.wasPressed() follow M5Unified's names as UIFlow2 programs call
them; their argument-less signatures were not checked against UIFlow2's own
imu/button pages. The speaker doc's rule holds here too: nothing works
before M5.begin().

What a person would read on the robot goes to the simulator's screen lines
(the file $SOULSTACK_SCREEN, one end of a pipe, as the fake HAL's `fake.screen`):
text drawn inside a filled round rectangle (the speech balloon) as
`says: "..."`, other text as `screen: "..."`, once per change, and `mic: live` /
`mic: off` as the microphone begins and ends. The room is the world folder's
`touch` (a finger) and `sound` (a WAV's path) or `sound.wav` (a WAV itself,
moved in whole: the simulator prints that path, as for the fake HAL).
"""

import os

import _double

_begun = []
_screen = []  # the open screen file, once written to


def _show(line):
    """One line on the simulator's screen (nothing when it gave none: a test reads the journal)."""
    path = os.getenv("SOULSTACK_SCREEN")
    if not path:
        return
    if not _screen:
        _screen.append(open(path, "wb", 0))
    text = line.replace("\n", " ")
    _screen[0].write(((text if len(text) <= 160 else text[:157] + "...") + "\n").encode())


def begin():
    _double.record("M5.begin", {})
    _begun.append(True)


def update():
    _needs_begin("M5.update")


def _needs_begin(what):
    if not _begun:
        raise RuntimeError(what + " before M5.begin() (UIFlow2's drivers start in M5.begin())")


class _Font:
    def __init__(self, name):
        self.name = name


class _Fonts:
    # display.rst, Display.setFont: the fonts UIFlow2 builds in (world `efont` = missing: a build without the CJK ones).
    ASCII7 = _Font("ASCII7")
    DejaVu9 = _Font("DejaVu9")
    DejaVu12 = _Font("DejaVu12")
    DejaVu18 = _Font("DejaVu18")
    DejaVu24 = _Font("DejaVu24")
    DejaVu40 = _Font("DejaVu40")
    DejaVu56 = _Font("DejaVu56")
    DejaVu72 = _Font("DejaVu72")
    if _double.world("efont", "ok") != "missing":
        EFontCN24 = _Font("EFontCN24")
        EFontJA24 = _Font("EFontJA24")
        EFontKR24 = _Font("EFontKR24")


_XY = [("x", "int", True), ("y", "int", True)]
_WH = [("w", "int", True), ("h", "int", True)]
_COLOR = [("color", "int", False)]


class _Gfx:
    """The drawing calls display.rst documents, each argument checked as mpy_m5gfx.cpp parses it."""

    FONTS = _Fonts
    name = "Display"

    def __init__(self, width, height):
        self._w = width
        self._h = height
        self._drawn = None  # ([balloon text], [other text], [balloon rects]) of the frame being drawn
        self._read = ([], [])  # what its text last read, so only a change is shown

    def _tell(self):
        """The frame is whole (pushed, or the next one begins): show its text if it changed."""
        drawn, self._drawn = self._drawn, None
        if drawn is None:
            return
        said, other = drawn[0], drawn[1]
        if said and said != self._read[0]:
            _show('says: "' + " ".join(said) + '"')
        if other and other != self._read[1]:
            _show('screen: "' + " ".join(other) + '"')
        self._read = (said, other)

    def _call(self, method, args, kwargs, spec):
        _needs_begin(self.name + "." + method)
        return _double.call(self.name + "." + method, args, kwargs, spec)

    def width(self):
        return self._w

    def height(self):
        return self._h

    def fillScreen(self, *args, **kwargs):
        self._call("fillScreen", args, kwargs, _COLOR)
        self._tell()  # drawing straight on the screen (no canvas): a new frame ends the last one
        self._drawn = ([], [], [])

    def fillRect(self, *args, **kwargs):
        self._call("fillRect", args, kwargs, _XY + _WH + _COLOR)

    def drawRect(self, *args, **kwargs):
        self._call("drawRect", args, kwargs, _XY + _WH + _COLOR)

    def fillCircle(self, *args, **kwargs):
        self._call("fillCircle", args, kwargs, _XY + [("r", "int", True)] + _COLOR)

    def fillRoundRect(self, *args, **kwargs):
        parsed = self._call("fillRoundRect", args, kwargs, _XY + _WH + [("r", "int", True)] + _COLOR)
        if self._drawn is not None:
            self._drawn[2].append((parsed["x"], parsed["y"], parsed["w"], parsed["h"]))

    def drawLine(self, *args, **kwargs):
        spec = [("x0", "int", True), ("y0", "int", True), ("x1", "int", True), ("y1", "int", True)] + _COLOR
        self._call("drawLine", args, kwargs, spec)

    def setFont(self, *args, **kwargs):
        # The binding casts the argument to a font pointer: anything but a FONTS entry crashes the board.
        self._call("setFont", args, kwargs, [("font", _Font, True)])

    def setTextColor(self, *args, **kwargs):
        self._call("setTextColor", args, kwargs, [("fgcolor", "int", True), ("bgcolor", "int", False)])

    def drawString(self, *args, **kwargs):
        # gfx_drawString(text, x, y, font): the fourth argument is a font, not a colour; the colour
        # comes from setTextColor. A number there is read as a font pointer on the robot.
        parsed = self._call("drawString", args, kwargs, [("text", "str", True)] + _XY + [("font", _Font, False)])
        if self._drawn is not None:
            x, y = parsed["x"], parsed["y"]
            inside = [1 for (bx, by, bw, bh) in self._drawn[2] if bx <= x < bx + bw and by <= y < by + bh]
            self._drawn[0 if inside else 1].append(parsed["text"])

    def newCanvas(self, *args, **kwargs):
        spec = _WH + [("bpp", "int", False), ("psram", "bool", False)]
        parsed = self._call("newCanvas", args, kwargs, spec)
        if _double.world("canvas") == "fail":
            raise MemoryError(
                "M5Canvas.createSprite failed (no PSRAM for a " + str(parsed["w"]) + "x" + str(parsed["h"]) + " canvas)"
            )
        return _Canvas(parsed["w"], parsed["h"])


class _Canvas(_Gfx):
    name = "Canvas"

    def push(self, x, y):
        # gfx_push(self, x, y): a fixed two-argument function; mp_obj_get_int on each.
        if not isinstance(x, int) or not isinstance(y, int):
            raise TypeError("can't convert to int")
        _needs_begin("Canvas.push")
        _double.record("Canvas.push", {"x": x, "y": y})
        self._tell()

    def delete(self):
        _double.record("Canvas.delete", {})


if _double.world("display", "ok") != "missing":  # missing: a UIFlow2 board without a screen (AtomS3 Lite)
    Display = _Gfx(320, 240)
    Lcd = Display


def _broken(name, what):
    """World file `name` = broken: the sensor's I2C read fails, as a loose connector makes it."""
    if _double.world(name, "") == "broken":
        raise OSError(what + ": I2C read failed (errno 116, ETIMEDOUT)")


class _Speaker:
    """speaker.rst, class Speaker (the CoreS3's AW88298)."""

    enabled = False

    def begin(self):
        _needs_begin("Speaker.begin")
        ok = _double.world("speaker", "ok") != "fail" and not Mic.running
        _double.record("Speaker.begin", {"returned": ok})
        self.enabled = ok
        return ok

    def end(self):
        _needs_begin("Speaker.end")
        _double.record("Speaker.end", {})
        self.enabled = False

    def setVolume(self, *args, **kwargs):
        _needs_begin("Speaker.setVolume")
        # The binding (mpy_m5spk.cpp, spk_setVolume) names it `vol`; speaker.rst says 0..255.
        parsed = _double.call("Speaker.setVolume", args, kwargs, [("vol", "int", True)])
        if not 0 <= parsed["vol"] <= 255:
            raise ValueError("Speaker.setVolume: volume is 0..255, got " + str(parsed["vol"]))

    def tone(self, *args, **kwargs):
        _needs_begin("Speaker.tone")
        spec = [
            ("frequency", "int", True),
            ("duration", "int", True),
            ("channel", "int", False),
            ("stop_current_sound", "bool", False),
        ]
        _double.call("Speaker.tone", args, kwargs, spec)

    def playRaw(self, *args, **kwargs):
        # playRaw(wav_data[, sample_rate[, stereo[, repeat[, channel[, stop_current_sound]]]]]) -> bool
        _needs_begin("Speaker.playRaw")
        spec = [
            ("wav_data", "buf", True),
            ("sample_rate", "int", False),
            ("stereo", "bool", False),
            ("repeat", "int", False),
            ("channel", "int", False),
            ("stop_current_sound", "bool", False),
        ]
        parsed = _double.call("Speaker.playRaw", args, kwargs, spec)
        if Mic.running or not self.enabled:  # one I2S bus: a speaker ended for the microphone plays nothing
            _double.record("Speaker.playRaw refused", {"mic_running": Mic.running})
            return False
        channel = parsed.get("channel", -1)
        if not -1 <= channel <= 7:
            raise ValueError("Speaker.playRaw: channel is 0..7 (or -1 for any), got " + str(channel))
        if _double.FOLDER:  # what the speaker was given, byte for byte, for a test to compare
            with open(_double.FOLDER + "/speaker.pcm", "ab") as out:
                out.write(parsed["wav_data"])
        return True

    def isPlaying(self, *args):
        return False

    def stop(self, *args):
        _double.record("Speaker.stop", {})
        if _double.world("speaker_stop", "ok") == "fail":  # a driver that raises: the body must still carry on
            raise OSError("Speaker.stop failed (I2S driver error)")


Speaker = _Speaker()


class _Mic:
    """mic.rst, class Mic (the CoreS3's ES7210), and M5Unified's queue of two recordings behind it.

    record(buf, rate, stereo) queues `buf` to be filled (at most two queued; a third is refused with
    False); isRecording() is 2 while two are queued, 1 once the older one is filled, 0 when none is
    left. What it hears: world file `sound` names a 16 kHz mono 16-bit WAV (or `sound.wav` is one) that
    starts playing in the room when first seen (the file is taken away), in real time; otherwise the room
    is quiet. It shares the I2S bus with the speaker: begin() while the speaker is enabled returns False.
    """

    running = False

    def __init__(self):
        self.queue = []  # [buffer, ms when it is full]
        self.sound = None  # [open file, ms it started]

    def _now(self):
        import time

        return time.ticks_ms()

    def begin(self):
        _needs_begin("Mic.begin")
        ok = not Speaker.enabled and _double.world("mic", "ok") != "fail"
        _double.record("Mic.begin", {"returned": ok, "speaker_enabled": Speaker.enabled})
        if ok and not self.running:
            _show("mic: live")
        self.running = ok
        self.queue = []
        return ok

    def end(self):
        _needs_begin("Mic.end")
        _double.record("Mic.end", {})
        if self.running:
            _show("mic: off")
        self.running = False
        self.queue = []
        return True

    def isRunning(self):
        return self.running

    def isEnabled(self):
        return self.running

    def _room(self):
        path = _double.world("sound", "") if self.sound is None else ""
        if path:
            _double.consume("sound")
        elif self.sound is None and _double.FOLDER:
            path = _double.FOLDER + "/sound.playing"
            try:  # a WAV moved in as `sound.wav`: taken away as it starts, as the fake HAL's room does
                os.rename(_double.FOLDER + "/sound.wav", path)
            except OSError:
                path = ""
        if path:
            handle = open(path, "rb")
            handle.read(44)  # the WAV header
            self.sound = [handle, self._now()]
        return self.sound

    def _fill(self, buffer, start_ms):
        view = memoryview(buffer)
        got = 0
        sound = self._room()
        if sound:
            handle, began = sound
            at = (start_ms - began) * 32
            if at >= 0:
                handle.seek(44 + at)
                got = handle.readinto(view) or 0
                if got < len(buffer) and at > 0:
                    handle.close()
                    self.sound = None
        for i in range(got, len(buffer)):
            buffer[i] = 0

    def _settle(self):
        now = self._now()
        while self.queue and self.queue[0][1] <= now:
            buffer, done = self.queue.pop(0)
            self._fill(buffer, done - len(buffer) // 32)

    def isRecording(self):
        _needs_begin("Mic.isRecording")
        if not self.running:
            return 0
        self._settle()
        return len(self.queue)

    def record(self, *args, **kwargs):
        _needs_begin("Mic.record")
        spec = [("rec_data", "buf", True), ("rate", "int", False), ("stereo", "bool", False)]
        parsed = _double.call("Mic.record", args, kwargs, spec)
        if not self.running:
            return False
        self._settle()
        if len(self.queue) >= 2:
            return False
        rate = parsed.get("rate", 8000)
        if rate != 16000:
            raise ValueError("this double hears 16 kHz only; record(buf, 16000, False)")
        start = self.queue[-1][1] if self.queue else self._now()
        self.queue.append([parsed["rec_data"], start + len(parsed["rec_data"]) // 32])
        return True


Mic = _Mic()


class _Imu:
    """Imu.getAccel() -> (x, y, z) in g."""

    def getAccel(self):
        _needs_begin("Imu.getAccel")
        _broken("accel", "Imu.getAccel")
        given = _double.words("accel")
        if not given:
            return (0.0, 0.0, 1.0)
        return (float(given[0]), float(given[1]), float(given[2]))


Imu = _Imu()


class _Touch:
    """Touch.getCount() -> the number of fingers on the screen."""

    def getCount(self):
        _needs_begin("Touch.getCount")
        _broken("touch", "Touch.getCount")
        return 1 if _double.exists("touch") else 0


Touch = _Touch()


class _Button:
    """wasPressed() is True once per press."""

    def __init__(self, name, world_file):
        self.name = name
        self.world_file = world_file

    def wasPressed(self):
        _needs_begin(self.name + ".wasPressed")
        if self.world_file:
            _broken(self.world_file, self.name + ".wasPressed")
        pressed = bool(self.world_file) and _double.consume(self.world_file)
        if pressed:
            _double.record(self.name + ".wasPressed", {"returned": True})
        return pressed


BtnA = _Button("BtnA", "button")
BtnPWR = _Button("BtnPWR", "")
