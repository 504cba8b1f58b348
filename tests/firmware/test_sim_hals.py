"""The robot's own HALs (hal/uiflow.py, hal/generic.py, hal/esp32.py) under real MicroPython.

The firmware runs unchanged with `soulstack body sim --hal uiflow|generic`:
the HAL talks to the documented-API doubles in host/sim/doubles, which check
every argument as the vendors' bindings do and journal every call. These
tests read that journal and talk HTTP to the body, as a soul would.
`tools/bench-hal-coverage` runs this file with line marking and prints how
much of firmware/hal it executes.
"""

import asyncio
import math
import signal
import struct
import subprocess
import time
from pathlib import Path

import aiohttp
import pytest
from aiohttp import web

from soulstack.audio import mono_wav
from soulstack.protocol import check
from soulstack.sim.runner import Simulator
from tests.helpers import free_port
from tests.fakes.nudge_receiver import NudgeReceiver
from tests.helpers import poll

SCS_WRITE = 0x03
SCS_TORQUE_ENABLE, SCS_GOAL_POSITION = 0x28, 0x2A  # the SCS0009 control table's addresses


@pytest.fixture
def hal_sim():
    started = []

    def start(hal="uiflow", **options):
        options.setdefault("servo", {"kind": "scs0009"} if hal == "uiflow" else None)
        port = free_port()
        simulator = Simulator(port, hal=hal, **options).start()
        started.append(simulator)
        return simulator, f"http://127.0.0.1:{port}"

    yield start
    for simulator in started:
        simulator.stop()


async def until(predicate, seconds=10, every=0.1):
    """Wait until `predicate()` (sync or async) is true; its last value (tests/helpers.py's `poll`)."""
    return await poll(predicate, seconds, every)


async def post(url, endpoint, payload, token=None):
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with aiohttp.ClientSession() as session:
        async with session.post(f"{url}/{endpoint}", json=payload, headers=headers) as response:
            return response.status, await response.json()


async def online(url, token=None):
    try:
        return (await post(url, "status", {}, token))[1].get("online")
    except aiohttp.ClientError:
        return None


def alive(simulator):
    return simulator.process.poll() is None


# --- boot, every endpoint, the face ---------------------------------------------------------


async def test_uiflow_boots_online_and_passes_body_check(hal_sim):
    simulator, url = hal_sim("uiflow", token="s3cret")
    assert await until(lambda: online(url, "s3cret"), 15), simulator.calls()[-5:]
    results = await check.run_checks(url, token="s3cret")
    failed = [r.line() for r in results if not r.passed]
    assert results and not failed, failed
    uiflow = [entry["call"] for entry in simulator.calls() if not entry["call"].startswith(("UART", "WLAN", "WDT"))]
    assert uiflow[0] == "M5.begin"  # UIFlow2's drivers need M5.begin() before anything else
    canvas = simulator.calls("Display.newCanvas")[0]
    assert (canvas["w"], canvas["h"], canvas["bpp"], canvas["psram"]) == (320, 240, 16, True)
    init = simulator.calls("camera.init")[0]
    assert (init["pixformat"], init["framesize"]) == (2, 9)  # camera.RGB565, camera.QVGA
    assert simulator.calls("jpg.encode")[0]["quality"] == 70
    assert simulator.calls("Speaker.setVolume") == [{"call": "Speaker.setVolume", "vol": 60 * 255 // 100}]
    assert alive(simulator)


async def test_uiflow_draws_face_frames_and_the_speech_balloon(hal_sim):
    simulator, url = hal_sim("uiflow")
    await until(lambda: online(url), 15)
    for emotion in ("sad", "sleepy", "doubtful", "angry", "happy"):  # each face draws its own brows and lids
        assert await post(url, "express", {"emotion": emotion}) == (200, {})
        await asyncio.sleep(0.3)
    assert await post(url, "speak", {"text": "hello there"}) == (200, {})
    assert await until(lambda: simulator.calls("Canvas.drawString"), 5)
    frames = await until(lambda: len(simulator.calls("Canvas.push")) >= 10, 5)
    assert frames, "fewer than 10 frames pushed to the screen"
    names = [entry["call"] for entry in simulator.calls() if entry["call"].startswith("Canvas.")]
    # Each frame: cleared, two eyes, a mouth, then pushed whole to the screen at (0, 0).
    first = names.index("Canvas.fillScreen")
    frame = names[first : names.index("Canvas.push", first) + 1]
    assert frame.count("Canvas.fillCircle") + frame.count("Canvas.fillRect") >= 3
    assert all(push["x"] == 0 and push["y"] == 0 for push in simulator.calls("Canvas.push"))
    said = [entry["text"] for entry in simulator.calls("Canvas.drawString")]
    assert "hello there" in said
    colours = simulator.calls("Canvas.setTextColor")
    assert colours and colours[0]["fgcolor"] == 0x000000 and colours[0]["bgcolor"] == 0xFFFFFF
    for entry in simulator.calls():
        if entry["call"] in ("Canvas.fillRect", "Canvas.fillRoundRect"):
            assert 0 <= entry["x"] < 320 and 0 <= entry["y"] < 240 and entry["w"] > 0 and entry["h"] > 0, entry


@pytest.mark.parametrize("hal", ["generic", "uiflow"])
async def test_flash_s_last_check_passes_what_each_build_has_and_says_what_a_generic_one_lacks(hal_sim, hal):
    """tools/flash's step 9 against the robot's own HAL: a generic build's honest 503 on /speak is not
    a failed flash (it is what that firmware can do), and the person is told what it lacks."""
    from argparse import Namespace
    from io import StringIO

    from soulstack.flash import plan

    simulator, url = hal_sim(hal, tts_url="http://127.0.0.1:9/tts")
    assert await asyncio.to_thread(simulator.wait_until_serving)
    run = plan.Flash(Namespace(), {"port": int(url.rsplit(":", 1)[1]), "token": None}, out=StringIO())
    run.ip, run.hal = "127.0.0.1", hal
    await asyncio.to_thread(plan.check_step().act, run)
    said = run.out.getvalue()
    assert "keeps Body Protocol v1" in said and "FAIL" not in said, said
    assert ("PASS  speak" in said) == (hal == "uiflow") and ("has no screen, camera or speaker" in said) == (
        hal == "generic"
    )


async def test_generic_build_is_honest_and_passes_body_check(hal_sim):
    simulator, url = hal_sim("generic", tts_url="http://127.0.0.1:9/tts")
    assert await asyncio.to_thread(simulator.wait_until_serving)
    # Neither screen nor speaker on this build: /speak refuses, in words, rather than pretend.
    results = await check.run_checks(url, endpoints=("status", "look", "express"))
    failed = [r.line() for r in results if not r.passed]
    assert results and not failed, failed
    assert await post(url, "speak", {"text": "hi"}) == (
        503,
        {"message": "cannot speak: no screen driver: not available on this firmware build"},
    )
    assert await post(url, "status", {}) == (200, {"online": False})  # no screen driver on this build
    status, answer = await post(url, "look", {"question": "who is there?"})
    assert status == 200 and answer["text"].startswith("this body has no camera (no camera: ")
    assert not simulator.calls("camera.init") and not simulator.calls("M5.begin")
    assert simulator.calls("WDT")[0]["timeout"] == 10000


# --- Wi-Fi ------------------------------------------------------------------------------------


async def test_wifi_goes_down_and_comes_back(hal_sim):
    simulator, url = hal_sim("uiflow")
    assert await until(lambda: online(url), 15)
    joins = len(simulator.calls("WLAN.connect"))
    simulator.set_world("wifi", "down")
    assert await until(lambda: _offline(url), 6), "still online with Wi-Fi down"
    assert await until(lambda: len(simulator.calls("WLAN.connect")) > joins, 5)  # it tries to rejoin
    simulator.set_world("wifi", "up")
    assert await until(lambda: online(url), 15), "not back online once Wi-Fi returned"
    assert alive(simulator)


async def _offline(url):
    return await online(url) is False


WIFI_FAILURES = {
    "wrong_password": "wrong Wi-Fi password (check wifi.password)",
    "handshake_timeout": "Wi-Fi handshake timed out (most often a wrong wifi.password)",
    "no_ap": "Wi-Fi network not found (check wifi.ssid)",
}


async def test_wifi_failure_is_said_in_words(hal_sim):
    """Each failure on its own simulator, all at once: the firmware waits out its 10 s join on each."""
    started = {}
    for failure in WIFI_FAILURES:
        lines = []
        simulator, _url = hal_sim("generic", world={"wifi": failure, "wdt": "fail"}, show=lines.append)
        simulator.release()
        started[failure] = simulator, lines

    async def said_ready(lines):
        return await until(lambda: any(line.startswith("ready:") for line in lines), 15)

    came = await asyncio.gather(*(said_ready(lines) for _, lines in started.values()))
    for (failure, said), (simulator, lines), ready_came in zip(
        WIFI_FAILURES.items(), started.values(), came, strict=True
    ):
        assert ready_came, (failure, lines)
        ready = [line for line in lines if line.startswith("ready:")]
        assert ready[0] == f"ready: ip=- wifi={said}", failure
        connect = simulator.calls("WLAN.connect")[0]
        assert connect["ssid"] == "(simulated)" and connect["key"] == "***"  # the journal never holds the password
        assert alive(simulator), failure  # a watchdog that would not start is no reason to stop


# --- speech -----------------------------------------------------------------------------------


def a_wav(seconds=0.4, rate=16000):
    samples = b"".join(struct.pack("<h", int(8000 * math.sin(i / 8))) for i in range(int(seconds * rate)))
    return mono_wav(samples, rate), samples


async def tts_server(aiohttp_server, wav, asked):
    """A `soulstack tts` stand-in on loopback answering every request with `wav`; its URL."""

    async def tts(request):
        asked.append(await request.json())
        return web.Response(body=wav, content_type="audio/wav")

    app = web.Application()
    app.router.add_post("/tts", tts)
    return str((await aiohttp_server(app)).make_url("/tts"))


async def test_speech_is_played_as_pcm(hal_sim, aiohttp_server):
    wav, pcm = a_wav()
    asked = []
    simulator, url = hal_sim("uiflow", tts_url=await tts_server(aiohttp_server, wav, asked))
    await until(lambda: online(url), 15)
    assert await post(url, "speak", {"text": "hello"}) == (200, {})
    played = simulator.world / "speaker.pcm"
    assert await until(lambda: played.exists() and played.stat().st_size >= len(pcm), 10)
    assert played.read_bytes() == pcm  # every sample, in order, nothing of the WAV header
    assert asked == [{"text": "hello"}]
    calls = simulator.calls("Speaker.playRaw")
    assert {(c["sample_rate"], c["stereo"], c["repeat"], c["channel"], c["stop_current_sound"]) for c in calls} == {
        (16000, False, 1, 0, False)
    }
    assert max(c["wav_data"] for c in calls) <= 2048


async def test_a_text_the_voice_has_no_sound_for_is_shown_and_mimed_not_an_error(hal_sim, aiohttp_server):
    """The real `soulstack tts` (Piper's joe) answers 400 "nothing to speak" for "...": the robot shows
    the balloon and moves its mouth, as with no voice at all, and says no error on its screen."""
    from soulstack.tts.server import make_tts_app
    from tests.tts.helpers import joe_voices

    tts = await aiohttp_server(make_tts_app(voices=joe_voices()))
    simulator, url = hal_sim("uiflow", tts_url=str(tts.make_url("/tts")))
    await until(lambda: online(url), 15)
    assert await post(url, "speak", {"text": "..."}) == (200, {})
    assert await post(url, "speak", {"text": "Hello."}) == (200, {})  # after it, in turn: played once it is done
    assert await until(lambda: simulator.calls("Speaker.playRaw"), 20)
    balloons = [c["text"] for c in simulator.calls("Canvas.drawString")]
    assert "..." in balloons and "Hello." in balloons
    errors = [c["text"] for c in simulator.calls("Canvas.drawString") if c["x"] == 4 and c["y"] == 2]
    assert errors == [], errors


# --- servos -----------------------------------------------------------------------------------


def scs_packets(simulator):
    return [bytes.fromhex(entry["hex"]) for entry in simulator.calls("UART.write")]


def check_scs_packet(packet):
    """One SCS0009 instruction packet: FF FF id length instruction params... checksum (SCS protocol manual)."""
    assert packet[:2] == b"\xff\xff", packet.hex()
    servo_id, length = packet[2], packet[3]
    assert length == len(packet) - 4, packet.hex()  # instruction + parameters + checksum
    assert packet[-1] == (~sum(packet[2:-1])) & 0xFF, f"bad checksum in {packet.hex()}"
    return servo_id, packet[4], packet[5:-1]


async def test_scs0009_frames_on_the_uart(hal_sim):
    # servo.idle_off_ms (config.json; 3000 by default) at 1 s: torque goes off 2 s sooner once the head is still.
    simulator, url = hal_sim("uiflow", servo={"kind": "scs0009", "idle_off_ms": 1000})
    await until(lambda: online(url), 15)
    uart = simulator.calls("UART")[0]
    assert (uart["id"], uart["baudrate"], uart["tx"], uart["rx"]) == (1, 1000000, 6, 7)
    for emotion in ("happy", "angry", "doubtful"):
        assert await post(url, "express", {"emotion": emotion}) == (200, {})
        await asyncio.sleep(0.6)
    assert await until(
        lambda: any(p[4] == SCS_WRITE and p[5] == SCS_TORQUE_ENABLE and p[6] == 0 for p in scs_packets(simulator)), 6
    ), "torque never went off when idle"
    positions = {1: [], 2: []}
    for packet in scs_packets(simulator):
        servo_id, instruction, params = check_scs_packet(packet)
        assert servo_id in (1, 2) and instruction == SCS_WRITE
        if params[0] == SCS_GOAL_POSITION:
            position, goal_time, speed = struct.unpack(">HHH", params[1:])  # big-endian registers
            positions[servo_id].append(position)
            assert 0 <= position <= 1023 and goal_time == 0 and speed == 0
        else:
            assert params[0] == SCS_TORQUE_ENABLE and params[1:] in (b"\x00", b"\x01")
    assert len(set(positions[1])) > 1 and len(set(positions[2])) > 1, positions  # both axes moved
    # Pitch 0..90 degrees from centre 512, 1024 steps per 300 degrees.
    assert all(512 <= p <= 512 + 90 * 1024 // 300 + 1 for p in positions[2]), positions[2]


async def test_sg90_duty_cycles_in_range(hal_sim):
    servo = {"kind": "sg90", "pan_pin": 5, "tilt_pin": 6, "idle_off_ms": 1000}  # let go 2 s sooner than by default
    simulator, url = hal_sim("generic", servo=servo)
    assert await asyncio.to_thread(simulator.wait_until_serving)  # not only joining Wi-Fi: a loaded machine is slower
    for emotion in ("happy", "sad"):
        assert await post(url, "express", {"emotion": emotion}) == (200, {})
        await asyncio.sleep(0.6)
    assert {(p["pin"], p["freq"]) for p in simulator.calls("PWM")} == {(5, 50), (6, 50)}
    assert await until(lambda: any(d["ns"] == 0 for d in simulator.calls("PWM.duty_ns")), 6), "never let go when idle"
    duties = simulator.calls("PWM.duty_ns")
    moving = [d for d in duties if d["ns"]]
    assert moving and all(500000 <= d["ns"] <= 2500000 for d in duties if d["ns"]), duties
    # Pan stays within 10..170 degrees and tilt within 65..100: 0.5 ms + degrees * 2 ms / 180.
    assert all(611111 <= d["ns"] <= 2388889 for d in moving if d["pin"] == 5)
    assert all(1222222 <= d["ns"] <= 1611112 for d in moving if d["pin"] == 6)


# --- senses and nudges ------------------------------------------------------------------------


async def online_with_a_soul(hal_sim, aiohttp_server, receiver, **options):
    """A uiflow body, online, nudging `receiver` (a NudgeReceiver served on loopback)."""
    server = await aiohttp_server(receiver.app())
    simulator, url = hal_sim("uiflow", nudge_url=str(server.make_url("/nudge")), **options)
    await until(lambda: online(url), 15)
    return simulator, url


async def test_a_face_in_view_is_one_debounced_nudge(hal_sim, aiohttp_server):
    receiver = NudgeReceiver()
    # face_detect_hz at config.json's highest (10; 3 by default): as many detections in less time.
    simulator, url = await online_with_a_soul(hal_sim, aiohttp_server, receiver, config={"face_detect_hz": 10})
    simulator.set_world("face", "present")
    assert await receiver.wait_for(1) == ["someone's face appeared in front of me"]
    await asyncio.sleep(1.0)  # still in view: seen again and again (about ten more times), said once
    assert len(receiver.reasons) == 1
    assert len([c for c in simulator.calls("ObjectDetector.infer") if c["found"]]) >= 5


async def test_touch_button_and_pickup_nudge(hal_sim, aiohttp_server):
    receiver = NudgeReceiver()
    simulator, url = await online_with_a_soul(hal_sim, aiohttp_server, receiver)
    simulator.set_world("touch", "present")
    await receiver.wait_for(1)
    simulator.set_world("touch", None)
    simulator.set_world("button", "present")
    await receiver.wait_for(2)
    simulator.set_world("accel", "0.1 0.2 2.0")
    reasons = await receiver.wait_for(3)
    assert reasons == ["someone touched my face", "someone pressed my button", "someone picked me up"]


async def test_a_camera_that_fails_to_start_is_honest(hal_sim):
    simulator, url = hal_sim("uiflow", world={"camera": "fail"})
    await until(lambda: simulator.calls("WLAN.connect"), 10)
    await asyncio.sleep(0.5)
    assert await post(url, "status", {}) == (200, {"online": False})
    status, answer = await post(url, "look", {"question": "who is there?"})
    assert status == 200
    assert answer == {
        "text": "camera not ready: the camera failed to start: OSError camera init failed "
        "(the GC0308 did not answer on I2C)"
    }
    assert not simulator.calls("camera.snapshot") and not simulator.calls("dl.ObjectDetector")
    assert await post(url, "speak", {"text": "still here"}) == (200, {})  # the rest of the body works
    assert alive(simulator)


async def test_an_older_build_and_missing_parts(hal_sim, aiohttp_server):
    """capture_to_jpg instead of jpg, no dl, no PSRAM canvas, a speaker that will not start."""
    world = {"camera": "old", "dl": "missing", "canvas": "fail", "speaker": "fail"}
    simulator, url = hal_sim("uiflow", world=world, tts_url=await tts_server(aiohttp_server, a_wav(0.1)[0], []))
    await until(lambda: simulator.calls("WLAN.connect"), 10)
    status, answer = await post(url, "look", {"question": "anyone?"})
    assert status == 200 and answer["mimeType"] == "image/jpeg"
    assert simulator.calls("camera.capture_to_jpg")[-1]["quality"] == 70
    assert not simulator.calls("dl.ObjectDetector")
    assert await post(url, "status", {}) == (200, {"online": False})  # tts_url set, speaker down: not all senses work
    assert await post(url, "speak", {"text": "a mime"}) == (200, {})
    # No canvas: drawn straight onto the screen, never pushed; the balloon still shows.
    assert await until(lambda: [c for c in simulator.calls("Display.drawString") if c["text"] == "a mime"], 5)
    assert not simulator.calls("Canvas.push") and not simulator.calls("Speaker.playRaw")
    assert alive(simulator)


async def test_an_error_is_shown_on_the_screen(hal_sim, aiohttp_server):
    """A nudge that cannot be delivered is an error on screen (red, top-left) as well as in the log."""
    receiver = NudgeReceiver(fail_first=5)
    simulator, url = await online_with_a_soul(hal_sim, aiohttp_server, receiver)
    simulator.set_world("button", "present")
    shown = await until(lambda: [c for c in simulator.calls("Canvas.drawString") if c["x"] == 4 and c["y"] == 2], 8)
    assert shown and shown[0]["text"].startswith("nudge: HttpError")
    assert {"call": "Canvas.setTextColor", "fgcolor": 0xFF3030, "bgcolor": 0} in simulator.calls("Canvas.setTextColor")


async def test_a_board_without_screen_or_encoder_and_with_broken_sensors(hal_sim):
    """UIFlow2 without a screen, a camera without a JPEG encoder, sensors whose reads fail: it keeps serving."""
    world = {"display": "missing", "camera": "no_encoder", "accel": "broken", "touch": "broken", "button": "broken"}
    simulator, url = hal_sim("uiflow", world=world)
    assert await asyncio.to_thread(simulator.wait_until_serving)
    await asyncio.sleep(1)  # the animation loop polls the broken sensors many times over
    status, answer = await post(url, "look", {"question": "?"})
    assert answer == {
        "text": "camera not ready: the camera failed to start: OSError no JPEG encoder "
        "(neither jpg.encode nor camera.capture_to_jpg)"
    }
    assert await post(url, "status", {}) == (200, {"online": False})
    status, answer = await post(url, "speak", {"text": "hi"})
    assert status == 503 and answer["message"].startswith("cannot speak: the screen failed to start: AttributeError")
    assert not [c for c in simulator.calls() if c["call"].startswith(("Canvas.", "Display."))]
    assert alive(simulator)


async def test_a_build_without_cjk_fonts_still_draws(hal_sim):
    simulator, url = hal_sim("uiflow", world={"efont": "missing"})
    await until(lambda: online(url), 15)
    assert not simulator.calls("Canvas.setFont")  # the default font draws ASCII
    assert await post(url, "speak", {"text": "plain ascii"}) == (200, {})
    assert await until(lambda: [c for c in simulator.calls("Canvas.drawString") if c["text"] == "plain ascii"], 5)


# --- the command line -------------------------------------------------------------------------


def test_body_sim_hal_uiflow_from_the_command_line(soulstack_cmd):
    process = subprocess.Popen(
        [*soulstack_cmd, "body", "sim", "--port", "0", "--hal", "uiflow"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        body = process.stdout.readline()
        assert body.startswith("body: http://127.0.0.1:") and "hal/uiflow.py on documented-API doubles" in body
        assert process.stdout.readline().startswith("face: create ")
        doubles = process.stdout.readline()
        journal = Path(doubles.split("written to ")[1].split(";")[0])
        assert doubles.startswith("doubles: ") and journal.name == "journal"
        deadline = time.monotonic() + 10
        while not (journal.exists() and "Canvas.push" in journal.read_text()) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert "Canvas.push" in journal.read_text()  # the real HAL is drawing on the doubled screen
    finally:
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=10) == 0


def test_the_doubles_need_micropython(soulstack_cmd):
    result = subprocess.run(
        [*soulstack_cmd, "body", "sim", "--port", "0", "--hal", "generic", "--python"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        "soulstack body: --hal generic runs under MicroPython only (its doubles use MicroPython's time.ticks_ms); "
        "drop --python"
    ]
