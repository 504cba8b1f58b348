"""What every voice hands the server: 16 kHz mono 16-bit speech (the robot plays nothing else), and its errors.

Voices make speech at their own rate (espeak-ng and Piper's medium voices at
22050 Hz, a Wyoming server at whatever it says), so everything is resampled
here, once per sentence: polyphase filtering (scipy's resample_poly) keeps the
voice clean where linear interpolation would fold its highs back as hiss.
"""

import math
import struct

import numpy as np

TARGET_RATE = 16000
UNKNOWN_SIZE = 0xFFFFFFFF  # a streamed WAV's sizes when its length is not known yet (as sox and ffmpeg write it)


class TtsError(Exception):
    """A request that cannot be spoken: `status` is the HTTP status to answer, `message` the one line why."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status
        self.message = message


def pcm_samples(data: bytes, width: int, channels: int) -> np.ndarray:
    """Little-endian PCM of 1, 2 or 4 bytes a sample, interleaved channels -> mono float samples in -1..1."""
    if width == 1:  # 8-bit WAV is unsigned
        samples = (np.frombuffer(data, dtype=np.uint8).astype(np.float32) - 128.0) / 128.0
    elif width in (2, 4):
        kind = "<i2" if width == 2 else "<i4"
        usable = len(data) - len(data) % width
        samples = np.frombuffer(data[:usable], dtype=kind).astype(np.float32) / float(2 ** (8 * width - 1))
    else:
        raise ValueError(f"{8 * width}-bit audio")
    if channels > 1:
        samples = samples[: len(samples) - len(samples) % channels].reshape(-1, channels).mean(axis=1)
    return samples


def to_robot(samples: np.ndarray, rate: int) -> bytes:
    """Float samples (-1..1) at `rate` -> what the robot plays: 16 kHz mono 16-bit little-endian bytes."""
    samples = np.asarray(samples, dtype=np.float32)
    if rate <= 0:
        raise ValueError(f"a sample rate of {rate}")
    if rate != TARGET_RATE and len(samples):
        from scipy.signal import resample_poly  # imported on first use: it takes ~0.3 s

        common = math.gcd(rate, TARGET_RATE)
        samples = resample_poly(samples, TARGET_RATE // common, rate // common)
    return (np.clip(samples, -1.0, 1.0) * 32767).astype("<i2").tobytes()


def wav_header(data_bytes: int | None) -> bytes:
    """The 44-byte header of a 16 kHz mono 16-bit WAV with `data_bytes` of samples (None: not known yet)."""
    riff, data = (UNKNOWN_SIZE, UNKNOWN_SIZE) if data_bytes is None else (36 + data_bytes, data_bytes)
    return struct.pack(
        "<4sI4s4sIHHIIHH4sI",
        b"RIFF",
        riff,
        b"WAVE",
        b"fmt ",
        16,
        1,  # PCM
        1,  # mono
        TARGET_RATE,
        2 * TARGET_RATE,
        2,
        16,
        b"data",
        data,
    )
