"""The xiaozhi proxy body, end to end on loopback: fake robot <-> real adapter <-> fake xiaozhi-server.

Speech uses the real `soulstack tts` server (espeak-ng) and real libopus.
"""

import asyncio
import base64
import contextlib
import json
import shutil

import aiohttp
import pytest
import websockets

from soulstack.adapters.stackchan.body import StackChanBody
from soulstack.adapters.stackchan.frames import wrap_audio
from soulstack.adapters.stackchan.speech import opus_packets
from soulstack.protocol.body_app import listening
from soulstack.protocol.check import run_checks
from soulstack.protocol.nudges import Debouncer, NudgeSender
from soulstack.tts.server import create_app as tts_app
from tests.fakes.loopback import LoopbackServer
from tests.fakes.nudge_receiver import NudgeReceiver
from tests.fakes.xiaozhi_robot import DESK_JPEG, FakeRobot
from tests.fakes.xiaozhi_upstream import VISION_TOKEN, FakeUpstream

pytestmark = pytest.mark.timeout(60)
needs_espeak = pytest.mark.skipif(not shutil.which("espeak-ng"), reason="espeak-ng is not installed (tools/test installs it)")


class Receiver(LoopbackServer):
    def __init__(self):
        self.nudges = NudgeReceiver()

    def make_app(self):
        return self.nudges.app()


class Rig:
    """Everything a test needs, running: upstream, TTS, nudge receiver, the adapter."""

    def __init__(self, upstream, body, body_url, robot_url):
        self.upstream, self.body, self.body_url, self.robot_url = upstream, body, body_url, robot_url
        self.http = aiohttp.ClientSession()

    async def post(self, endpoint, payload=None, **kwargs):
        async with self.http.post(f"{self.body_url}/{endpoint}", json={} if payload is None else payload, **kwargs) as answer:
            return answer.status, await answer.json()

    async def online(self):
        return (await self.post("status"))[1]["online"]

    async def robot(self, **kwargs) -> FakeRobot:
        robot = await FakeRobot(self.robot_url, **kwargs).connect()
        await self.upstream.wait_connected()
        await wait_until(self.online)
        return robot


async def wait_until(check, timeout_s=5.0):
    deadline = asyncio.get_running_loop().time() + timeout_s
    while not await check():
        assert asyncio.get_running_loop().time() < deadline, f"{check} never came true"
        await asyncio.sleep(0.02)


@contextlib.asynccontextmanager
async def rig(upstream_kwargs=None, **body_kwargs):
    receiver = Receiver()
    async with FakeUpstream(**(upstream_kwargs or {})) as upstream, receiver, listening(tts_app(), "127.0.0.1", 0) as tts_port:
        sender = NudgeSender(f"http://127.0.0.1:{receiver.port}/nudge", debouncer=Debouncer(0.0, 0.0))
        body = StackChanBody(upstream.url, tts_url=f"http://127.0.0.1:{tts_port}/tts", sender=sender, **body_kwargs)
        async with body.serving("127.0.0.1", 0, "127.0.0.1", 0, vision_port=0) as (body_port, robot_port, _):
            test_rig = Rig(upstream, body, f"http://127.0.0.1:{body_port}", f"ws://127.0.0.1:{robot_port}/xiaozhi/v1/")
            test_rig.nudges = receiver.nudges
            try:
                yield test_rig
            finally:
                await test_rig.http.close()


# --- status ---------------------------------------------------------------------


async def test_status_is_true_exactly_while_a_robot_session_is_open():
    async with rig() as r:
        assert not await r.online()
        robot = await r.robot()
        assert await r.online()
        await robot.close()
        started = asyncio.get_running_loop().time()
        await wait_until(lambda: _not(r.online()), timeout_s=1.0)
        assert asyncio.get_running_loop().time() - started < 1.0
        status, answer = await r.post("look", {"question": "anyone?"})
        assert status == 503 and "no robot" in answer["message"]


async def _not(coroutine):
    return not await coroutine


async def test_a_robot_reconnects_and_the_body_works_again():
    async with rig() as r:
        robot = await r.robot()
        await robot.close()
        await wait_until(lambda: _not(r.online()))
        robot = await r.robot()
        assert (await r.post("express", {"emotion": "happy"}))[0] == 200
        await wait_until(lambda: _has(robot, "llm"))
        assert len(r.upstream.connections) == 2


async def _has(robot, kind):
    return any(message["type"] == kind for message in robot.texts())


# --- relaying ------------------------------------------------------------------------


@pytest.mark.parametrize("version", [1, 2, 3])
async def test_frames_are_relayed_byte_identical_both_ways(version):
    async with rig() as r:
        robot = await r.robot(version=version)
        headers = r.upstream.connections[0]["headers"]
        assert headers["Protocol-Version"] == str(version)
        assert headers["Authorization"] == "Bearer robot-token" and headers["Device-Id"] == robot.device_id
        assert headers["Client-Id"] == robot.client_id
        up = [json.dumps({"session_id": "x", "type": "listen", "state": "start", "mode": "auto"}),
              wrap_audio(version, bytes(range(256)) * 3), '{"type":"abort",  "reason" : "wake_word_detected"}']
        for frame in up:
            await robot.send(frame)
        down = [json.dumps({"type": "stt", "text": "你好 robot", "session_id": "upstream-session-1"}),
                wrap_audio(version, b"\x01\x02\x03" * 100), '{"type": "llm", "emotion": "happy", "text": "🙂"}']
        for frame in down:
            await r.upstream.send(frame)
        received = r.upstream.connections[0]["received"]
        await wait_until(lambda: _true(all(frame in received for frame in up) and all(frame in robot.received for frame in down)))
        assert [frame for frame in received if not _mcp_or_hello(frame)] == up
        assert robot.received[-3:] == down


def _mcp_or_hello(frame):
    return isinstance(frame, str) and json.loads(frame)["type"] in ("mcp", "hello")


async def _true(value):
    return value
