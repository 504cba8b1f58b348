"""`soulstack body sim`: the real firmware under real MicroPython, checked over real HTTP and a pty."""

import asyncio
import base64
import json
import subprocess
import sys
import time
from pathlib import Path

import aiohttp
import pytest
import serial
from aiohttp import web
from aiohttp.test_utils import unused_port

from host.body import check
from host.sim.runner import Simulator

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "firmware"))
from core import serial_frames  # noqa: E402


async def wait_until_serving(url, seconds=20):
    deadline = time.monotonic() + seconds
    async with aiohttp.ClientSession() as session:
        while time.monotonic() < deadline:
            try:
                async with session.post(url + "/status", json={}) as response:
                    return response.status
            except aiohttp.ClientError:
                await asyncio.sleep(0.1)
    raise AssertionError("the simulated body never answered")


@pytest.fixture
def sim_factory():
    started = []

    def start(**options):
        port = unused_port()
        simulator = Simulator(port, **options).start()
        started.append(simulator)
        return simulator, f"http://127.0.0.1:{port}"

    yield start
    for simulator in started:
        simulator.stop()


@pytest.mark.parametrize("python", [False, True], ids=["micropython", "cpython"])
async def test_sim_passes_body_check_with_token(sim_factory, python):
    simulator, url = sim_factory(token="s3cret", python=python)
    await wait_until_serving(url)
    results = await check.run_checks(url, token="s3cret")
    failed = [r.line() for r in results if not r.passed]
    assert results and not failed, failed


async def test_thirty_looks_in_a_row_under_256k_heap(sim_factory):
    simulator, url = sim_factory(heap="256K")
    await wait_until_serving(url)
    async with aiohttp.ClientSession() as session:
        for _ in range(30):
            async with session.post(url + "/look", json={"question": "who is there?"}) as response:
                assert response.status == 200
                answer = await response.json()
            image = base64.b64decode(answer["image"], validate=True)
            assert answer["mimeType"] == "image/jpeg" and image[:2] == b"\xff\xd8" and image[-2:] == b"\xff\xd9"
            assert len(image) > 15000  # a QVGA-sized frame, as on the device
    assert simulator.process.poll() is None, "the firmware died"


async def test_look_is_honest_without_a_camera(sim_factory):
    simulator, url = sim_factory(fake={"camera": False})
    await wait_until_serving(url)
    async with aiohttp.ClientSession() as session:
        async with session.post(url + "/look", json={"question": "?"}) as response:
            assert (await response.json())["text"].startswith("camera not ready")
        async with session.post(url + "/status", json={}) as response:
            assert await response.json() == {"online": False}


async def test_speak_queue_full_is_503(sim_factory):
    simulator, url = sim_factory()
    await wait_until_serving(url)
    statuses = []
    async with aiohttp.ClientSession() as session:
        for i in range(6):
            async with session.post(url + "/speak", json={"text": "a long sentence to keep the mouth busy " * 3}) as response:
                statuses.append((response.status, await response.json()))
    # Three wait in the queue (a fourth may already be speaking); then the body says it is full.
    assert [s for s, _ in statuses[:3]] == [200, 200, 200]
    assert set(s for s, _ in statuses) == {200, 503}
    assert statuses[-1][0] == 503 and "try again" in statuses[-1][1]["message"]


async def test_face_nudge_reaches_the_soul_once(sim_factory):
    reasons = []

    async def nudge(request):
        assert request.headers.get("Authorization") is None
        reasons.append((await request.json())["reason"])
        return web.json_response({})

    app = web.Application()
    app.router.add_post("/nudge", nudge)
    runner = web.AppRunner(app)
    await runner.setup()
    nudge_port = unused_port()
    await web.TCPSite(runner, "127.0.0.1", nudge_port).start()
    try:
        simulator, url = sim_factory(nudge_url=f"http://127.0.0.1:{nudge_port}/nudge")
        await wait_until_serving(url)
        simulator.face_file.touch()
        deadline = time.monotonic() + 10
        while not reasons and time.monotonic() < deadline:
            await asyncio.sleep(0.1)
        assert reasons == ["someone's face appeared in front of me"]
        # The face leaves and comes back: inside the 10-minute window, no second wake.
        simulator.face_file.unlink()
        await asyncio.sleep(4)
        simulator.face_file.touch()
        await asyncio.sleep(3)
        assert len(reasons) == 1
    finally:
        await runner.cleanup()


async def test_speak_fetches_speech_from_tts(sim_factory):
    from host.tts.server import create_app

    asked = []

    @web.middleware
    async def record(request, handler):
        asked.append(await request.json())
        response = await handler(request)
        asked.append(response.status)
        return response

    app = create_app()
    app.middlewares.append(record)
    runner = web.AppRunner(app)
    await runner.setup()
    tts_port = unused_port()
    await web.TCPSite(runner, "127.0.0.1", tts_port).start()
    try:
        simulator, url = sim_factory(tts_url=f"http://127.0.0.1:{tts_port}/tts")
        await wait_until_serving(url)
        async with aiohttp.ClientSession() as session:
            async with session.post(url + "/speak", json={"text": "hello from the simulator"}) as response:
                assert response.status == 200 and await response.json() == {}
        deadline = time.monotonic() + 15
        while len(asked) < 2 and time.monotonic() < deadline:
            await asyncio.sleep(0.1)
        assert asked[0] == {"text": "hello from the simulator"}
        assert asked[1] == 200
    finally:
        await runner.cleanup()


def test_serial_round_trip_over_a_pty():
    """`soulstack body sim --serial` prints the pty first; framed requests get framed replies."""
    process = subprocess.Popen([sys.executable, "-m", "host.cli", "body", "sim", "--port", "0", "--serial"],
                               cwd=ROOT, stdout=subprocess.PIPE, text=True)
    try:
        first = process.stdout.readline().strip()
        assert first.startswith("serial: /dev/")
        port = serial.Serial(first[len("serial: "):], timeout=10)
        port.write(b"boot noise the firmware must ignore\n")
        port.write(serial_frames.request(1, "status", {}).encode())
        port.write(serial_frames.request("two", "look", {"question": "who?"}).encode())
        port.write(serial_frames.request(3, "speak", {"text": 5}).encode())
        port.write(serial_frames.request(4, "express", {"emotion": "doubtful"}).encode())
        replies, ready = {}, None
        deadline = time.monotonic() + 20
        while len(replies) < 4 and time.monotonic() < deadline:
            frame = serial_frames.decode(port.readline())
            if frame and "ready" in frame:
                ready = frame["ready"]
            elif frame and "id" in frame:
                replies[frame["id"]] = frame
        assert ready == {"ip": "127.0.0.1", "wifi": "connected", "version": "0.1.0", "hal": "fake"}
        assert replies[1]["status"] == 200 and replies[1]["body"] == {"online": True}
        image = base64.b64decode(replies["two"]["body"]["image"], validate=True)
        assert image[:2] == b"\xff\xd8" and replies["two"]["body"]["mimeType"] == "image/jpeg"
        assert replies[3]["status"] == 400 and "must be a string" in replies[3]["body"]["message"]
        assert replies[4] == {"id": 4, "status": 200, "body": {}}
        port.close()
    finally:
        process.terminate()
        assert process.wait(timeout=10) == 0


# --- serial mode on a robot that also has Wi-Fi -------------------------------------


def serial_sim(nudge_url=None, nudge_token=None):
    """A --serial simulator with the nudge settings a flashed Wi-Fi robot has (Simulator has no nudge_token flag)."""
    simulator = Simulator(unused_port(), serial=True, nudge_url=nudge_url)
    config = json.loads(simulator.config_path.read_text())
    config["nudge_token"] = nudge_token
    simulator.config_path.write_text(json.dumps(config))
    return simulator.start()


def cable_frames(port, seconds, until=lambda frame: False):
    """The frames read from the sim's pty for `seconds`, or until one satisfies `until`."""
    seen = []
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        frame = serial_frames.decode(port.readline())
        if frame:
            seen.append(frame)
            if until(frame):
                break
    return seen


async def test_serial_mode_sends_the_face_nudge_to_nudge_url_with_its_token():
    """In serial mode with a nudge_url and Wi-Fi up, the face nudge goes over HTTP (with the token), not down the cable."""
    sys.path.insert(0, str(ROOT / "tests"))
    from fakes.nudge_receiver import NudgeReceiver

    soul = NudgeReceiver(token="nudge-t0k")
    runner = web.AppRunner(soul.app())
    await runner.setup()
    soul_port = unused_port()
    await web.TCPSite(runner, "127.0.0.1", soul_port).start()
    simulator = serial_sim(f"http://127.0.0.1:{soul_port}/nudge", "nudge-t0k")
    try:
        port = serial.Serial(simulator.serial_path, timeout=0.2)
        simulator.face_file.touch()
        assert await soul.wait_for(1, timeout_s=15) == ["someone's face appeared in front of me"]
        on_cable = await asyncio.to_thread(cable_frames, port, 2)
        assert not [f for f in on_cable if "nudge" in f], on_cable  # once, over Wi-Fi only
        assert soul.attempts == 1
        port.close()
    finally:
        simulator.stop()
        await runner.cleanup()


async def test_serial_mode_sends_the_nudge_up_the_cable_when_nudge_url_fails():
    """The soul is unreachable over Wi-Fi: the nudge still leaves the robot, up the cable, for the bridge."""
    simulator = serial_sim(f"http://127.0.0.1:{unused_port()}/nudge")  # nothing listens there
    try:
        port = serial.Serial(simulator.serial_path, timeout=0.2)
        simulator.face_file.touch()
        seen = await asyncio.to_thread(cable_frames, port, 15, lambda frame: "nudge" in frame)
        assert seen and seen[-1] == {"nudge": "someone's face appeared in front of me"}, seen
        port.close()
    finally:
        simulator.stop()


def test_a_late_reader_still_hears_ready():
    """tools/flash reopens the port after a reset; the robot's first `ready` may already have gone by."""
    from body import READY_REPEAT_MS
    from host.flash.ready import wait_for_ready

    simulator = Simulator(unused_port(), serial=True).start()
    try:
        port = serial.Serial(simulator.serial_path, timeout=0.2)
        first = cable_frames(port, 20, lambda frame: "ready" in frame)
        assert first and "ready" in first[-1], "no ready frame at boot"
        port.close()
        # Opening the port again discards whatever was not read (pyserial flushes on open), as a USB reconnect does.
        started = time.monotonic()
        info = wait_for_ready(simulator.serial_path, timeout_s=READY_REPEAT_MS / 1000 + 3)
        assert info == {"ip": "127.0.0.1", "wifi": "connected", "version": "0.1.0", "hal": "fake"}
        assert time.monotonic() - started < READY_REPEAT_MS / 1000 + 1
    finally:
        simulator.stop()
