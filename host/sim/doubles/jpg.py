"""A double of UIFlow2's `jpg` module (docs/en/advanced/jpg.rst).

encode(img, quality=60) takes an image.Image in RGB565 (what camera.snapshot
returns) and returns a new image.Image in JPEG format; its bytearray() is
the JPEG file. An older build without this module is world file `camera` =
old: importing it fails, as it did there.
"""

import _double
import camera

if _double.world("camera", "ok") in ("old", "no_encoder"):
    raise ImportError("no module named 'jpg'")


def encode(*args, **kwargs):
    parsed = _double.call("jpg.encode", args, kwargs, [("img", camera.Image, True), ("quality", "int", False)])
    img = parsed["img"]
    if img.format() != camera.RGB565:
        raise ValueError("jpg.encode: the image must be RGB565 (image.RGB565)")
    quality = parsed.get("quality", 60)
    if not 0 <= quality <= 100:
        raise ValueError("jpg.encode: quality is 0..100, got " + str(quality))
    return camera.Image(img.width(), img.height(), camera.JPEG, camera.jpeg_bytes())


def decode(img_jpg):
    raise NotImplementedError("jpg.decode is not doubled: the firmware does not use it")
