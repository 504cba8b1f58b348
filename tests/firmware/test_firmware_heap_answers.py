"""Answers the robot reads on a full heap: under real MicroPython at the simulator's default 256K.

A running body's heap is fragmented (measured: 45 KB free, the largest free block under 2 KB), so
core/httpc.py reads an answer in small pieces; before, one 4 KB read of ears' answer failed with
MemoryError and a heard question showed "I couldn't hear you" and told the soul ears had stopped
answering. A nudge reads only the soul's status, and one sent whole is not sent again when its
answer could not be read: the soul may have kept it, and the nudge contract has no id to de-duplicate on.
"""

import asyncio

from aiohttp.test_utils import unused_port

from soulstack.fakes.anthropic_api import FakeAnthropic, tool_use
from soulstack.fakes.soul_body import RecordingBody
from soulstack.serving import listening
from soulstack.sim.runner import Simulator
from soulstack.sim.settings import default_heap
from soulstack.tts.server import make_tts_app
from tests.ears.helpers import EarsProcess, answer_then_sleep, speech_wav
from tests.helpers import until
from tests.soul.helpers import Running, a_soul

# About 4 s of espeak-ng (pocketsphinx makes out some of it; which words does not matter here).
LONG_QUESTION = "I have been sitting here for a long while now tell me what time is it"
TOKEN = "robot-token"  # a robot on Wi-Fi has one, and with it the updater's code on its heap (core/ota.py)


async def tap(robot):
    robot.touch()
    await asyncio.sleep(0.15)  # the face loop looks at the screen every 50 ms
    robot.touch(down=False)
    await asyncio.sleep(0.1)


class Answering:
    """The fake model: sleep at the first waking, then answer whatever woke the soul (the words, whichever)."""

    def __init__(self):
        self.calls = 0

    def __call__(self, request_body):
        self.calls += 1
        return tool_use("sleep", {"minutes": 60}) if self.calls == 1 else answer_then_sleep()


async def test_a_four_second_question_at_the_default_heap_is_heard_answered_and_spoken(tmp_path):
    wav = speech_wav(LONG_QUESTION)
    assert (len(wav) - 44) / 32000 > 3.5  # seconds of 16 kHz 16-bit speech
    screen = []
    async with RecordingBody() as soul_body, FakeAnthropic(default=Answering()) as fake:
        soul = a_soul(tmp_path, soul_body, fake)
        async with Running(soul) as running, listening(make_tts_app(), "127.0.0.1", 0) as tts_port:
            await until(lambda: soul.wakings == 1 and soul.state == "asleep", "the soul's first sleep")
            sim_port, ears_port = unused_port(), unused_port()
            robot = Simulator(
                sim_port,
                token=TOKEN,
                nudge_url=running.url + "/nudge",
                tts_url=f"http://127.0.0.1:{tts_port}/tts",
                show=screen.append,
                config={
                    "ears_url": f"http://127.0.0.1:{ears_port}/utterance",
                    "listen": {"conversation": False, "silence_ms": 500},
                },
            )
            assert robot.heap == default_heap("fake") == "256K"
            ears = EarsProcess(ears_port, running.url, f"http://127.0.0.1:{sim_port}", ("--body-token", TOKEN))
            try:
                await ears.start()
                robot.start()
                assert await asyncio.to_thread(robot.wait_until_serving), robot.last_words
                robot.release()
                await tap(robot)
                await until(lambda: "mic: live" in screen, "the microphone to open")
                robot.play_into_room(wav)
                await until(lambda: [line for line in screen if "ears heard:" in line], "ears' answer, read", 40)
                await until(lambda: [line for line in screen if 'says: "It is three' in line], "the answer, said", 30)
            finally:
                robot.stop()
                ears.stop()
    shown = "\n".join(screen)
    assert "MemoryError" not in shown and "couldn't hear" not in shown, shown
    assert not [line for line in screen if line.startswith("error")], screen
    texts = [str(body["messages"][-1]) for body in fake.bodies]
    assert not [text for text in texts if "couldn't hear the words" in text], texts


class AcceptingSoul:
    """A soul's /nudge that keeps each nudge, then answers 202 with a header too long for the robot's heap.

    HTTP sets no limit on a header's length; the robot needs only the status line, so this answer is
    one it can take: the nudge was delivered, once.
    """

    PADDING = 96 * 1024

    def __init__(self):
        self.requests = []

    async def serve(self, reader, writer):
        head = await reader.readuntil(b"\r\n\r\n")
        length = next(
            int(line.split(b":", 1)[1]) for line in head.split(b"\r\n") if line.lower().startswith(b"content-length:")
        )
        self.requests.append(await reader.readexactly(length))
        writer.write(b"HTTP/1.0 202 Accepted\r\nX-Padding: " + b"a" * self.PADDING + b"\r\n\r\n{}")
        try:
            await writer.drain()
            writer.close()
            await writer.wait_closed()
        except ConnectionError:  # the robot may close once it has the status
            pass


async def test_a_nudge_whose_answer_could_not_be_read_whole_is_delivered_once(tmp_path):
    soul = AcceptingSoul()
    server = await asyncio.start_server(soul.serve, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    screen = []
    robot = Simulator(
        unused_port(),
        nudge_url=f"http://127.0.0.1:{port}/nudge",
        show=screen.append,
        # Nobody listens at ears' address: the utterance is lost, and a heard nudge says so (one that is retried).
        config={"ears_url": f"http://127.0.0.1:{unused_port()}/utterance", "listen": {"conversation": False}},
    )
    try:
        robot.start()
        assert await asyncio.to_thread(robot.wait_until_serving), robot.last_words
        robot.release()
        await tap(robot)
        await until(lambda: "mic: live" in screen, "the microphone to open")
        robot.play_into_room(speech_wav())
        await until(lambda: soul.requests, "the nudge that the utterance was lost", 20)
        assert b"could not be reached" in soul.requests[0]
        await asyncio.sleep(3.5)  # a nudge taken as failed is tried again 2 s later
        assert len(soul.requests) == 1, soul.requests
        assert not [line for line in screen if line.startswith("error")], screen
    finally:
        robot.stop()
        server.close()
        await server.wait_closed()
