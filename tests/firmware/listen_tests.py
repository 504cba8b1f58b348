"""Tests of the end-pointer (firmware/core/vad.py), unchanged under CPython (pytest) and MicroPython.

Run under MicroPython as a script: `micropython listen_tests.py` prints "N passed, M failed".
Plain functions and asserts, frames made here: a tone of a given loudness, or a quiet room.
"""

import math
import sys

from core.vad import FRAME_BYTES, Endpointer, Preroll, frame_energy


def tone(level, hz=220, frames=1):
    """`frames` 20 ms frames of a sine of amplitude `level` (16-bit little-endian PCM)."""
    out = bytearray(FRAME_BYTES * frames)
    for i in range(len(out) // 2):
        value = int(level * math.sin(2 * math.pi * hz * i / 16000)) & 0xFFFF
        out[2 * i] = value & 0xFF
        out[2 * i + 1] = value >> 8
    return out


def quiet(frames=1):
    return bytearray(FRAME_BYTES * frames)


def run(vad, frames):
    """Feed each frame; the events in order, with runs of the same event collapsed."""
    seen = []
    for frame in frames:
        event = vad.feed(frame)
        if not seen or seen[-1] != event:
            seen.append(event)
        if event == "end":
            break
    return seen


def test_energy_of_a_tone_and_of_silence():
    assert frame_energy(quiet()) == 0
    loud = frame_energy(tone(8000))
    assert 4500 < loud < 5800, loud  # the mean of |sin| is 2/pi of the peak
    assert frame_energy(tone(-8000)) == loud  # negative samples count by their size


def test_speech_starts_after_three_voiced_frames_and_ends_after_the_silence():
    vad = Endpointer(end_frames=10)
    frames = [quiet()] * 20 + [tone(6000)] * 30 + [quiet()] * 12
    assert run(vad, frames) == ["idle", "start", "audio", "end"]
    assert vad.reason == "silence"
    assert vad.frames == 18 + 30 - 3 + 10  # the pre-roll (15 + the 3 that started it), the rest, the silence


def test_the_preroll_keeps_the_frames_before_speech_oldest_first():
    vad = Endpointer(preroll_frames=2)
    marks = [tone(50 + i) for i in range(6)]  # quiet, but each one different
    for frame in marks:
        assert vad.feed(frame) == "idle"
    for _ in range(2):
        assert vad.feed(tone(9000)) == "idle"
    assert vad.feed(tone(9000)) == "start"
    held = b"".join(bytes(piece) for piece in vad.preroll.pieces())
    assert held == bytes(marks[4]) + bytes(marks[5]) + bytes(tone(9000)) * 3


def test_preroll_wraps_around_its_one_buffer():
    ring = Preroll(3, frame_bytes=2)
    assert ring.pieces() == []
    for n in range(5):
        ring.add(bytes((n, n)))
    assert b"".join(bytes(p) for p in ring.pieces()) == bytes((2, 2, 3, 3, 4, 4))


def test_a_short_click_is_not_speech():
    vad = Endpointer()
    assert run(vad, [quiet()] * 5 + [tone(9000)] * 2 + [quiet()] * 20) == ["idle"]


def test_the_noise_floor_follows_a_humming_room():
    vad = Endpointer(end_frames=35)
    hum = tone(2000)  # energy ~1270: above the fixed minimum, so a fresh detector takes its onset for speech
    assert run(vad, [quiet()] * 10 + [hum] * 600) == ["idle", "start", "audio", "end"]
    assert vad.reason == "silence", vad.reason  # learnt during the "utterance": it ends long before max_length
    assert vad.frames < 500, vad.frames
    assert vad.threshold() > frame_energy(hum), vad.floor
    vad.reset(wait=False)
    assert run(vad, [hum] * 50) == ["idle"]  # the hum is the room now
    assert run(vad, [tone(12000)] * 5) == ["idle", "start", "audio"]  # a voice above it still counts


def test_a_room_noisy_from_the_first_frame_is_not_taken_for_speech():
    vad = Endpointer()
    hum = tone(2000)  # the microphone opens on a fan: its level is the room's from the first frame
    assert run(vad, [hum] * 50) == ["idle"]
    assert run(vad, [tone(12000)] * 5) == ["idle", "start", "audio"]  # a voice above it counts


def test_speech_from_the_first_frame_is_heard_at_its_first_pause():
    vad = Endpointer(end_frames=10)
    frames = [tone(7000)] * 10 + [quiet()] * 2 + [tone(7000)] * 10 + [quiet()] * 12
    assert run(vad, frames) == ["idle", "start", "audio", "end"]
    held = b"".join(bytes(piece) for piece in vad.preroll.pieces())
    assert held.startswith(bytes(tone(7000)))  # its first words are in the pre-roll


def test_a_quieter_room_is_learnt_at_once():
    vad = Endpointer(floor=3000)
    vad.feed(quiet())
    assert vad.floor == 0
    assert vad.threshold() == vad.min_level


def test_no_speech_after_a_tap_ends_the_wait():
    vad = Endpointer(wait_frames=25)
    assert run(vad, [quiet()] * 40) == ["idle", "end"]
    assert vad.reason == "no_speech"
    vad.reset(wait=False)  # conversation mode waits as long as the face stays
    assert run(vad, [quiet()] * 40) == ["idle"]


def test_an_utterance_is_cut_at_its_maximum_length():
    vad = Endpointer(max_frames=50)
    assert run(vad, [quiet()] * 5 + [tone(7000)] * 100) == ["idle", "start", "audio", "end"]
    assert vad.reason == "max_length"
    assert vad.frames == 50


def test_pauses_inside_speech_do_not_end_it():
    vad = Endpointer(end_frames=10)
    frames = ([tone(7000)] * 10 + [quiet()] * 8) * 3 + [quiet()] * 10
    assert run(vad, frames) == ["idle", "start", "audio", "end"]
    assert vad.frames > 50


def main():
    passed = failed = 0
    for name in sorted(globals()):
        if name.startswith("test_"):
            try:
                globals()[name]()
                passed += 1
            except Exception as failure:
                failed += 1
                print("FAIL", name, repr(failure))
    print(passed, "passed,", failed, "failed")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
