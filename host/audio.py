"""WAV in, mono 16-bit samples at the rate a speaker wants out: shared by `soulstack tts` and the bodies
(and `mono_wav`, the way back: samples to a WAV file, for the speech server and the fakes).

Pure standard library (wave, array); the resampler is linear interpolation,
good enough for speech.
"""

import array
import io
import sys
import wave


class AudioError(ValueError):
    """Audio that is not a 16-bit PCM WAV."""


def resampled_length(count: int, rate: int, target: int) -> int:
    """How many samples `resample_linear` makes of `count` samples at `rate`."""
    if rate == target or not count:
        return count
    return max(1, int(count * target / rate))


def resample_linear(samples: array.array, rate: int, target: int, start: int = 0, stop=None) -> array.array:
    """16-bit mono samples from `rate` to `target` Hz by linear interpolation.

    `start`/`stop` pick a span of the output, so that a server can make and send it a piece at a time
    (the pieces joined are exactly the whole)."""
    count = resampled_length(len(samples), rate, target)
    stop = count if stop is None else min(stop, count)
    if rate == target or not samples:
        return samples[start:stop]
    out = array.array("h", bytes(2 * max(0, stop - start)))
    step = rate / target
    last = len(samples) - 1
    for i in range(start, stop):
        position = i * step
        left = int(position)
        right = min(left + 1, last)
        fraction = position - left
        out[i - start] = int(samples[min(left, last)] * (1 - fraction) + samples[right] * fraction)
    return out


def mono_samples(wav_bytes: bytes, target_rate: int) -> array.array:
    """Any 16-bit PCM WAV -> mono samples at `target_rate`, in native byte order."""
    try:
        with wave.open(io.BytesIO(wav_bytes)) as source:
            channels, width, rate = source.getnchannels(), source.getsampwidth(), source.getframerate()
            frames = source.readframes(source.getnframes())
    except (wave.Error, EOFError) as error:
        raise AudioError(f"not a WAV file ({error})") from None
    if width != 2:
        raise AudioError(f"the audio is {8 * width}-bit; expected 16-bit")
    samples = array.array("h", frames)
    if sys.byteorder == "big":
        samples.byteswap()
    if channels > 1:
        samples = array.array(
            "h", (sum(samples[i : i + channels]) // channels for i in range(0, len(samples), channels))
        )
    return resample_linear(samples, rate, target_rate)


def little_endian(samples: array.array) -> bytes:
    """The samples as 16-bit little-endian bytes (what WAV files and Opus encoders take)."""
    if sys.byteorder == "little":
        return samples.tobytes()
    copy = array.array("h", samples)
    copy.byteswap()
    return copy.tobytes()


def mono_wav(frames: bytes, rate: int) -> bytes:
    """A mono 16-bit WAV file of `frames` (little-endian samples, as `little_endian` gives) at `rate` Hz."""
    out = io.BytesIO()
    with wave.open(out, "wb") as wav:
        wav.setnchannels(1)
        wav.setsampwidth(2)
        wav.setframerate(rate)
        wav.writeframes(frames)
    return out.getvalue()
