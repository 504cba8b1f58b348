"""Reading a WAV header from a stream, so audio can be played as it arrives."""

import struct


class WavError(Exception):
    pass


async def read_header(read_exactly):
    """(sample_rate, channels, bits) after consuming the header up to the PCM data.

    `read_exactly(n)` is an async function returning exactly n bytes. Chunks other
    than "fmt " and "data" (LIST, fact, ...) are skipped.
    """
    riff = await read_exactly(12)
    if riff[:4] != b"RIFF" or riff[8:12] != b"WAVE":
        raise WavError("not a WAV file")
    fmt = None
    while True:
        head = await read_exactly(8)
        kind = head[:4]
        size = struct.unpack("<I", head[4:8])[0]
        if kind == b"data":
            if fmt is None:
                raise WavError("WAV data came before its format")
            return fmt
        body = await read_exactly(size + (size & 1))
        if kind == b"fmt ":
            encoding, channels, rate = struct.unpack("<HHI", body[:8])
            bits = struct.unpack("<H", body[14:16])[0]
            if encoding != 1 or bits != 16:
                raise WavError("only 16-bit PCM WAV can be played")
            fmt = (rate, channels, bits)
