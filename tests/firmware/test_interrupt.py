"""A tap while the robot speaks (issue 31, item 1): the real firmware under MicroPython, its speech from
`soulstack tts`, through tools/bench_interrupt_robot.py's rig (the fake speaker's log says when sound stops)."""

import asyncio
import importlib.util

import aiohttp

from soulstack.serving import listening
from tests.helpers import free_port
from tests.helpers import ROOT, until

SPEC = importlib.util.spec_from_file_location("bench_interrupt_robot", ROOT / "tools" / "bench_interrupt_robot.py")
bench = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(bench)


async def test_a_tap_stops_the_speech_drops_the_queue_tells_what_was_heard_and_listens(tmp_path):
    # ears_url on a port nobody serves: the microphone still opens after the tap (the stream would fail later).
    async with bench.RobotRig(tmp_path, config={"ears_url": "http://127.0.0.1:9/utterance"}) as rig:
        await rig.speak("Hello there.")
        await rig.speak(bench.LONG)
        await rig.speak("And this one is never heard.")
        await until(lambda: any(line == 'says: "' + bench.LONG[:157] + '..."' for line in rig.screen), "the long one")
        await rig.playing()
        stopped_ms = await rig.interrupt()
        assert stopped_ms <= 100, f"the speech went on {stopped_ms:.0f} ms after the tap"
        await until(lambda: "mic: live" in rig.screen, "the microphone to open after the tap")
        heard = await until(lambda: [n for n in rig.nudges.sent if "heard" in n], "the heard nudge")
        assert heard[0]["heard"]["played"] == ["Hello there."]
        assert heard[0]["heard"]["cut"] == bench.LONG
        assert 0 < heard[0]["heard"]["cut_fraction"] < 1
        await asyncio.sleep(1)
        assert not any("never heard" in line for line in rig.screen), rig.screen  # the queue was dropped
        assert not any(line.startswith("error") for line in rig.screen), rig.screen
        assert not [n for n in rig.nudges.sent if "touched my face" in n.get("reason", "")]  # the tap was for talking


async def test_a_tap_as_the_next_sentence_begins_cuts_it_drops_the_queue_and_the_next_answer_is_still_said(tmp_path):
    async with bench.RobotRig(tmp_path) as rig:
        await rig.speak("One.")
        await rig.speak(bench.LONG)
        await rig.speak("Three is never heard.")
        await rig.playing(ahead_ms=0)
        # The tap lands just after the first sentence's last sample: the speech task took the next one at once
        # (firmware/speaking.py), so the tap cuts that one while its speech is fetched or has only begun.
        # (The body stays at most ~150 ms ahead of the speaker, so a moment past the end with no more sound
        # written is the end of the sentence.) A tap before the task took the text: test_speaking_task.py.
        while bench.wall_ms() < bench.last_until(rig.log) + 30 and rig.log.read_text().count("start ") < 2:
            await asyncio.sleep(0.005)  # (the next one's first sample already played: tap now)
        rig.robot.touch()
        await asyncio.sleep(0.3)
        rig.robot.touch(down=False)
        heard = await until(lambda: [n for n in rig.nudges.sent if "heard" in n], "the heard nudge")
        assert heard[0]["heard"]["played"] == ["One."], heard
        assert heard[0]["heard"]["cut"] == bench.LONG and heard[0]["heard"]["cut_fraction"] < 0.5, heard
        await rig.quiet()
        await rig.speak("Four, the next answer.")
        await rig.playing(timeout_s=8)  # it is heard: the speaker plays again (the balloon alone is not enough)
        await rig.quiet()
        assert not any("never heard" in line for line in rig.screen), rig.screen  # the queue was dropped
        # No ears here: the one tap sent the `heard` nudge and no ordinary "touched my face" one besides.
        assert not [n for n in rig.nudges.sent if "touched my face" in n.get("reason", "")], rig.nudges.sent


async def test_a_tap_in_a_streamed_answer_of_several_sentences_says_how_much_was_heard_is_unknown(tmp_path):
    # `soulstack tts` streams a text of several sentences as it makes them, with no Content-Length: the robot
    # cannot reckon what part played, and says so by sending no cut_fraction (never 0: that would say none).
    from soulstack.tts.voices import DEFAULT_VOICE, open_voices

    two = bench.LONG + " " + bench.LONG.replace("clouds", "waves")
    async with bench.RobotRig(tmp_path, voices=await open_voices(DEFAULT_VOICE)) as rig:  # Piper's voice streams
        await rig.speak(two)
        await rig.playing()
        await rig.interrupt()
        heard = await until(lambda: [n for n in rig.nudges.sent if "heard" in n], "the heard nudge")
        assert heard[0]["heard"]["cut"] == two and "cut_fraction" not in heard[0]["heard"], heard


async def test_the_heard_nudge_reaches_a_soul_that_was_down_for_a_second(tmp_path):
    nudges = bench.Nudges()
    nudge_port = free_port()  # nobody answers here until the soul comes back
    robot = bench.Simulator(free_port(), nudge_url=f"http://127.0.0.1:{nudge_port}/nudge").start()
    try:
        assert await asyncio.to_thread(robot.wait_until_serving)
        robot.release()
        async with aiohttp.ClientSession() as http:
            async with http.post(f"http://127.0.0.1:{robot.port}/speak", json={"text": bench.LONG}) as response:
                assert response.status == 200, await response.text()
        await asyncio.sleep(0.5)  # no TTS: the robot mimes it for a while
        robot.touch()
        await asyncio.sleep(0.3)
        robot.touch(down=False)
        await asyncio.sleep(1.2)  # the soul is down for the first tries
        async with listening(nudges.app(), "127.0.0.1", nudge_port):
            heard = await until(lambda: [n for n in nudges.sent if "heard" in n], "the heard nudge", timeout=15)
        assert heard[0]["heard"]["cut"] == bench.LONG
    finally:
        robot.stop()
