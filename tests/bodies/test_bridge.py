"""The serial bridge against a fake robot on a real pty: matching, faults, recovery, nudges."""

import asyncio
import os
import sys
import time

import pytest

from soulstack.protocol.check import run_checks
from soulstack.protocol.client import BodyClient, BodyError
from soulstack.protocol.nudge_sender import Debouncer, NudgeSender
from soulstack.protocol.body_app import BodyUnavailable
from soulstack.serving import listening
from soulstack.bridge.serial_link import SerialLink
from tests.helpers import free_port
from tests.bodies.helpers import TOKEN, Bridge, Soul, wait_until
from tests.fakes.serial_device import FakeSerialDevice, default_answer
from tests.helpers import ROOT


@pytest.fixture
def device():
    fake = FakeSerialDevice()
    yield fake
    fake.unplug()


async def test_body_check_passes_through_the_bridge(device):
    async with Bridge(lambda: device.path) as bridge:
        await wait_until(bridge.online)
        results = await run_checks(bridge.url, TOKEN)
    failed = [r.line() for r in results if not r.passed]
    assert not failed, failed
    assert len(results) > 10


async def test_unplugged_goes_offline_within_5_s_and_acting_is_503(device):
    async with Bridge(lambda: device.path) as bridge:
        await wait_until(bridge.online)
        assert await bridge.client.express("happy") == {}
        device.unplug()
        took = await wait_until(bridge.offline, timeout_s=5)
        assert took < 5
        for call in (bridge.client.look("anyone?"), bridge.client.speak("hello"), bridge.client.express("sad")):
            with pytest.raises(BodyError) as caught:
                await call
            assert caught.value.status == 503
            assert "not connected over USB" in caught.value.message


async def test_a_silent_device_goes_offline_within_5_s(device):
    async with Bridge(lambda: device.path) as bridge:
        await wait_until(bridge.online)
        device.silent = True
        started = time.monotonic()
        await wait_until(bridge.offline, timeout_s=5)
        # The probe notices too, so acting refuses at once instead of waiting out a long timeout.
        await wait_until(lambda: asyncio.sleep(0, bridge.link.answering is False), timeout_s=5)
        assert time.monotonic() - started < 5
        with pytest.raises(BodyError) as caught:
            await bridge.client.speak("hello?")
        assert caught.value.status == 503 and "not answering" in caught.value.message
        device.silent = False
        await wait_until(bridge.online)
        assert await bridge.client.speak("I am back") == {}


async def test_another_device_at_the_robots_path_is_not_the_robot(tmp_path):
    # Like /dev/serial/by-id/...: a stable link that now points at a different pty. The
    # new pty may even reuse the first one's number (/dev/pts/N): it is still another device.
    link = tmp_path / "robot"
    first = FakeSerialDevice()
    os.symlink(first.path, link)
    async with Bridge(lambda: str(link), reopen_interval_s=0.05) as bridge:  # ten chances in half a second
        await wait_until(bridge.online)
        first.unplug()
        await wait_until(bridge.offline)
        stranger = FakeSerialDevice(boot_noise=False)
        try:
            os.unlink(link)
            os.symlink(stranger.path, link)
            await asyncio.sleep(10 * bridge.link.reopen_interval_s)  # many chances to reopen it
            status = await bridge.client.status()
            assert status["online"] is False and "another device" in status["reason"]
            with pytest.raises(BodyError) as caught:
                await bridge.client.look("who is this?")
            assert caught.value.status == 503 and "another device" in caught.value.message
            assert "not the robot" in caught.value.message
            assert stranger.requests == [] and stranger.noise_received == []  # not one byte written to it
        finally:
            stranger.unplug()


def test_a_usb_port_is_known_by_its_serial_number_a_pty_by_its_node(tmp_path):
    from serial.tools.list_ports_common import ListPortInfo

    from soulstack.serial_ports import identity

    device = FakeSerialDevice(boot_noise=False)
    try:

        def usb(serial_number):
            port = ListPortInfo(device.path, skip_link_detection=True)
            port.vid, port.pid, port.serial_number = 0x303A, 0x1001, serial_number
            return lambda: [port]

        assert identity(device.path, usb("F4:12:FA:00:00:01")) == "USB 303a:1001 serial number F4:12:FA:00:00:01"
        assert identity(device.path, usb("F4:12:FA:00:00:01")) != identity(device.path, usb("F4:12:FA:00:00:02"))
        link = tmp_path / "by-id"
        os.symlink(device.path, link)
        assert identity(str(link), usb("X")) == identity(device.path, usb("X"))  # a link leads to the same port
        node = identity(device.path, lambda: [])
        assert node.startswith(os.path.realpath(device.path)) and "inode" in node
        assert identity(str(link), lambda: []) == node
    finally:
        device.unplug()
    with pytest.raises(OSError):
        identity(str(tmp_path / "nothing here"), lambda: [])


async def test_requests_waiting_on_a_device_that_froze_fail_when_the_probe_notices(device):
    async with Bridge(lambda: device.path) as bridge:
        await wait_until(bridge.online)
        device.silent = True  # the firmware froze: the cable is fine, nothing answers
        started = time.monotonic()
        waiting = [asyncio.create_task(bridge.client.look(f"anyone {i}?")) for i in range(3)]
        for task in waiting:
            with pytest.raises(BodyError) as caught:
                await task
            assert caught.value.status == 503 and "stopped answering" in caught.value.message
        link = bridge.link
        # When the probe gives up (its interval plus its timeout), not after the 55 s request timeout.
        assert time.monotonic() - started < link.probe_interval_s + link.probe_timeout_s + 2
        assert link.request_timeout_s > 50


async def test_100_concurrent_requests_each_get_their_own_reply():
    device = FakeSerialDevice(max_delay_s=0.05)  # replies come back shuffled
    try:
        async with Bridge(lambda: device.path) as bridge:
            await wait_until(bridge.online)
            questions = [f"question number {i}" for i in range(100)]
            answers = await asyncio.gather(*(bridge.client.look(q) for q in questions))
        assert [a["text"] for a in answers] == [f"I see the answer to: {q}" for q in questions]
        ids = [r["id"] for r in device.requests if r["ep"] == "look"]
        assert len(ids) == len(set(ids)) == 100
    finally:
        device.unplug()


async def test_boot_noise_and_repl_output_are_ignored(device):
    async with Bridge(lambda: device.path) as bridge:
        await wait_until(bridge.online)
        device.reboot_noise()  # a reset mid-session: ROM banner, REPL prompt, a half frame, a stale reply
        device.write_raw(b'Traceback (most recent call last):\r\n  File "main.py"\r\n\xff\xfe not utf-8\r\n')
        assert await bridge.client.look("still there?") == {"text": "I see the answer to: still there?"}
        assert await bridge.online()


async def test_a_request_in_flight_fails_at_once_when_unplugged(device):
    async with Bridge(lambda: device.path) as bridge:
        await wait_until(bridge.online)
        device.silent = True
        look = asyncio.create_task(bridge.client.look("slow"))

        async def sent():
            return any(r["ep"] == "look" for r in device.requests)

        await wait_until(sent)
        started = time.monotonic()
        device.unplug()
        with pytest.raises(BodyError) as caught:
            await look
        assert caught.value.status == 503 and "lost before it answered" in caught.value.message
        # At once: not after the 5 s unplug probe, nor the 55 s request timeout (a loaded machine
        # may take a moment to schedule the reader, so the bound leaves room below those).
        assert time.monotonic() - started < 3


async def test_device_errors_reach_the_caller_honestly():
    def answer(endpoint, body):
        if endpoint == "look":
            return 503, {"message": "camera not ready"}
        if endpoint == "speak":
            return 500, {"message": "speaker on fire"}
        if endpoint == "express":
            return 200, {"unexpected": "but fine"}
        return default_answer(endpoint, body)

    device = FakeSerialDevice(answer=answer)
    try:
        async with Bridge(lambda: device.path) as bridge:
            await wait_until(bridge.online)
            with pytest.raises(BodyError) as look:
                await bridge.client.look("?")
            assert (look.value.status, look.value.message) == (503, "camera not ready")
            with pytest.raises(BodyError) as speak:
                await bridge.client.speak("hi")
            assert speak.value.status == 502 and "speaker on fire" in speak.value.message
    finally:
        device.unplug()


async def test_wrong_token_is_refused_before_the_cable(device):
    async with Bridge(lambda: device.path) as bridge:
        await wait_until(bridge.online)
        sent = len(device.requests)
        async with BodyClient.at(bridge.url, token="wrong") as intruder:
            with pytest.raises(BodyError) as caught:
                await intruder.speak("let me in")
        assert caught.value.status == 401
        assert not [r for r in device.requests[sent:] if r["ep"] == "speak"]


async def test_nudges_are_forwarded_debounced(device):
    soul = Soul()
    nudges = NudgeSender(soul.url, debouncer=Debouncer(min_interval_s=0.2))
    async with listening(soul.app(), "127.0.0.1", soul.port), Bridge(lambda: device.path, nudges=nudges) as bridge:
        await wait_until(bridge.online)
        for _ in range(5):
            device.send_nudge("a face appeared in front of me")
        device.send_nudge("someone picked me up")

        async def both_arrived():
            return "someone picked me up" in "; ".join(soul.reasons)

        await wait_until(both_arrived)
    assert "; ".join(soul.reasons).count("a face appeared") == 1


async def test_nudges_are_kept_while_the_soul_is_down(device):
    soul = Soul()
    nudges = NudgeSender(soul.url, debouncer=Debouncer(min_interval_s=0.1), first_backoff_s=0.2, max_backoff_s=0.5)
    async with Bridge(lambda: device.path, nudges=nudges) as bridge:
        await wait_until(bridge.online)
        device.send_nudge("a face appeared")
        device.send_nudge("the room went dark")

        async def kept():
            return len(nudges.waiting) == 2

        await wait_until(kept)
        await asyncio.sleep(0.5)  # at least one failed delivery attempt
        async with listening(soul.app(), "127.0.0.1", soul.port):

            async def delivered():
                return not nudges.waiting and soul.reasons

            await wait_until(delivered)
    joined = "; ".join(soul.reasons)
    assert "a face appeared" in joined and "the room went dark" in joined


async def test_repeated_ready_frames_are_taken_quietly(device, caplog):
    """The firmware repeats `ready` for a minute after boot: the bridge keeps the latest and logs only changes."""
    async with Bridge(lambda: device.path) as bridge:
        await wait_until(bridge.online)
        with caplog.at_level("DEBUG", logger="soulstack.bridge.serial_link"):
            for _ in range(4):
                device.send_ready("192.168.1.23")
            device.send_ready(None, wifi="beacon lost")

            async def changed():
                return (bridge.link.device_info or {}).get("wifi") == "beacon lost"

            await wait_until(changed)
        assert await bridge.client.express("happy") == {}  # requests go on as before
    said = [(r.levelname, r.getMessage()) for r in caplog.records if "ready" in r.getMessage()]
    assert [level for level, _ in said] == ["INFO", "DEBUG", "DEBUG", "DEBUG", "INFO"], said
    assert "beacon lost" in said[-1][1]


# --- the command itself -------------------------------------------------------------

SOULSTACK = [sys.executable, "-c", "import sys; from soulstack.cli import main; sys.exit(main())"]


async def test_the_bridge_command_serves_the_robot(device):
    port = free_port()
    process = await asyncio.create_subprocess_exec(
        *SOULSTACK,
        "bridge",
        "serial",
        "--device",
        device.path,
        "--listen",
        f"127.0.0.1:{port}",
        "--token",
        TOKEN,
        cwd=ROOT,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL,
    )
    try:
        while b"listening on" not in await asyncio.wait_for(process.stdout.readline(), 10):
            pass
        async with BodyClient.at(f"http://127.0.0.1:{port}", token=TOKEN) as client:

            async def online():
                return (await client.status())["online"]

            await wait_until(online)
            assert await client.look("hello?") == {"text": "I see the answer to: hello?"}
    finally:
        process.terminate()
        assert await asyncio.wait_for(process.wait(), 10) == 0  # SIGTERM is a clean stop


@pytest.mark.parametrize(
    "args, says",
    [
        (["--device", "/dev/ttyACM0", "--listen", "nowhere"], "--listen takes HOST:PORT"),
        (["--device", "/dev/ttyACM0", "--nudge-url", "soul:9202"], "--nudge-url must look like http://"),
        (["--device", "/dev/ttyACM0", "--nudge-url", "http://[::1/nudge"], "--nudge-url must look like http://"),
    ],
)
def test_bridge_usage_mistakes_are_one_line(args, says):
    import subprocess

    result = subprocess.run(
        [*SOULSTACK, "bridge", "serial", *args], cwd=ROOT, capture_output=True, text=True, timeout=30
    )
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert says in result.stderr and len(result.stderr.strip().splitlines()) == 1


async def test_auto_with_no_robot_says_what_it_saw():
    from soulstack.bridge.commands import locator

    link = SerialLink(locator("auto"), reopen_interval_s=0.05)
    task = asyncio.create_task(link.run())
    try:
        await wait_until(lambda: asyncio.sleep(0, "saw:" in link.reason))
    finally:
        task.cancel()
    if "no device with USB id 303a:1001" not in link.reason:
        pytest.skip(f"an ESP32-S3 seems to be attached: {link.reason}")
    with pytest.raises(BodyUnavailable) as caught:
        await link.request("speak", {"text": "hi"})
    assert "not connected over USB" in str(caught.value) and "saw:" in str(caught.value)


async def test_a_nudge_with_an_unusable_heard_still_reaches_the_soul(device):
    soul = Soul()
    nudges = NudgeSender(soul.url, debouncer=Debouncer(min_interval_s=0.1))
    async with listening(soul.app(), "127.0.0.1", soul.port), Bridge(lambda: device.path, nudges=nudges) as bridge:
        await wait_until(bridge.online)
        device.send({"nudge": "someone tapped my screen", "heard": {"played": "not a list"}, "speaker": 7})

        async def arrived():
            return "someone tapped my screen" in "; ".join(soul.reasons)

        await wait_until(arrived)
