"""What every voice hands the server: 16 kHz mono 16-bit speech (the robot plays nothing else), and its errors.

Voices make speech at their own rate (espeak-ng and Piper's medium voices at
22050 Hz, a Wyoming server at whatever it says), so everything is resampled
here, once per sentence, by windowed-sinc interpolation: it cuts what is above
the robot's 8 kHz first, where linear interpolation would fold it back as hiss.
Written with numpy alone: scipy's resample_poly does the same, but importing
scipy.signal costs the process ~65 MB, a lot on a Raspberry Pi.
"""

import math
import struct

import numpy as np

TARGET_RATE = 16000
HALF_TAPS = 16  # input samples each side of an output one: a 32-tap filter, sharp enough for speech
KAISER_BETA = 8.0  # the window: ~80 dB down outside the passband
BLOCK = 16384  # output samples made at a time (bounds the temporary arrays to a few MB)
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
        samples = resample(samples, rate, TARGET_RATE)
    return (np.clip(samples, -1.0, 1.0) * 32767).astype("<i2").tobytes()


def resample(samples: np.ndarray, rate: int, target: int) -> np.ndarray:
    """`samples` at `rate` -> at `target` Hz (ceil(n * target / rate) of them), low-passed below the lower Nyquist.

    Output sample n sits at input position n * down / up (up/down: the rates' ratio in lowest
    terms), whose fraction takes only `up` values: each has its row of filter taps, made once."""
    common = math.gcd(rate, target)
    up, down = target // common, rate // common
    taps = _taps(up, down)
    count = -(-len(samples) * up // down)
    padded = np.concatenate([np.zeros(HALF_TAPS, np.float32), samples, np.zeros(HALF_TAPS + 1, np.float32)])
    offsets = np.arange(-HALF_TAPS + 1, HALF_TAPS + 1)
    out = np.empty(count, dtype=np.float32)
    for start in range(0, count, BLOCK):
        n = np.arange(start, min(count, start + BLOCK), dtype=np.int64)
        base, phase = np.divmod(n * down, up)
        window = padded[base[:, None] + offsets[None, :] + HALF_TAPS]
        out[start : start + len(n)] = np.einsum("ij,ij->i", window, taps[phase])
    return out


_taps_made: dict = {}


def _taps(up: int, down: int) -> np.ndarray:
    """[phase, tap]: the Kaiser-windowed sinc, for each fractional position of an output sample."""
    if (up, down) not in _taps_made:
        cutoff = min(1.0, up / down) * 0.95  # a little under the lower Nyquist: room for the filter's slope
        fraction = np.arange(up)[:, None] / up
        distance = fraction - np.arange(-HALF_TAPS + 1, HALF_TAPS + 1)[None, :]  # output position - input sample
        window = np.kaiser(2 * HALF_TAPS + 1, KAISER_BETA)
        # the window sampled at each distance (it spans -HALF_TAPS..HALF_TAPS)
        shaped = np.interp(distance, np.linspace(-HALF_TAPS, HALF_TAPS, 2 * HALF_TAPS + 1), window)
        _taps_made[(up, down)] = (cutoff * np.sinc(cutoff * distance) * shaped).astype(np.float32)
    return _taps_made[(up, down)]


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
