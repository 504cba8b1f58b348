"""A /look answer written as base64 JSON in small pieces.

A QVGA JPEG is ~15 KB; as base64 inside one JSON string it is ~20 KB more, and
building that string once fragmented a 192 KB heap into MemoryError. So the
image is encoded CHUNK bytes at a time (a multiple of 3, so no padding appears
mid-stream) straight from a memoryview, and each piece goes to the wire.
The largest allocation here is one encoded chunk: CHUNK * 4 / 3 bytes.

CHUNK is small on purpose: a body that has run a while keeps little room in one
piece. At 256K on the unix port, after 3 utterances, every /look failed asking
for a 1025-byte piece (768 bytes encoded) while 20 KB was free in smaller holes;
a 257-byte piece fits in any of them (docs/firmware.md, "Memory").
"""

import binascii

CHUNK = 192  # 3 * 64 input bytes -> 256 base64 characters per piece


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
