"""Whose turn it is at a xiaozhi robot, and the wake word as xiaozhi-server reads it: the three faults
found against the real peers (py-xiaozhi's own protocol code and state machine, xiaozhi-esp32-server),
end to end on loopback: fake robot <-> real adapter <-> fake xiaozhi-server, real `soulstack tts`
(espeak-ng) and libopus.

1. In auto mode the device listens again by itself right after every `tts stop` (`listen start`,
   mode "auto"): that is no person cutting in, and speech queued behind it plays in full.
2. While a person has the robot listening (from their `listen start` to `listen stop`, the server's
   `stt`, or the server's answer), our speech waits and is said after; never over the person.
3. A `listen detect`'s text is the wake word exactly when xiaozhi-server would take it for one.
"""

import asyncio
import json
import logging
import shutil

import pytest

from soulstack.adapters.stackchan.body import CUT_OFF
from soulstack.adapters.stackchan.speech import opus_packets
from soulstack.serving import listening
from soulstack.tts.server import make_tts_app as tts_app
from tests.bodies.helpers import rig, wait_until
from tests.bodies.test_stackchan import _tts_turns, _wav_seconds

pytestmark = pytest.mark.timeout(60)
needs_espeak = pytest.mark.skipif(
    not shutil.which("espeak-ng"), reason="espeak-ng is not installed (tools/test installs it)"
)

SESSION = "upstream-session-1"
LONG = "This is a long sentence that the robot says slowly, so that the person has all the time to cut it off."
WOKE = "the robot woke up and opened a conversation"
ENDED = "the robot's conversation ended and it went quiet"


async def _true(value):
    return value


def _tts(robot, state=None) -> list:
    return [m for m in robot.texts() if m["type"] == "tts" and state in (None, m["state"])]


def _listens(r, state="start") -> list:
    frames = r.upstream.connections[0]["received"]
    texts = [json.loads(f) for f in frames if isinstance(f, str)]
    return [m for m in texts if m.get("type") == "listen" and m.get("state") == state]


async def _upstream(r, **message):
    await r.upstream.send(json.dumps({"session_id": SESSION, **message}))


async def _seconds_of(r, text) -> float:
    """How long `text` lasts as the TTS server says it (a second `soulstack tts`, the same espeak-ng)."""
    async with (
        listening(tts_app(), "127.0.0.1", 0) as port,
        r.http.post(f"http://127.0.0.1:{port}/tts", json={"text": text}) as answer,
    ):
        return _wav_seconds(await answer.read())


# --- 1. the device's own re-listen after `tts stop` -----------------------------------------------


@needs_espeak
async def test_the_devices_own_relisten_after_tts_stop_cuts_nothing_and_queued_speech_plays():
    async with rig({"echo_audio_params": True}) as r:
        robot = await r.robot(auto_listen=True, frame_ms=20)  # py-xiaozhi in auto mode
        first, second = "The first thing.", "And the second thing."
        # The server's reply holds the speaker; two of ours queue behind it, one behind the other.
        await _upstream(r, type="tts", state="start")
        await _upstream(r, type="tts", state="sentence_start", text="upstream speaking")
        await wait_until(lambda: _true(r.body.session.voice.locked()))
        speeches = [asyncio.create_task(r.post("speak", {"text": first}))]
        await wait_until(lambda: _true(r.body.session.waiting == 1), 10)
        speeches.append(asyncio.create_task(r.post("speak", {"text": second})))
        await wait_until(lambda: _true(r.body.session.waiting == 2), 10)
        await _upstream(r, type="tts", state="stop")
        # Each `tts stop` (the server's, then ours) makes the device listen again at once, by itself.
        assert await asyncio.gather(*speeches) == [(200, {}), (200, {})]
        await wait_until(lambda: _true(len(_tts(robot, "stop")) == 3), 15)
        await wait_until(lambda: _true(len(_listens(r)) == 3))
        assert [m.get("mode") for m in _listens(r)] == ["auto"] * 3  # relayed to the server, unchanged
        turns = _tts_turns(robot.received, 1)
        assert [t["text"] for t in turns] == ["upstream speaking", first, second]
        for turn in turns[1:]:  # each played in full, none cut at 0%
            expected = await _seconds_of(r, turn["text"])
            assert robot.decoded_seconds(turn["packets"]) == pytest.approx(expected, rel=0.10, abs=0.06)
        await robot.close()
        assert await r.nudges.wait_for(2) == [WOKE, ENDED]  # no one cut the robot off


@needs_espeak
async def test_a_person_cutting_in_after_the_devices_own_relisten_still_cuts_and_hears_it_all():
    async with rig({"echo_audio_params": True}) as r:
        robot = await r.robot(auto_listen=True, frame_ms=20)
        assert await r.post("speak", {"text": "Hi."}) == (200, {})
        await wait_until(lambda: _true(len(_listens(r)) == 1), 10)  # the device's own re-listen
        assert await r.post("speak", {"text": LONG}) == (200, {})
        await wait_until(lambda: _true(len(robot.audio_packets()) > 10), 10)
        await robot.abort("wake_word_detected")  # the person, this time: py-xiaozhi aborts, then listens
        await robot.start_listening("auto")
        await wait_until(lambda: _true(any(n.reason == CUT_OFF for n in r.nudges.nudges)), 5)
        nudge = next(n for n in r.nudges.nudges if n.reason == CUT_OFF)
        assert nudge.heard["played"] == ["Hi."] and nudge.heard["cut"] == LONG  # "Hi." was heard, not forgotten
        assert nudge.heard["cut_fraction"] < 0.9


# --- 2. never over the person ----------------------------------------------------------------------


@needs_espeak
@pytest.mark.parametrize("end", ["listen stop", "stt", "the server's answer"])
async def test_speech_waits_while_the_person_talks_and_is_said_after(end):
    async with rig({"echo_audio_params": True}) as r:
        robot = await r.robot(frame_ms=20)
        voice = opus_packets(bytes(2 * 16000 * 2), 16000, 20)  # two seconds of the person, 100 frames
        await robot.start_listening("manual" if end == "listen stop" else "auto")
        assert await robot.talk(voice[:50]) == 50
        speaking = asyncio.create_task(r.post("speak", {"text": "Hi."}))
        await wait_until(lambda: _true(r.body.session.waiting == 1 or bool(_tts(robot))), 10)
        assert _tts(robot) == []  # nothing of ours while the person talks
        assert await robot.talk(voice[50:]) == 50 and robot.dropped == 0  # the rest of their sentence went out
        assert not speaking.done()
        if end == "listen stop":
            await robot.stop_listening()  # push-to-talk let go
        elif end == "stt":
            await _upstream(r, type="stt", text="what time is it")
        else:  # the server answers first (its `tts start` takes the device out of listening)
            await _upstream(r, type="tts", state="start")
            await _upstream(r, type="tts", state="sentence_start", text="upstream speaking")
            await _upstream(r, type="tts", state="stop")
        assert await speaking == (200, {})
        await wait_until(lambda: _true([t["text"] for t in _tts_turns(robot.received, 1)][-1:] == ["Hi."]), 10)
        said = [t["text"] for t in _tts_turns(robot.received, 1)]
        assert said == (["upstream speaking", "Hi."] if end == "the server's answer" else ["Hi."])
        # Every frame of the person's voice reached the server.
        await wait_until(
            lambda: _true([f for f in r.upstream.connections[0]["received"] if isinstance(f, bytes)] == voice)
        )


@needs_espeak
async def test_speech_that_can_never_be_said_over_the_person_fails_honestly():
    async with rig({"echo_audio_params": True}, voice_wait_s=0.5) as r:
        robot = await r.robot(frame_ms=20)
        await robot.start_listening("manual")  # and the person holds the button
        status, answer = await r.post("speak", {"text": "Hi."})
        assert status == 503 and "listening to the person" in answer["message"] and "not said" in answer["message"]
        assert _tts(robot) == []
        # The robot's conversation ends while a speech waits for the person: that speech fails too.
        r.body.voice_wait_s = 30
        speaking = asyncio.create_task(r.post("speak", {"text": "Hi."}))
        await wait_until(lambda: _true(r.body.session.waiting == 1), 10)
        await robot.close()
        status, answer = await speaking
        assert status == 503 and "conversation ended" in answer["message"]


# --- 3. the wake word as xiaozhi-server matches it -------------------------------------------------


async def test_the_wake_word_matches_as_xiaozhi_server_matches_it():
    # xiaozhi-server drops ASCII punctuation, its full-width forms and both spaces from the text,
    # keeps case and every other character, and looks the rest up in `wakeup_words` as written.
    said = {
        "HeyStackchan": True,
        "Hey Stackchan!": True,
        "Hey，Stackchan。": True,  # full-width comma and full stop
        "hey stackchan": False,  # another case: a chat turn for the server
        "HEYSTACKCHAN": False,
        "Hey、Stackchan": False,  # the ideographic comma is not in its list
    }
    async with rig(wake_words=("HeyStackchan", "你好小智")) as r:
        robot = await r.robot()
        for text in [*said, "你好，小智！", "你好、小智"]:
            await robot.say_wake_word(text)
        reasons = await r.nudges.wait_for(1 + len(said) + 2)
    expected = [*said.values(), True, False]
    for text, reason, wake in zip([*said, "你好，小智！", "你好、小智"], reasons[1:], expected, strict=True):
        kind = "someone called the robot by its wake word" if wake else "someone typed to the robot"
        assert reason == f'{kind}: "{text}"'


async def test_a_wake_word_xiaozhi_server_can_never_match_is_said_at_start_and_never_matches(caplog):
    caplog.set_level(logging.WARNING, logger="soulstack.adapters.stackchan")
    async with rig(wake_words=("hey robot",)) as r:
        assert "'hey robot' can never match" in caplog.text and "'heyrobot'" in caplog.text
        robot = await r.robot()
        await robot.say_wake_word("hey robot")
        reasons = await r.nudges.wait_for(2)
        assert reasons[1] == 'someone typed to the robot: "hey robot"'  # as the server: a chat turn
