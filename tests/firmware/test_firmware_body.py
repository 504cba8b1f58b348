"""firmware/body.py in-process under CPython, with the fake HAL and a hand-moved clock.

What needs a clock seam or a Wi-Fi outage lives here: the `ready` repeat schedule,
and where a nudge goes when Wi-Fi is down or the soul fails. The same code under
real MicroPython is exercised through `soulstack body sim` in test_sim.py.
"""

import asyncio
import json
import sys

import pytest
from aiohttp import web

from tests.helpers import free_port
from tests.fakes.nudge_receiver import NudgeReceiver
from tests.firmware.helpers import FIRMWARE

if str(FIRMWARE) not in sys.path:
    sys.path.insert(0, str(FIRMWARE))

from body import READY_REPEAT_FOR_MS, READY_REPEAT_MS, Body  # noqa: E402
from core import config as config_mod  # noqa: E402
from core import httpc, serial_frames  # noqa: E402
from core.clock import FakeClock  # noqa: E402
from hal.fake import Hal  # noqa: E402

REASON = "someone's face appeared in front of me"


def make_body(serial=True, **settings):
    config, _ = config_mod.parse(json.dumps({"wifi": {"ssid": "home", "password": ""}, "hal": "fake", **settings}))
    clock = FakeClock(1000)
    lines = []
    body = Body(Hal(config, clock=clock), config, serial_out=lines.append if serial else None)
    return body, clock, lines


@pytest.fixture
async def soul():
    """A soul's /nudge on loopback: (receiver, its URL)."""
    receiver = NudgeReceiver(token="n0k")
    runner = web.AppRunner(receiver.app())
    await runner.setup()
    port = free_port()
    await web.TCPSite(runner, "127.0.0.1", port).start()
    yield receiver, f"http://127.0.0.1:{port}/nudge"
    await runner.cleanup()


# --- the ready frame ---------------------------------------------------------------


def test_ready_repeats_every_few_seconds_for_a_minute_after_a_change_then_stops():
    body, clock, lines = make_body()
    assert not body.ready_again()  # nothing to repeat before Wi-Fi was tried
    body.announce((True, "192.168.1.23", "connected"))
    ready = serial_frames.ready("192.168.1.23", "connected", "fake")
    assert lines == [ready]
    clock.advance(READY_REPEAT_MS)
    assert body.ready_again() and lines[-1] == ready
    clock.advance(READY_REPEAT_FOR_MS - READY_REPEAT_MS - 1)
    assert body.ready_again()
    clock.advance(1)
    assert not body.ready_again() and len(lines) == 3  # a minute on: the cable goes quiet again
    # Wi-Fi drops: the new state is said at once and repeated for another minute.
    body.announce((False, None, "beacon lost"))
    lost = serial_frames.ready(None, "beacon lost", "fake")
    assert lines[-1] == lost
    clock.advance(READY_REPEAT_FOR_MS - 1)
    assert body.ready_again() and lines[-1] == lost


def test_without_serial_mode_ready_is_printed_on_stdout(capsys):
    body, clock, _ = make_body(serial=False)
    body.announce((True, "10.0.0.7", "connected"))
    clock.advance(READY_REPEAT_MS)
    body.ready_again()
    out = capsys.readouterr().out
    assert out == serial_frames.ready("10.0.0.7", "connected", "fake") * 2


# --- where nudges go ------------------------------------------------------------------


async def test_serial_mode_with_wifi_up_posts_the_nudge_with_its_token(soul):
    receiver, url = soul
    body, _, lines = make_body(nudge_url=url, nudge_token="n0k")
    body.wifi = body.hal.wifi_status()  # as keep_wifi records it: connected
    await body.deliver("face", REASON)
    assert receiver.reasons == [REASON] and lines == []


async def test_serial_mode_with_wifi_down_sends_the_nudge_up_the_cable(soul):
    receiver, url = soul
    body, _, lines = make_body(nudge_url=url, nudge_token="n0k")
    body.wifi = (False, None, "beacon lost")  # as keep_wifi records an outage
    await body.deliver("face", REASON)
    assert lines == [serial_frames.nudge(REASON, nudge_id=body.nudger.ids.tag + "-1")] and receiver.attempts == 0


async def test_serial_mode_reports_a_failed_post_and_sends_the_nudge_up_the_cable(soul):
    receiver, url = soul
    body, _, lines = make_body(nudge_url=url, nudge_token="wrong")  # the soul answers 401
    body.wifi = body.hal.wifi_status()
    await body.deliver("face", REASON)
    assert receiver.attempts == 1 and receiver.reasons == []
    assert lines == [serial_frames.nudge(REASON, nudge_id=body.nudger.ids.tag + "-1")]  # the POST's own id
    assert body.errors == 1 and "401" in body.hal.errors[0] and "up the cable" in body.hal.errors[0]


async def test_without_serial_mode_a_failed_post_is_a_failure(soul):
    receiver, url = soul
    body, _, _ = make_body(serial=False, nudge_url=url)  # no token: 401
    body.wifi = body.hal.wifi_status()
    with pytest.raises(httpc.HttpError, match="401"):
        await body.deliver("face", REASON)


async def test_a_soul_that_never_answers_does_not_hold_the_nudge():
    """A /nudge that accepts the connection and then says nothing: after the timeout the nudge goes
    up the cable (serial mode), reported; without a cable it is a failure the sender reports."""

    asked = []

    async def silent(reader, writer):
        asked.append(await reader.read(65536))  # takes the request, answers nothing, keeps the line open
        await asyncio.sleep(30)

    server = await asyncio.start_server(silent, "127.0.0.1", 0)
    url = f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}/nudge"
    try:
        body, _, lines = make_body(nudge_url=url)
        body.nudge_timeout_s = 0.3
        body.wifi = body.hal.wifi_status()
        await asyncio.wait_for(body.deliver("face", REASON), 5)
        # The soul may have kept the POST: the cable's nudge is the same one, under the same id.
        nudge_id = body.nudger.ids.tag + "-1"
        assert lines == [serial_frames.nudge(REASON, nudge_id=nudge_id)] and nudge_id.encode() in asked[0]
        assert "did not answer within 0.3 s" in body.hal.errors[0] and "up the cable" in body.hal.errors[0]
        alone, _, _ = make_body(serial=False, nudge_url=url)
        alone.nudge_timeout_s = 0.3
        alone.wifi = alone.hal.wifi_status()
        with pytest.raises(httpc.HttpError, match="did not answer"):
            await asyncio.wait_for(alone.deliver("face", REASON), 5)
    finally:
        server.close()


async def test_serial_mode_without_nudge_url_uses_the_cable():
    body, _, lines = make_body()
    body.wifi = body.hal.wifi_status()
    await body.deliver("touch", "someone touched my face")
    assert lines == [serial_frames.nudge("someone touched my face", nudge_id=body.nudger.ids.tag + "-1")]


# --- the fake HAL's screen, in words (what `soulstack body sim` prints) -----------------


def test_the_fake_screen_writes_one_line_per_change(tmp_path):
    screen = tmp_path / "screen.txt"
    body, clock, lines = make_body(fake={"screen": str(screen)})
    hal = body.hal

    def frames(ms):  # the animation loop's part that matters here: draw each changed frame
        end = clock.now + ms
        while clock.now < end:
            hal.draw(body.avatar.update(clock.advance(50)))

    frames(200)
    body.express("delighted")
    frames(400)
    body.avatar.say("hello\nthere", clock.now)
    frames(3000)  # blinks, glances and breathing change the frame many times: none of them is a line
    assert body.look("who is there?").data[:2] == b"\xff\xd8"
    frames(2500)
    hal.show_error("face detection: OSError 5")
    assert screen.read_text().splitlines() == [
        "face: neutral",
        "face: happy",
        'says: "hello there"',
        "looking: who is there?",
        "error: face detection: OSError 5",
    ]


async def test_the_fake_screen_notes_where_a_nudge_went(tmp_path):
    screen = tmp_path / "screen.txt"
    body, _, lines = make_body(fake={"screen": str(screen)})
    body.wifi = body.hal.wifi_status()
    await body.deliver("touch", "someone touched my face")
    assert screen.read_text() == "nudge -> cable: someone touched my face\n"


def test_the_fake_camera_hands_out_one_frame_buffer_allocated_at_start():
    body, _, _ = make_body()
    first = body.hal.snapshot_jpeg(70)
    assert first is body.hal.snapshot_jpeg(70)  # like a camera driver's frame buffer: no 15 KB allocation per /look
    assert first[:2] == b"\xff\xd8" and first[-2:] == b"\xff\xd9" and len(first) > 15000
    assert body.hal.snapshots == 2
