"""`soulstack body sim`: the real firmware under real MicroPython, checked over real HTTP and a pty."""

import asyncio
import re
import base64
import json
import os
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import aiohttp
import pytest
import serial
from aiohttp import web

from soulstack.protocol import check
from soulstack.sim.runner import Simulator
from tests.helpers import free_port
from tests.fakes.nudge_receiver import NudgeReceiver
from tests.helpers import ROOT

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
        port = free_port()
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


async def look_once(session, url):
    async with session.post(url + "/look", json={"question": "who is there?"}) as response:
        return response.status, await response.text()


def plain_post(url, payload, timeout=10):
    """(status, text) of one POST made the simplest way (urllib: few headers, like a curl user)."""
    request = urllib.request.Request(
        url, data=json.dumps(payload).encode(), headers={"Content-Type": "application/json"}
    )
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as failure:
        return failure.code, failure.read().decode()


def look_after(url, started, delay):
    """Wait until the body serves, then one /look `delay` seconds after `started`."""
    deadline = time.monotonic() + 20
    while True:
        try:
            plain_post(url + "/status", {}, timeout=2)
            break
        except OSError:
            if time.monotonic() > deadline:
                return 0, "never served"
            time.sleep(0.05)
    time.sleep(max(0.0, started + delay - time.monotonic()))
    return plain_post(url + "/look", {"question": "who is there?"})


async def test_a_look_at_any_moment_of_the_first_seconds_under_256k_heap(sim_factory):
    """One /look into a quiet body, at 4.5, 4.55, ... 7.5 s after start (one simulator each, all at once).

    A lone /look into an idle body is where fragmentation bit: the animation's and the
    request's newest objects sat inside the one free run big enough for a frame. Before the
    fix a /look about 6 s after start (around the first `ready` repeat) failed.
    """
    delays = [4.5 + 0.05 * i for i in range(61)]
    sims = []
    for _ in delays:
        sims.append(sim_factory(heap="256K") + (time.monotonic(),))
    results = await asyncio.gather(
        *(
            asyncio.to_thread(look_after, url, started, delay)
            for delay, (_, url, started) in zip(delays, sims, strict=True)
        )
    )
    failed = [
        (round(delay, 2), status, text[:60])
        for delay, (status, text) in zip(delays, results, strict=True)
        if status != 200
    ]
    assert not failed, failed
    assert all(simulator.process.poll() is None for simulator, _, _ in sims), "a firmware died"


async def test_looks_spread_over_the_first_fifteen_seconds_then_thirty_in_a_row(sim_factory):
    simulator, url = sim_factory(heap="256K")
    started = time.monotonic()
    await wait_until_serving(url)
    failed = []
    async with aiohttp.ClientSession() as session:
        while time.monotonic() - started < 15:
            status, text = await look_once(session, url)
            if status != 200:
                failed.append((round(time.monotonic() - started, 1), status, text[:120]))
            await asyncio.sleep(0.3)
        for _ in range(30):
            status, text = await look_once(session, url)
            if status != 200:
                failed.append(("in a row", status, text[:120]))
    assert not failed, failed
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
        for _ in range(6):
            async with session.post(
                url + "/speak", json={"text": "a long sentence to keep the mouth busy " * 3}
            ) as response:
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
    nudge_port = free_port()
    await web.TCPSite(runner, "127.0.0.1", nudge_port).start()
    try:
        # face_detect_hz at its highest (config.json allows 1-10; 3 by default): the default debounce's
        # frames (3 to appear, 10 absent to be gone) pass in 0.3 s and 1 s instead of 1 s and 3.3 s.
        simulator, url = sim_factory(nudge_url=f"http://127.0.0.1:{nudge_port}/nudge", config={"face_detect_hz": 10})
        await wait_until_serving(url)
        simulator.face_file.touch()
        deadline = time.monotonic() + 10
        while not reasons and time.monotonic() < deadline:
            await asyncio.sleep(0.1)
        assert reasons == ["someone's face appeared in front of me"]
        # The face leaves (twice the ten frames) and comes back: inside the 10-minute window, no second wake.
        simulator.face_file.unlink()
        await asyncio.sleep(2)
        simulator.face_file.touch()
        await asyncio.sleep(1.5)
        assert len(reasons) == 1
    finally:
        await runner.cleanup()


async def test_speak_fetches_speech_from_tts(sim_factory):
    from soulstack.tts.server import make_tts_app

    asked = []

    @web.middleware
    async def record(request, handler):
        asked.append(await request.json())
        response = await handler(request)
        asked.append(response.status)
        return response

    app = make_tts_app()
    app.middlewares.append(record)
    runner = web.AppRunner(app)
    await runner.setup()
    tts_port = free_port()
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
    process = subprocess.Popen(
        [sys.executable, "-m", "soulstack.cli", "body", "sim", "--port", "0", "--serial"],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        first = process.stdout.readline().strip()
        assert first.startswith("serial: /dev/")
        port = serial.Serial(first[len("serial: ") :], timeout=10)
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
        # The terminal shows the screen in words; frames and the firmware's log stay on the pty.
        out = Lines(process.stdout)
        out.wait_for("face: doubtful")
        assert out.seen[0].startswith("body: http://127.0.0.1:") and out.seen[3] == "face: neutral", out.seen
        assert out.seen[2].startswith("touch: create "), out.seen  # where to tap (tests/firmware/test_sim_rooms.py)
        assert not [line for line in out.seen if "@ss1" in line or "[soulstack]" in line], out.seen
    finally:
        process.terminate()
        assert process.wait(timeout=10) == 0


# --- serial mode on a robot that also has Wi-Fi -------------------------------------


def serial_sim(nudge_url=None, nudge_token=None):
    """A --serial simulator with the nudge settings a flashed Wi-Fi robot has (Simulator has no nudge_token flag)."""
    simulator = Simulator(free_port(), serial=True, nudge_url=nudge_url)
    config = json.loads(simulator.config_path.read_text())
    config["nudge_token"] = nudge_token
    config["face_detect_hz"] = 10  # config.json's highest (3 by default): the face that nudges is found sooner
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
    soul = NudgeReceiver(token="nudge-t0k")
    runner = web.AppRunner(soul.app())
    await runner.setup()
    soul_port = free_port()
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
    simulator = serial_sim(f"http://127.0.0.1:{free_port()}/nudge")  # nothing listens there
    try:
        port = serial.Serial(simulator.serial_path, timeout=0.2)
        simulator.face_file.touch()
        seen = await asyncio.to_thread(cable_frames, port, 15, lambda frame: "nudge" in frame)
        assert seen and seen[-1]["nudge"] == "someone's face appeared in front of me", seen
        assert re.fullmatch(r"r[0-9a-f]{8}-\d+", seen[-1]["nudge_id"]), seen  # the id the POST had: counted once
        port.close()
    finally:
        simulator.stop()


def test_a_late_reader_still_hears_ready():
    """tools/flash reopens the port after a reset; the robot's first `ready` may already have gone by."""
    from body import READY_REPEAT_MS
    from soulstack.flash.ready import wait_for_ready

    simulator = Simulator(free_port(), serial=True).start()
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


# --- the person at the terminal: what the robot shows, and user mistakes ---------------


class Lines:
    """The lines a `soulstack body sim` subprocess prints, read by a thread so a test can wait for one."""

    def __init__(self, stream):
        self.seen = []
        self._stream = stream
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()

    def _read(self):
        for line in self._stream:
            self.seen.append(line.rstrip("\n"))

    def done(self, seconds):
        """Wait until the stream has ended (the process has exited): `seen` is then all it printed."""
        self._thread.join(seconds)
        assert not self._thread.is_alive(), "the sim's output never ended"

    def wait_for(self, wanted, seconds=15):
        """The first line equal to `wanted`, or (ending in "*") starting with it."""
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            for line in list(self.seen):
                if line == wanted or (wanted.endswith("*") and line.startswith(wanted[:-1])):
                    return line
            time.sleep(0.05)
        raise AssertionError(f"{wanted!r} never printed; got {self.seen}")


def run_sim(soulstack_cmd, *flags):
    return subprocess.Popen(
        [*soulstack_cmd, "body", "sim", *flags], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


def test_the_terminal_shows_the_robots_screen_and_ready_once(soulstack_cmd):
    soul = NudgeServer()
    process = run_sim(soulstack_cmd, "--port", "0", "--nudge-url", soul.url)
    try:
        out = Lines(process.stdout)
        base = out.wait_for("body: *").split()[1]
        out.wait_for("face: neutral")
        assert plain_post(base + "/express", {"emotion": "delighted"})[0] == 200
        out.wait_for("face: happy")
        assert plain_post(base + "/speak", {"text": "hello"})[0] == 200
        out.wait_for('says: "hello"')
        assert plain_post(base + "/look", {"question": "who is there?"})[0] == 200
        out.wait_for("looking: who is there?")
        face_file = out.wait_for("face: create *").split()[2]
        Path(face_file).touch()
        out.wait_for("nudge -> soul: someone's face appeared in front of me")
        time.sleep(max(0.0, 6.5 - (time.monotonic() - soul.started)))  # past the first `ready` repeat (5 s)
        assert out.seen.count("ready: ip=127.0.0.1 wifi=connected") == 1, out.seen
        assert not [line for line in out.seen if "@ss1" in line], out.seen  # frames are for the USB line
    finally:
        process.terminate()
        assert process.wait(timeout=10) == 0
        soul.stop()


def test_the_nudge_token_from_the_environment_goes_with_each_nudge(soulstack_cmd):
    # A soul set up by `home init` has a nudge token: without one, every face nudge was a 401.
    soul = NudgeServer()
    process = subprocess.Popen(
        [*soulstack_cmd, "body", "sim", "--port", "0", "--nudge-url", soul.url],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "NUDGE_TOKEN": "n0dge"},
    )
    try:
        out = Lines(process.stdout)
        face_file = out.wait_for("face: create *").split()[2]
        Path(face_file).touch()
        out.wait_for("nudge -> soul: someone's face appeared in front of me")
        assert soul.authorizations == ["Bearer n0dge"], soul.authorizations
    finally:
        process.terminate()
        assert process.wait(timeout=10) == 0
        soul.stop()


def test_a_soul_that_is_down_is_one_line_naming_it_not_a_traceback(soulstack_cmd):
    nowhere = f"http://127.0.0.1:{free_port()}/nudge"  # nothing listens there
    process = run_sim(soulstack_cmd, "--port", "0", "--nudge-url", nowhere)
    try:
        out = Lines(process.stdout)
        face_file = out.wait_for("face: create *").split()[2]
        Path(face_file).touch()
        out.wait_for(f"error: nudge: HttpError the soul at {nowhere} is unreachable (*")
    finally:
        process.terminate()
        assert process.wait(timeout=10) == 0
    out.done(10)  # every line it printed, to its end
    assert not [line for line in out.seen if "Traceback" in line], out.seen
    assert "Traceback" not in process.stderr.read()


class NudgeServer:
    """A soul's /nudge on loopback in its own thread, for tests that drive the sim synchronously."""

    def __init__(self):
        import http.server

        self.reasons = []
        self.authorizations = []
        self.started = time.monotonic()
        received, authorizations = self.reasons, self.authorizations

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                authorizations.append(self.headers.get("Authorization"))
                received.append(json.loads(self.rfile.read(int(self.headers["Content-Length"])))["reason"])
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.end_headers()
                self.wfile.write(b"{}")

            def log_message(self, *args):
                pass

        self.server = http.server.HTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}/nudge"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def stop(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.mark.parametrize(
    "flags, says",
    [
        (["--heap", "abc"], "--heap abc is not a size"),
        (["--heap", "1K"], "--heap 1K is too small"),
        (
            ["--heap", "100K"],
            "--heap 100K is too small",
        ),  # passes the quick check; the firmware runs out while starting
        (["--nudge-url", "notaurl"], "--nudge-url must look like http://127.0.0.1:9202/nudge, not 'notaurl'"),
        (["--tts-url", "ftp://x"], "--tts-url must be an http:// URL"),
        (["--port", "70000"], "--port must be from 0 to 65535"),
    ],
    ids=["heap-abc", "heap-1K", "heap-100K", "nudge-url", "tts-url", "port-range"],
)
def test_user_mistakes_are_one_line_and_exit_2(soulstack_cmd, flags, says):
    result = subprocess.run(
        [*soulstack_cmd, "body", "sim", "--port", "0", *flags], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 2, (result.stdout, result.stderr)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and says in lines[0], result.stderr
    assert "Traceback" not in result.stdout + result.stderr
    assert "body: http" not in result.stdout  # it never claimed to serve


def test_a_port_in_use_is_one_line_and_exit_2(soulstack_cmd):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = subprocess.run(
            [*soulstack_cmd, "body", "sim", "--port", str(port)], cwd=ROOT, capture_output=True, text=True, timeout=60
        )
    assert result.returncode == 2, (result.stdout, result.stderr)
    assert (
        result.stderr.strip()
        == f"soulstack body: port {port} on 127.0.0.1 is in use; choose another --port (0 picks a free one)"
    )
    assert "Traceback" not in result.stdout and "serving" not in result.stdout


def test_the_firmware_says_in_one_line_when_its_port_is_taken():
    """If the port is taken after the host's check, main.py logs one line and exits 3 (no traceback, no "serving")."""
    said = []
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        simulator = Simulator(taken.getsockname()[1], show=said.append).start()
        try:
            assert simulator.process.wait(timeout=20) == 3
        finally:
            simulator.stop()
    assert said == [] and not simulator.serving  # held: it never served
    said = simulator.release()
    log = [line for line in said if line.startswith("[soulstack]")]
    assert any("cannot listen on 127.0.0.1:" in line and "EADDRINUSE" in line for line in log), said
    assert not [line for line in said + simulator.last_words if "Traceback" in line or "serving" in line], said


async def test_an_empty_body_is_400_as_on_every_body(sim_factory):
    simulator, url = sim_factory()
    await wait_until_serving(url)
    async with aiohttp.ClientSession() as session:
        for endpoint in ("status", "look", "speak", "express"):
            async with session.post(
                url + "/" + endpoint, data=b"", headers={"Content-Type": "application/json"}
            ) as response:
                assert response.status == 400
                assert "no body" in (await response.json())["message"]


def test_a_heap_the_firmware_cannot_answer_in_is_said_at_start(soulstack_cmd):
    process = run_sim(soulstack_cmd, "--port", "0", "--heap", "180K")
    try:
        first = process.stderr.readline()
    finally:
        process.terminate()
        process.wait(timeout=10)
    assert first.startswith("warning: --heap 180K is under 207K, the smallest heap the firmware answers in"), first
