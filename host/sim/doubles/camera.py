"""A double of UIFlow2's `camera` module (CoreS3, GC0308).

From m5stack/uiflow-micropython docs/en/advanced/camera.rst: init(pixformat,
framesize) with camera.RGB565 and the frame sizes below; snapshot() returns
an image.Image (docs/en/advanced/image.rst: width(), height(), format(),
size(), bytearray()). snapshot() before a successful init() raises, as there
is no sensor to read. Older UIFlow2 builds had no `jpg` module and offered
capture_to_jpg(quality) instead (world file `camera` = old); the current docs
no longer describe it, so its signature is the one our HAL has always used.
"""

import _double

RGB565 = 2
JPEG = 4  # image.rst, Constants (an image's format())
QQVGA, QCIF, HQVGA, FRAME_240X240, QVGA = 5, 6, 7, 8, 9
_SIZES = {QQVGA: (160, 120), QCIF: (176, 144), HQVGA: (240, 176), FRAME_240X240: (240, 240), QVGA: (320, 240)}
_started = []


class Image:
    """image.rst, class image.Image: the frame a snapshot returns, or a JPEG jpg.encode made."""

    def __init__(self, width, height, pixformat, data):
        self._w = width
        self._h = height
        self._format = pixformat
        self._data = data

    def width(self):
        return self._w

    def height(self):
        return self._h

    def format(self):
        return self._format

    def size(self):
        return len(self._data)

    def bytearray(self):
        return self._data


def init(*args, **kwargs):
    parsed = _double.call("camera.init", args, kwargs, [("pixformat", "int", True), ("framesize", "int", True)])
    if parsed["pixformat"] != RGB565:
        raise ValueError("camera.init: pixformat supports camera.RGB565 only")
    if parsed["framesize"] not in _SIZES:
        raise ValueError("camera.init: unknown framesize " + str(parsed["framesize"]))
    if _double.world("camera", "ok") == "fail":
        raise OSError("camera init failed (the GC0308 did not answer on I2C)")
    _started[:] = [_SIZES[parsed["framesize"]]]


def snapshot():
    if not _started:
        raise OSError("camera.snapshot: the camera is not initialised (camera.init failed or was never called)")
    width, height = _started[0]
    _double.record("camera.snapshot", {})
    # A small stand-in for the RGB565 frame (the real one is w*h*2 bytes in PSRAM): its size is not what is tested.
    return Image(width, height, RGB565, bytearray(64))


# The JPEG jpg.encode hands out. UIFlow2's jpg.encode (C, M5Stack's `py_jpg_encode`) keeps one JPEG in a static
# image: each call frees the last one's data and encodes anew with esp32-camera's fmt2jpg, which mallocs it outside
# the MicroPython heap. So the double makes its stand-in once, at import, where the simulator counts it with the
# doubles' own heap (runner.doubles_heap), and hands out that one buffer; a fresh one per /look in the firmware's
# heap was a cost the robot does not have.
_JPEG = []


def jpeg_bytes():
    """A real JPEG (the fake HAL's drawing of a face): the same buffer every time, as the one jpg.encode keeps."""
    if not _JPEG:
        from hal.face_jpeg import FACE_JPEG

        _JPEG.append(bytearray(FACE_JPEG))
    return _JPEG[0]


try:
    jpeg_bytes()
except ImportError:  # the firmware's hal/ is not on the path (a double imported on its own): made at first use
    pass


if _double.world("camera", "ok") == "old":

    def capture_to_jpg(quality):
        if not _started:
            raise OSError("camera.capture_to_jpg: the camera is not initialised")
        if not isinstance(quality, int) or not 0 <= quality <= 100:
            raise ValueError("capture_to_jpg: quality is 0..100")
        _double.record("camera.capture_to_jpg", {"quality": quality})
        return jpeg_bytes()
