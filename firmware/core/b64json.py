"""A /look answer written as base64 JSON in small pieces.

A QVGA JPEG is ~15 KB; as base64 inside one JSON string it is ~20 KB more, and
building that string once fragmented a 192 KB heap into MemoryError. So the
image is encoded CHUNK bytes at a time (a multiple of 3, so no padding appears
mid-stream) straight from a memoryview, and each piece goes to the wire.
The largest allocation here is one encoded chunk: CHUNK * 4 / 3 bytes.

A running body has ~17-26 KB free at 256K on the unix port. Before it collected
every 4 KB (core/heap.py) none of that was in a run much over 2 KB, and on the
UIFlow2 doubles most /looks failed asking for a 1025-byte piece
(tools/bench-robot-soak). Now the free room is in one run of 13 KB or more, but
a piece stays small: 512 characters (one 513-byte allocation). 256-byte pieces were tried once and the CPython simulator's
serial link then lost a /look mid-frame (tests/firmware/test_firmware_hostile.py,
3 of 3); with 512 that test passes (3 of 3), and why 256 failed is still not
understood.
"""

import binascii

CHUNK = 384  # 3 * 128 input bytes -> 512 base64 characters per piece


class ImageBody:
    """A /look answer carrying pixels; transports stream it with `pieces` instead of json.dumps."""

    def __init__(self, data, mime_type="image/jpeg"):
        self.data = data
        self.mime_type = mime_type


def pieces(image, chunk=CHUNK):
    """Yield the JSON text of `{"image": <base64>, "mimeType": ...}` as bytes pieces."""
    if chunk % 3:
        raise ValueError("chunk must be a multiple of 3 so base64 has no padding mid-stream")
    yield b'{"image":"'
    view = memoryview(image.data)
    for start in range(0, len(view), chunk):
        yield binascii.b2a_base64(view[start : start + chunk], newline=False)
    yield b'","mimeType":"' + image.mime_type.encode() + b'"}'


def write(write_bytes, image, chunk=CHUNK):
    """Write the whole answer through `write_bytes(piece)`; returns the number of bytes written."""
    total = 0
    for piece in pieces(image, chunk):
        write_bytes(piece)
        total += len(piece)
    return total
