"""`soulstack body sim` tells a person where to tap and where to play sound, and shows what the robot
says, on every HAL (issue 47, item 7), as the real command under real MicroPython.

Before, only the fake HAL printed its room (`touch`, `sound.wav`) and its `says:` lines; with
`--hal uiflow` the room was the doubles' world files (`touch`, and `sound` holding a WAV's path),
named only in host/sim/doubles, and nothing said what the robot said. Each test here uses only the
paths the simulator printed: a tap through the printed `touch` opens the microphone (or nudges the
soul, without ears), a WAV moved into the printed `sound.wav` reaches an ears stand-in, and
/speak's words come back as a `says:` line. The generic build has none of these and says so.
"""

import os
import re
import signal
import subprocess
import threading
from pathlib import Path

import aiohttp
import pytest

from soulstack.serving import listening
from tests.helpers import free_port
from tests.ears.fakes import RecordingEars
from tests.ears.speech import speech_wav
from tests.fakes.nudge_receiver import NudgeReceiver
from tests.helpers import until

SAID = "hello from the room test"


class SimCommand:
    """`soulstack body sim` as a process; every line it prints, collected as it comes."""

    def __init__(self, soulstack_cmd, hal, *flags):
        self.port = free_port()
        argv = [*soulstack_cmd, "body", "sim", "--hal", hal, "--port", str(self.port), *flags]
        self.process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        self.lines = []
        threading.Thread(target=lambda: self.lines.extend(self.process.stdout), daemon=True).start()

    async def line(self, pattern, what):
        """The first line printed that matches `pattern` (a regex, from its start)."""

        def found():
            if self.process.poll() is not None:
                raise AssertionError(f"the simulator stopped; it printed: {self.lines}")
            return next((line.rstrip("\n") for line in list(self.lines) if re.match(pattern, line)), None)

        return await until(found, what, timeout=60)

    async def speak(self, text):
        async with aiohttp.ClientSession() as http:
            async with http.post(f"http://127.0.0.1:{self.port}/speak", json={"text": text}) as answer:
                return answer.status, await answer.json()

    def stop(self):
        self.process.send_signal(signal.SIGTERM)
        assert self.process.wait(timeout=20) == 0


def move_in(path: Path, data: bytes):
    """Write a file whole, as the docs tell a person to (a reader never sees half of it)."""
    temporary = path.with_name(path.name + ".new")
    temporary.write_bytes(data)
    os.replace(temporary, path)


@pytest.mark.parametrize("hal", ["fake", "uiflow"])
async def test_the_printed_room_hears_a_tap_and_a_wav_and_says_lines_show_the_words(soulstack_cmd, hal, tmp_path):
    recorder = RecordingEars()
    wav = speech_wav()
    async with listening(recorder.app(), "127.0.0.1", 0) as ears_port:
        ears_url = f"http://127.0.0.1:{ears_port}/utterance"
        sim = SimCommand(soulstack_cmd, hal, "--nudge-url", "", "--ears-url", ears_url)
        try:
            room = await sim.line(r"ears: create ", "the room's paths")
            touch = Path(re.search(r"create (\S+) to tap the screen", room).group(1))
            sound = Path(re.search(r"mono WAV to (\S+) to speak", room).group(1))
            assert touch.name == "touch" and sound.name == "sound.wav" and touch.parent.is_dir(), room
            await sim.line(r"ready: ", "the robot ready")

            assert await sim.speak(SAID) == (200, {})
            await sim.line(f'says: "{SAID}"', "what the robot says")

            touch.touch()  # a finger on the screen: the robot listens
            await sim.line(r"mic: live", "the microphone open after the tap")
            touch.unlink()
            move_in(sound, wav)
            await until(lambda: recorder.streams, "what the robot heard, at ears", timeout=30)
            audio = recorder.streams[0][1]
            assert len(audio) >= len(wav[44:]) * 0.8, (len(audio), len(wav) - 44)  # the WAV, less cut silence
            await sim.line(r"mic: off", "the microphone closed")
        finally:
            sim.stop()


@pytest.mark.parametrize("hal", ["fake", "uiflow"])
async def test_without_ears_the_printed_touch_path_is_a_tap_that_nudges_the_soul(soulstack_cmd, hal):
    receiver = NudgeReceiver()
    async with listening(receiver.app(), "127.0.0.1", 0) as nudge_port:
        sim = SimCommand(soulstack_cmd, hal, "--nudge-url", f"http://127.0.0.1:{nudge_port}/nudge")
        try:
            room = await sim.line(r"touch: create ", "where to tap")
            assert not any(line.startswith("ears: ") for line in sim.lines)
            touch = Path(re.search(r"create (\S+) to tap the screen", room).group(1))
            await sim.line(r"ready: ", "the robot ready")
            touch.touch()
            assert (await receiver.wait_for(1))[0].startswith("someone touched my ")
        finally:
            sim.stop()


async def test_the_generic_build_says_it_has_no_room_and_cannot_speak(soulstack_cmd):
    sim = SimCommand(soulstack_cmd, "generic", "--nudge-url", "", "--ears-url", "http://127.0.0.1:9/utterance")
    try:
        said = await sim.line(r"room: ", "what the generic build has")
        assert "no screen, touch, microphone or speaker" in said
        status, answer = await sim.speak(SAID)
        assert status == 503 and "cannot speak" in answer["message"]
        assert not any(re.match(r"(ears|touch): ", line) for line in sim.lines), sim.lines
    finally:
        sim.stop()
