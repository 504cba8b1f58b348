"""hal/uiflow.py's microphone on the documented-API Mic double (host/sim/doubles/M5.py), under MicroPython.

A tap (world file `touch`), speech in the room (world file `sound`): the HAL ends the speaker, begins
the microphone, keeps two 16 kHz recordings queued and streams what they hold to an ears stand-in
that records the chunked POST; the journal shows the speaker and the microphone never held the I2S bus
at once, and the speaker has it back afterwards.
"""

import asyncio

import aiohttp

from soulstack.serving import listening
from soulstack.sim.runner import Simulator
from tests.helpers import free_port
from tests.ears.fakes import RecordingEars
from tests.ears.speech import speech_wav
from tests.helpers import until


def bus_holders(calls):
    """Who held the I2S bus at each call: a list of ("speaker"|"mic"|None, call) and whether both ever did."""
    speaker, mic, both = False, False, False
    for call in calls:
        name = call["call"]
        if name == "Speaker.begin":
            speaker = call["returned"]
        elif name == "Speaker.end":
            speaker = False
        elif name == "Mic.begin":
            mic = call["returned"]
        elif name == "Mic.end":
            mic = False
        both = both or (speaker and mic)
    return both


async def test_tap_to_talk_on_uiflow_streams_the_mic_and_never_overlaps_the_speaker(tmp_path):
    recorder = RecordingEars()
    wav = tmp_path / "speech.wav"
    wav.write_bytes(speech_wav())
    async with listening(recorder.app(), "127.0.0.1", 0) as ears_port:
        port = free_port()
        robot = Simulator(
            port,
            hal="uiflow",
            servo={"kind": "scs0009"},
            config={"ears_url": f"http://127.0.0.1:{ears_port}/utterance", "listen": {"conversation": False}},
        ).start()
        try:
            assert await asyncio.to_thread(robot.wait_until_serving)
            robot.set_world("touch", "present")
            await until(lambda: robot.calls("Mic.begin"), "Mic.begin after the tap")
            robot.set_world("touch", None)
            robot.set_world("sound", str(wav))
            await until(lambda: recorder.streams, "the utterance to arrive", timeout=20)
            headers, audio = recorder.streams[0]
            assert headers["Content-Type"].startswith("audio/L16; rate=16000")
            assert headers["X-Soulstack-Body"] == "stackchan"
            assert headers["Transfer-Encoding"] == "chunked"
            pcm = speech_wav()[44:]
            assert len(audio) >= len(pcm) * 0.8, (len(audio), len(pcm))  # all of it, give or take the cut silence
            assert await until(lambda: robot.calls("Mic.end"), "Mic.end")
            records = robot.calls("Mic.record")
            assert records and all(call["rate"] == 16000 and call["rec_data"] == 3200 for call in records)
            assert [c["returned"] for c in robot.calls("Mic.begin")] == [True]
            assert not bus_holders(robot.calls()), "the speaker and the microphone held the bus at once"
            assert not robot.calls("Speaker.playRaw refused")
            assert robot.calls("Speaker.begin")[-1]["returned"]  # the speaker has the bus back
        finally:
            robot.stop()


async def test_a_tap_on_uiflow_tells_the_soul_what_was_heard_even_when_speaker_stop_raises(tmp_path):
    from soulstack.tts.server import make_tts_app
    from tools.bench_interrupt_robot import LONG, Nudges

    nudges = Nudges()
    async with listening(make_tts_app(), "127.0.0.1", 0) as tts_port:
        async with listening(nudges.app(), "127.0.0.1", 0) as nudge_port:
            port = free_port()
            robot = Simulator(
                port,
                hal="uiflow",
                servo={"kind": "scs0009"},
                nudge_url=f"http://127.0.0.1:{nudge_port}/nudge",
                tts_url=f"http://127.0.0.1:{tts_port}/tts",
            ).start()
            try:
                assert await asyncio.to_thread(robot.wait_until_serving)
                robot.set_world("speaker_stop", "fail")
                async with aiohttp.ClientSession() as http:
                    async with http.post(f"http://127.0.0.1:{port}/speak", json={"text": LONG}) as response:
                        assert response.status == 200, await response.text()
                await until(lambda: robot.calls("Speaker.playRaw"), "the speech to play")
                robot.set_world("touch", "present")
                await until(lambda: robot.calls("Speaker.stop"), "Speaker.stop after the tap")
                robot.set_world("touch", None)
                heard = await until(lambda: [n for n in nudges.sent if "heard" in n], "the heard nudge")
                assert heard[0]["heard"]["cut"] == LONG
            finally:
                robot.stop()
