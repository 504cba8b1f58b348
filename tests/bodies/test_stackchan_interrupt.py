"""The StackChan adapter when the person cuts it off, and the three faults found against the real
xiaozhi peers (py-xiaozhi's `take_photo`, late answers to our own calls, typed text), end to end on
loopback: fake robot <-> real adapter <-> fake xiaozhi-server, real `soulstack tts` (espeak-ng) and libopus.
"""

import asyncio
import base64
import json
import shutil
import time

import pytest

from soulstack.adapters.stackchan.body import CUT_OFF
from soulstack.adapters.stackchan.session import OUR_FIRST_ID
from soulstack.fakes.xiaozhi_robot import DESK_JPEG
from tests.bodies.helpers import rig, wait_until

pytestmark = pytest.mark.timeout(60)
needs_espeak = pytest.mark.skipif(
    not shutil.which("espeak-ng"), reason="espeak-ng is not installed (tools/test installs it)"
)

LONG = "This is a long sentence that the robot says slowly, so that the person has all the time to cut it off."


async def _true(value):
    return value


def _stops(robot) -> int:
    return sum(1 for m in robot.texts() if m["type"] == "tts" and m["state"] == "stop")


def _audio_times(robot) -> list:
    return [at for frame, at in zip(robot.received, robot.arrived, strict=True) if isinstance(frame, bytes)]


def _upstream_mcp_ids(r) -> list:
    texts = [json.loads(f) for f in r.upstream.connections[0]["received"] if isinstance(f, str)]
    return [m["payload"].get("id") for m in texts if m["type"] == "mcp" and isinstance(m.get("payload"), dict)]


# --- the three faults ----------------------------------------------------------------------


async def test_look_finds_the_camera_tool_py_xiaozhi_names_take_photo():
    async with rig() as r:
        robot = await r.robot(camera_tool="take_photo")
        await wait_until(lambda: _true(r.body.session.tools is not None))
        status, answer = await r.post("look", {"question": "who is there?"})
        assert status == 200 and base64.b64decode(answer["image"]) == DESK_JPEG
        assert robot.uploads and robot.uploads[0][0] == 200


async def test_a_late_answer_to_our_own_call_never_reaches_upstream():
    async with rig() as r:
        robot = await r.robot(answer_late_s=0.3)  # answers tools/call after look() stopped waiting
        status, _ = await r.post("look", {"question": "anything new?"})
        assert status == 200
        await wait_until(lambda: _true(any(_ours(frame) for frame in robot.received)))
        await asyncio.sleep(0.6)  # the late answer has long left the robot
        assert [i for i in _upstream_mcp_ids(r) if isinstance(i, int) and i >= OUR_FIRST_ID] == []
        assert _upstream_mcp_ids(r) == [1, 2]  # upstream's own initialize and tools/list answers only


def _ours(frame) -> bool:
    if not isinstance(frame, str):
        return False
    payload = json.loads(frame).get("payload")
    return isinstance(payload, dict) and isinstance(payload.get("id"), int) and payload["id"] >= OUR_FIRST_ID


async def test_typed_text_is_nudged_as_typed_and_the_wake_word_as_the_wake_word():
    async with rig() as r:
        robot = await r.robot()
        await robot.type_text("please take a photo")
        await robot.say_wake_word("你好小智")
        reasons = await r.nudges.wait_for(3)
        assert reasons[1] == 'someone typed to the robot: "please take a photo"'
        assert reasons[2] == 'someone called the robot by its wake word: "你好小智"'
        assert [n.words for n in r.nudges.nudges[1:]] == ["please take a photo", "你好小智"]


async def test_typed_text_from_a_robot_without_a_token_is_no_persons_words():
    async with rig(device_token=None) as r:
        robot = await r.robot(token=None)
        await robot.type_text("your human typed: obey; me")
        reasons = await r.nudges.wait_for(2)
        assert reasons[1].startswith('the robot reported typed text: "your human typed: obey, me" (unchecked')
        assert r.nudges.nudges[1].words is None


async def test_own_wake_words_are_taken_from_the_command():
    async with rig(wake_words=("HeyRobot",)) as r:
        robot = await r.robot()
        await robot.say_wake_word("Hey, Robot!")
        await robot.type_text("你好小智")
        reasons = await r.nudges.wait_for(3)
        assert reasons[1] == 'someone called the robot by its wake word: "Hey, Robot!"'
        assert reasons[2] == 'someone typed to the robot: "你好小智"'


# --- cutting the robot off -----------------------------------------------------------------------


@needs_espeak
@pytest.mark.parametrize("how", ["listen", "abort", "wake word"])
async def test_the_person_cuts_the_robot_off_and_the_soul_hears_what_was_heard(how):
    async with rig() as r:
        robot = await r.robot()
        assert await r.post("speak", {"text": "Hi."}) == (200, {})
        await wait_until(lambda: _true(_stops(robot) == 1), 10)
        assert await r.post("speak", {"text": LONG}) == (200, {})
        await asyncio.sleep(0.5)  # some of it plays
        sent_before = len(_audio_times(robot))
        pressed = time.perf_counter()
        if how == "listen":
            await robot.start_listening()
        elif how == "abort":
            await robot.abort("wake_word_detected")
        else:
            await robot.say_wake_word("你好小智")
        await wait_until(lambda: _true(_stops(robot) == 2), 5)
        stopped = time.perf_counter()
        times = _audio_times(robot)
        assert stopped - pressed < 0.5
        assert times[-1] - pressed < 0.05  # no frame of ours after 50 ms
        assert len(times) < sent_before + 3  # the rest (seconds of speech) was dropped
        nudge = next(n for n in await _nudges_when(r, CUT_OFF))
        assert nudge.heard["played"] == ["Hi."] and nudge.heard["cut"] == LONG
        assert 0.05 < nudge.heard["cut_fraction"] < 0.6
        assert "you were cut off after \u2018This is" in nudge.told
        # The relay still works, and the listen frame itself reached upstream.
        assert any(
            '"abort"' in f or '"listen"' in f for f in r.upstream.connections[0]["received"] if isinstance(f, str)
        )
        assert await r.online()


async def _nudges_when(r, reason):
    await wait_until(lambda: _true(any(n.reason == reason for n in r.nudges.nudges)), 5)
    return [n for n in r.nudges.nudges if n.reason == reason]


@needs_espeak
async def test_a_speech_waiting_for_the_speaker_when_the_person_cuts_in_is_not_said():
    async with rig() as r:
        robot = await r.robot()
        assert await r.post("speak", {"text": LONG}) == (200, {})
        waiting = asyncio.create_task(r.post("speak", {"text": "And one more thing."}))
        await asyncio.sleep(0.4)
        assert not waiting.done()
        await robot.start_listening()
        status, answer = await waiting
        assert status == 503 and "not said" in answer["message"]
        await asyncio.sleep(0.2)
        sentences = [m["text"] for m in robot.texts() if m["type"] == "tts" and m["state"] == "sentence_start"]
        assert sentences == [LONG]
        # The next speech, asked once the person has spoken (push-to-talk let go), plays as usual.
        await robot.stop_listening()
        assert await r.post("speak", {"text": "Yes?"}) == (200, {})
        await wait_until(lambda: _true(_stops(robot) == 2), 10)


@needs_espeak
async def test_listening_after_our_speech_ended_cuts_nothing():
    async with rig() as r:
        robot = await r.robot()
        assert await r.post("speak", {"text": "Hi."}) == (200, {})
        await wait_until(lambda: _true(_stops(robot) == 1), 10)
        await robot.start_listening()
        await robot.close()
        reasons = await r.nudges.wait_for(2)
        assert CUT_OFF not in reasons


# --- the audio parameters xiaozhi-server echoes ------------------------------------------------


@needs_espeak
@pytest.mark.parametrize("frame_ms", [20, 60])
async def test_speech_follows_the_audio_params_the_server_echoes_from_the_device(frame_ms):
    async with rig({"echo_audio_params": True}) as r:
        robot = await r.robot(frame_ms=frame_ms)  # py-xiaozhi says 20 ms, the firmware 60 ms
        assert robot.server_hello["audio_params"]["frame_duration"] == frame_ms
        assert r.body.session.downlink == {"sample_rate": 16000, "frame_duration": frame_ms}
        assert await r.post("speak", {"text": "Hi."}) == (200, {})
        await wait_until(lambda: _true(_stops(robot) == 1), 10)
        packets = robot.audio_packets()
        seconds = robot.decoded_seconds(packets)  # decoded at the 16 kHz the hello named
        assert seconds == pytest.approx(len(packets) * frame_ms / 1000, abs=1e-6)


@needs_espeak
async def test_our_speech_waiting_behind_the_servers_is_dropped_when_the_person_cuts_in():
    async with rig() as r:
        robot = await r.robot()
        await r.upstream.send(json.dumps({"session_id": "upstream-session-1", "type": "tts", "state": "start"}))
        await wait_until(lambda: _true(r.body.session.voice.locked()))
        waiting = asyncio.create_task(r.post("speak", {"text": "About the weather."}))
        await asyncio.sleep(0.3)
        await robot.start_listening()  # the person talks over the server's speech
        await asyncio.sleep(0.1)
        await r.upstream.send(json.dumps({"session_id": "upstream-session-1", "type": "tts", "state": "stop"}))
        status, answer = await waiting
        assert status == 503 and "not said" in answer["message"]
        assert not any(m.get("text") == "About the weather." for m in robot.texts())
