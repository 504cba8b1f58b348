"""firmware/speaking.py in-process under CPython: the fake HAL, a hand-moved clock, no TTS (speech is mimed).

What the speech task does between the event loop's turns, without a timer: /speak wakes it at once, and
a tap that lands before it took the text drops the text without leaving the robot unable to speak.
The same code under real MicroPython: test_speaking.py, through the simulator.
"""

import asyncio
import json
import sys

import pytest

from tests.firmware.helpers import FIRMWARE

if str(FIRMWARE) not in sys.path:
    sys.path.insert(0, str(FIRMWARE))

from body import Body  # noqa: E402
from core import config as config_mod  # noqa: E402
from core.clock import FakeClock  # noqa: E402
from hal.fake import Hal  # noqa: E402


@pytest.fixture
async def body():
    """A body whose speech task runs; the clock moves only when a test moves it."""
    config, _ = config_mod.parse(json.dumps({"hal": "fake"}))
    robot = Body(Hal(config, clock=FakeClock(1000)), config)
    task = asyncio.create_task(robot.speaking.run())
    await turns()
    yield robot
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


async def turns(count=3):
    """A few turns of the event loop, no time: what a woken task does at once, it has done by then."""
    for _ in range(count):
        await asyncio.sleep(0)


async def test_speak_wakes_the_speech_task_at_once(body):
    assert body.speech.speaking is None  # idle: waiting to be woken
    body.speak("Hello.")
    await turns()
    assert body.speech.speaking == "Hello."  # taken within a few turns: no look at the queue every 100 ms
    assert body.avatar.update(body.clock.ms()).text == "Hello."


async def test_queued_sentences_follow_each_other_and_a_tap_tells_what_was_heard(body):
    body.speak("One.")
    body.speak("Two.")
    body.speak("Three.")
    await turns()
    assert body.speech.speaking == "One."
    body.clock.advance(20000)  # long past the mime of "One."
    await until_speaking(body, "Two.")
    body.clock.advance(400)
    await asyncio.sleep(0.15)  # the mime's next step sees the time
    body.speaking.interrupt()
    heard = body.outbox[-1]["heard"]
    assert heard["played"] == ["One."] and heard["cut"] == "Two." and 0 < heard["cut_fraction"] < 1, heard
    await until_speaking(body, None)
    assert body.speech.items == []  # "Three." was dropped


async def test_a_tap_before_the_task_took_the_text_drops_it_and_the_next_answer_is_still_said(body):
    body.speak("Two.")
    body.speaking.interrupt()  # the face loop saw the tap before the speech task ran: nothing was playing
    assert body.outbox[-1]["heard"] == {"played": []}
    assert not body.speaking.cutting  # a flag left set would silence the next answer
    await turns()
    assert body.speech.speaking is None and body.speech.items == []
    body.speak("Three.")
    await turns()
    assert body.speech.speaking == "Three."
    body.clock.advance(20000)
    await until_speaking(body, None)
    assert body.hal.errors == []


async def until_speaking(body, text, timeout_s=2):
    """Real time passes here (the mime sleeps 120 ms a step); the fake clock does not."""
    for _ in range(int(timeout_s / 0.01)):
        if body.speech.speaking == text:
            return
        await asyncio.sleep(0.01)
    raise AssertionError(f"still speaking {body.speech.speaking!r}, not {text!r}")
