"""Plain helpers for the bodies' tests: `wait_until` for an async check (timed), the serial bridge on
loopback (`Bridge`) with a soul's /nudge that records (`Soul`), and the StackChan adapter with its
fakes around it (`rig`)."""

import contextlib
import time

import aiohttp
from aiohttp import web

from soulstack.adapters.stackchan.body import StackChanBody
from soulstack.bridge.app import make_bridge_app
from soulstack.bridge.serial_link import SerialLink
from soulstack.fakes.loopback import LoopbackServer
from soulstack.fakes.xiaozhi_robot import FakeRobot
from soulstack.fakes.xiaozhi_upstream import FakeUpstream
from soulstack.protocol.client import BodyClient
from soulstack.protocol.nudge_sender import Debouncer, NudgeSender
from soulstack.serving import listening
from soulstack.tts.server import make_tts_app as tts_app
from tests.helpers import free_port
from tests.fakes.nudge_receiver import NudgeReceiver
from tests.helpers import until


async def wait_until(predicate, timeout_s=5.0):
    """`until` (tests/helpers.py) for an async predicate, every 0.05 s: the seconds it took."""
    started = time.monotonic()
    await until(predicate, f"{predicate} within {timeout_s} s", timeout_s, every=0.05)
    return time.monotonic() - started


# --- the serial bridge --------------------------------------------------------------------


TOKEN = "bridge-test-token"


class Bridge:
    """A running bridge on a free loopback port, with a client for it."""

    def __init__(self, locate, token=TOKEN, nudges=None, **link_options):
        self.link = SerialLink(locate, **link_options)
        self.app = make_bridge_app(self.link, token=token, nudges=nudges)
        self.token = token

    async def __aenter__(self):
        self._listening = listening(self.app, "127.0.0.1", 0)
        port = await self._listening.__aenter__()
        self.url = f"http://127.0.0.1:{port}"
        self.client = BodyClient.at(self.url, token=self.token)
        return self

    async def __aexit__(self, *exc):
        await self.client.close()
        await self._listening.__aexit__(*exc)

    async def online(self):
        return (await self.client.status(timeout_s=5))["online"]

    async def offline(self):
        return not await self.online()


class Soul:
    """A soul's /nudge endpoint that records what arrives; can be started late (the soul was down)."""

    def __init__(self):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}/nudge"
        self.reasons = []

    def app(self):
        async def nudge(request):
            self.reasons.append((await request.json())["reason"])
            return web.json_response({})

        app = web.Application()
        app.router.add_post("/nudge", nudge)
        return app


# --- the StackChan adapter -------------------------------------------------------------------


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
        async with self.http.post(
            f"{self.body_url}/{endpoint}", json={} if payload is None else payload, **kwargs
        ) as answer:
            return answer.status, await answer.json()

    async def online(self):
        return (await self.post("status"))[1]["online"]

    async def robot(self, **kwargs) -> FakeRobot:
        robot = await FakeRobot(self.robot_url, **kwargs).connect()
        await self.upstream.wait_connected()
        await wait_until(self.online)
        return robot


@contextlib.asynccontextmanager
async def rig(upstream_kwargs=None, **body_kwargs):
    """The adapter with FakeRobot's default token required, unless a test says otherwise."""
    body_kwargs.setdefault("device_token", "robot-token")
    receiver = Receiver()
    async with (
        FakeUpstream(**(upstream_kwargs or {})) as upstream,
        receiver,
        listening(tts_app(), "127.0.0.1", 0) as tts_port,
    ):
        sender = NudgeSender(f"http://127.0.0.1:{receiver.port}/nudge", debouncer=Debouncer(0.0, 0.0))
        body = StackChanBody(upstream.url, tts_url=f"http://127.0.0.1:{tts_port}/tts", sender=sender, **body_kwargs)
        async with body.serving("127.0.0.1", 0, "127.0.0.1", 0, vision_port=0) as (body_port, robot_port, _):
            test_rig = Rig(upstream, body, f"http://127.0.0.1:{body_port}", f"ws://127.0.0.1:{robot_port}/xiaozhi/v1/")
            test_rig.nudges = receiver.nudges
            try:
                yield test_rig
            finally:
                await test_rig.http.close()
