"""A robot that has listened and spoken still sees: the real firmware under MicroPython at the default heap.

The body with everything a home robot has (a token, so the updater; `ears_url`; `tts_url` with a real
`soulstack tts`; `nudge_url`) hears utterances streamed to a recording ears, speaks and looks, in turn,
at the simulator's default heap (256K). Before the audio room and the 256-byte /look pieces, every /look
after 3 utterances died on a 1025-byte allocation (core/b64json.py) with ~20 KB free in smaller holes.
The signals are the robot's own: its screen's lines (`mic: live`, `mic: off`), the streams ears kept,
the answers, and POST /firmware/info's heap (free after a collection, and the largest block).
"""

import asyncio

import aiohttp

from soulstack.serving import listening
from soulstack.sim.runner import Simulator
from soulstack.tts.server import make_tts_app
from tests.helpers import free_port
from tests.ears.fakes import RecordingEars
from tests.ears.speech import speech_wav
from tests.helpers import until
from tools.bench_interrupt_robot import Nudges

TOKEN = "t"
ROUNDS = 6


async def heap(http, url):
    async with http.post(url + "/firmware/info", json={}) as response:
        assert response.status == 200, await response.text()
        return (await response.json())["heap"]


async def test_utterances_speech_and_looks_at_the_default_heap(tmp_path):
    ears, nudges, screen = RecordingEars(), Nudges(), []
    async with (
        listening(ears.app(), "127.0.0.1", 0) as ears_port,
        listening(make_tts_app(), "127.0.0.1", 0) as tts_port,
        listening(nudges.app(), "127.0.0.1", 0) as nudge_port,
    ):
        port = free_port()
        robot = Simulator(
            port,
            token=TOKEN,
            tts_url=f"http://127.0.0.1:{tts_port}/tts",
            nudge_url=f"http://127.0.0.1:{nudge_port}/nudge",
            show=screen.append,
            config={
                "ears_url": f"http://127.0.0.1:{ears_port}/utterance",
                "listen": {"conversation": False, "silence_ms": 300},
            },
        ).start()
        url = f"http://127.0.0.1:{port}"
        try:
            assert await asyncio.to_thread(robot.wait_until_serving), robot.last_words
            robot.release()
            async with aiohttp.ClientSession(headers={"Authorization": "Bearer " + TOKEN}) as http:
                start = await heap(http, url)
                for number in range(ROUNDS):
                    lives = screen.count("mic: live")
                    robot.touch()
                    await until(lambda: screen.count("mic: live") > lives, "the microphone to open", timeout=30)
                    robot.touch(down=False)
                    robot.play_into_room(speech_wav())
                    await until(lambda: len(ears.streams) > number, "the utterance to reach ears", timeout=60)
                    await until(lambda: screen.count("mic: off") > lives, "the microphone to close", timeout=30)
                    async with http.post(url + "/speak", json={"text": f"Okay {number}."}) as answer:
                        assert answer.status == 200, (number, start, await answer.text(), robot.last_words)
                    async with http.post(url + "/look", json={"question": "who is there?"}) as answer:
                        assert answer.status == 200, (number, start, await answer.text(), robot.last_words)
                        assert len((await answer.json())["image"]) > 10000
                end = await heap(http, url)
        finally:
            robot.stop()
    text = "\n".join(screen + robot.last_words)
    assert "MemoryError" not in text, text
    # The heap is flat: what it had free after boot it has (within 4 KB) after the rounds, with room in one
    # piece for what a request costs microdot (it failed on 464 bytes) and a /look's 256-byte pieces. The
    # largest block moves with where collections happen to fall (1.9-2.2 KB after boot here): 1 KB is the
    # line that matters, not a figure to chase (tools/bench-robot-soak prints that one).
    assert end["free"] >= start["free"] - 4096, (start, end)
    assert end["largest"] >= 1024, (start, end)
