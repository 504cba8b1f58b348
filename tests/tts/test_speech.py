"""What every voice hands the robot: any PCM made 16 kHz mono 16-bit, its pitch and length kept."""

import numpy as np
import pytest

from soulstack.tts.speech import pcm_samples, to_robot, wav_header


def tone(rate: int, seconds: float, hz: float = 440.0) -> np.ndarray:
    return 0.5 * np.sin(2 * np.pi * hz * np.arange(int(rate * seconds)) / rate)


def loudest_hz(pcm: bytes) -> float:
    samples = np.frombuffer(pcm, dtype="<i2").astype(np.float64)
    spectrum = np.abs(np.fft.rfft(samples))
    return float(np.argmax(spectrum) * 16000 / len(samples))


def test_piper_rate_to_16k_keeps_length_pitch_and_loudness():
    pcm = to_robot(tone(22050, 2.0), 22050)
    assert abs(len(pcm) / 2 - 32000) <= 1
    assert abs(loudest_hz(pcm) - 440) < 2
    peak = np.max(np.abs(np.frombuffer(pcm, dtype="<i2")[1000:-1000]))
    assert 0.45 * 32767 < peak < 0.55 * 32767


def test_a_wyoming_server_s_48k_stereo_32_bit_becomes_16k_mono():
    left = (tone(48000, 1.0, 1000) * 2**31).astype("<i4")
    stereo = np.column_stack([left, left]).ravel().tobytes()  # both channels alike: mono keeps the tone
    pcm = to_robot(pcm_samples(stereo, 4, 2), 48000)
    assert len(pcm) == 2 * 16000
    assert abs(loudest_hz(pcm) - 1000) < 2


def test_8_bit_is_unsigned_and_a_bad_width_is_refused():
    assert list(pcm_samples(bytes([128, 255, 0]), 1, 1)) == [0.0, 127 / 128, -1.0]
    with pytest.raises(ValueError, match="24-bit"):
        pcm_samples(b"\0\0\0", 3, 1)


def test_wav_header_sizes():
    assert wav_header(100)[4:8] == (136).to_bytes(4, "little") and wav_header(100)[40:44] == (100).to_bytes(4, "little")
    assert wav_header(None)[4:8] == b"\xff\xff\xff\xff" == wav_header(None)[40:44]


def test_what_the_robot_cannot_play_is_cut_not_folded_back():
    # 9 kHz is above the robot's 8 kHz: linear interpolation would fold it back to 7 kHz, audible hiss.
    pcm = np.frombuffer(to_robot(tone(22050, 1.0, 9000), 22050), dtype="<i2").astype(np.float64)
    assert np.sqrt(np.mean(pcm[500:-500] ** 2)) < 0.01 * 0.5 * 32767 / np.sqrt(2)  # under 1% of what went in


def test_every_common_rate_keeps_its_length_and_tone():
    for rate in (8000, 22050, 24000, 44100, 48000):
        pcm = to_robot(tone(rate, 1.0, 1000), rate)
        assert len(pcm) == 2 * 16000 and abs(loudest_hz(pcm) - 1000) < 2
