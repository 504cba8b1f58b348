"""Answers the robot reads on a full heap: under real MicroPython at the simulator's default 256K.

A running body's heap is fragmented (measured: 45 KB free, the largest free block under 2 KB), so
core/httpc.py reads an answer in small pieces; before, one 4 KB read of ears' answer failed with
MemoryError and a heard question showed "I couldn't hear you" and told the soul ears had stopped
answering. A nudge reads only the soul's status, and one sent whole is not sent again when its
answer could not be read: the soul may have kept it, and the nudge contract has no id to de-duplicate on.
"""

import asyncio


from soulstack.fakes.anthropic_api import FakeAnthropic, tool_use
from soulstack.fakes.soul_body import RecordingBody
from soulstack.serving import listening
from soulstack.sim.runner import Simulator
from soulstack.sim.settings import default_heap
from soulstack.tts.server import make_tts_app
from tests.helpers import free_port
from tests.ears.helpers import EarsProcess, answer_then_sleep, speech_wav
from tests.fakes.nudge_receiver import NudgeReceiver
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
            sim_port, ears_port = free_port(), free_port()
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


class PaddedServer:
    """A server that keeps each request's body, then answers `status` with a header too long for the robot's heap.

    HTTP sets no limit on a header's length. The robot cannot read this answer whole, but its status line
    it can: what the server did with the request is known, and nothing may be sent or said twice.
    """

    PADDING = 96 * 1024

    def __init__(self, status, body=b"{}"):
        self.status = status
        self.body = body
        self.requests = []

    async def serve(self, reader, writer):
        head = await reader.readuntil(b"\r\n\r\n")
        lines = head.lower().split(b"\r\n")
        if b"transfer-encoding: chunked" in lines:  # ears' stream
            received = b""
            while size := int((await reader.readuntil(b"\r\n")).strip(), 16):
                received += (await reader.readexactly(size + 2))[:-2]
            await reader.readuntil(b"\r\n")
        else:  # a nudge
            length = next(int(line.split(b":", 1)[1]) for line in lines if line.startswith(b"content-length:"))
            received = await reader.readexactly(length)
        self.requests.append(received)
        writer.write(b"HTTP/1.0 " + self.status + b"\r\nX-Padding: " + b"a" * self.PADDING + b"\r\n\r\n" + self.body)
        try:
            await writer.drain()
            writer.close()
            await writer.wait_closed()
        except ConnectionError:  # the robot may close once it has what it can read
            pass

    async def __aenter__(self):
        self.server = await asyncio.start_server(self.serve, "127.0.0.1", 0)
        return self.server.sockets[0].getsockname()[1]

    async def __aexit__(self, *exc):
        self.server.close()
        await self.server.wait_closed()


async def spoken_to(nudge_url, ears_url, screen):
    """A simulated robot at 256K, tapped and spoken to: (the robot, still running: stop() it)."""
    robot = Simulator(
        free_port(),
        nudge_url=nudge_url,
        show=screen.append,
        config={"ears_url": ears_url, "listen": {"conversation": False}},
    )
    robot.start()
    assert await asyncio.to_thread(robot.wait_until_serving), robot.last_words
    robot.release()
    await tap(robot)
    await until(lambda: "mic: live" in screen, "the microphone to open")
    robot.play_into_room(speech_wav())
    return robot


async def test_a_nudge_whose_answer_could_not_be_read_whole_is_delivered_once(tmp_path):
    soul = PaddedServer(b"202 Accepted")
    screen = []
    async with soul as port:
        # Nobody listens at ears' address: the utterance is lost, and a heard nudge says so (one that is retried).
        robot = await spoken_to(f"http://127.0.0.1:{port}/nudge", f"http://127.0.0.1:{free_port()}/u", screen)
        try:
            await until(lambda: soul.requests, "the nudge that the utterance was lost", 20)
            assert b"could not be reached" in soul.requests[0]
            await asyncio.sleep(3.5)  # a nudge taken as failed is tried again 2 s later
        finally:
            robot.stop()
    assert len(soul.requests) == 1, soul.requests
    assert not [line for line in screen if line.startswith("error")], screen


async def spoken_until_logged(ears, logged):
    """(the robot's screen, the soul) once a robot spoken to, streaming to `ears`, has logged `logged`."""
    soul = NudgeReceiver()
    screen = []
    async with ears as ears_port, listening(soul.app(), "127.0.0.1", 0) as soul_port:
        robot = await spoken_to(f"http://127.0.0.1:{soul_port}/nudge", f"http://127.0.0.1:{ears_port}/u", screen)
        try:
            await until(lambda: [line for line in screen if logged in line], "the robot's log", 20)
            await asyncio.sleep(1)  # a nudge would be on its way by now
        finally:
            robot.stop()
    return screen, soul


async def test_an_ears_answer_that_could_not_be_read_whole_is_taken_at_its_status(tmp_path):
    ears = PaddedServer(b"200 OK", b'{"heard": "what time is it"}')
    screen, soul = await spoken_until_logged(ears, "answer could not be read")
    assert len(ears.requests) == 1 and len(ears.requests[0]) > 16000  # the whole utterance reached ears
    # A 200 is ears having heard words and given them to the soul: no "I couldn't hear you", no nudge.
    assert not [line for line in screen if "couldn't hear" in line or line.startswith("error")], screen
    assert soul.attempts == 0, soul.reasons


class ReadableServer(PaddedServer):
    """The same server with an answer the robot reads whole."""

    PADDING = 0


async def test_no_speech_in_an_utterance_is_nobody_speaking_not_a_voice_misheard(tmp_path):
    """ears found no voice in the stream: the robot neither shows "I couldn't hear you" nor tells the soul."""
    message = b'{"message": "I heard no speech: nothing stood out as a voice", "soul_told": false, "speech": false}'
    ears = ReadableServer(b"422 Unprocessable Entity", message)
    screen, soul = await spoken_until_logged(ears, "ears heard no speech")
    assert len(ears.requests) == 1
    assert not [line for line in screen if "couldn't hear" in line or line.startswith("error")], screen
    assert soul.attempts == 0, soul.reasons
