"""A double of UIFlow2's `M5` module (M5Unified/M5GFX bindings) for the CoreS3.

Written from m5stack/uiflow-micropython: docs/en/hardware/display.rst
("Display", "newCanvas"), docs/en/hardware/speaker.rst ("Speaker"), and,
where the docs leave a signature out or name it differently (drawString,
push, setVolume's `vol`), from the bindings in m5stack/components/M5Unified/
(mpy_m5gfx.cpp gfx_drawString: text, x, y, font; gfx_push: exactly x and
y; mpy_m5spk.cpp spk_setVolume). Imu.getAccel(), Touch.getCount() and
BtnA/BtnPWR.wasPressed() follow M5Unified's names as UIFlow2 programs call
them; their argument-less signatures were not checked against UIFlow2's own
imu/button pages. The speaker doc's rule holds here too: nothing works
before M5.begin().
"""

import _double

_begun = []


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

    def _call(self, method, args, kwargs, spec):
        _needs_begin(self.name + "." + method)
        return _double.call(self.name + "." + method, args, kwargs, spec)

    def width(self):
        return self._w

    def height(self):
        return self._h

    def fillScreen(self, *args, **kwargs):
        self._call("fillScreen", args, kwargs, _COLOR)

    def fillRect(self, *args, **kwargs):
        self._call("fillRect", args, kwargs, _XY + _WH + _COLOR)

    def drawRect(self, *args, **kwargs):
        self._call("drawRect", args, kwargs, _XY + _WH + _COLOR)

    def fillCircle(self, *args, **kwargs):
        self._call("fillCircle", args, kwargs, _XY + [("r", "int", True)] + _COLOR)

    def fillRoundRect(self, *args, **kwargs):
        self._call("fillRoundRect", args, kwargs, _XY + _WH + [("r", "int", True)] + _COLOR)

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
        self._call("drawString", args, kwargs, [("text", "str", True)] + _XY + [("font", _Font, False)])

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

    def begin(self):
        _needs_begin("Speaker.begin")
        ok = _double.world("speaker", "ok") != "fail"
        _double.record("Speaker.begin", {"returned": ok})
        return ok

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


Speaker = _Speaker()


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
