"""What the tts tests share: the default Piper voice loaded once, and what a WAV answer holds."""

import functools
import io
import shutil
import struct
import wave
from pathlib import Path

import numpy as np
import pytest

from soulstack.tts.espeak import EspeakVoice
from soulstack.tts.piper import PiperVoice, packaged_voice
from soulstack.tts.voices import Choice, Voices

needs_espeak = pytest.mark.skipif(
    not shutil.which("espeak-ng"), reason="espeak-ng is not installed (tools/test installs it when apt is available)"
)


@functools.cache
def joe() -> PiperVoice:
    """en_US-joe-medium from its PyPI package, loaded once for every test (loading takes ~0.5 s)."""
    name, model = packaged_voice()
    return PiperVoice.load(Path(model), name)


def joe_voices() -> Voices:
    return Voices(joe(), Choice(EspeakVoice("cmn"), "cmn"), "no Chinese Piper voice here")


def wav_facts(body: bytes) -> dict:
    """rate, channels, width, the samples (int16) and their seconds and loudness, of a WAV answer.

    A streamed answer's header says its length is unknown (0xFFFFFFFF): the samples are what follows it."""
    with wave.open(io.BytesIO(body)) as audio:
        rate, channels, width = audio.getframerate(), audio.getnchannels(), audio.getsampwidth()
    data = body.index(b"data") + 8
    samples = np.frombuffer(body[data : len(body) - (len(body) - data) % 2], dtype="<i2")
    return {
        "rate": rate,
        "channels": channels,
        "width": width,
        "data_size": struct.unpack("<I", body[data - 4 : data])[0],
        "samples": samples,
        "seconds": len(samples) / rate,
        "rms": float(np.sqrt(np.mean(samples.astype(np.float64) ** 2))) if len(samples) else 0.0,
    }


def speech_like(facts: dict, low_s: float, high_s: float):
    """The robot can play it (16 kHz mono 16-bit), it is not silence, and it lasts about as long as the words."""
    assert (facts["rate"], facts["channels"], facts["width"]) == (16000, 1, 2)
    assert low_s < facts["seconds"] < high_s, facts["seconds"]
    assert facts["rms"] > 500, facts["rms"]  # speech at Piper's loudness is thousands; silence is 0
