"""`soulstack logs`: follows the robot's serial log over a pty standing in for the USB cable."""

import subprocess
import sys
import time

from tests.fakes.serial_device import FakeSerialDevice
from tests.helpers import read_until


def test_logs_prints_the_robot_lines_not_frames():
    device = FakeSerialDevice(boot_noise=False)
    process = subprocess.Popen(
        [sys.executable, "-m", "soulstack.cli", "logs", "--port", device.path],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        read_until(process, f"(following {device.path}")
        device.send_ready("192.168.1.23")  # a frame: the bridge's business
        device.write_raw(b"[soulstack] wifi: joined home as 192.168.1.23\r\n")
        device.send_nudge("a face appeared")
        device.write_raw(b"[soulstack] face: happy\n")
        seen = read_until(process, "face: happy")
        assert "[soulstack] wifi: joined home as 192.168.1.23\n" in seen
        assert not any("@ss1" in line for line in seen)
        assert process.poll() is None  # still following
    finally:
        device.unplug()
        process.terminate()
        process.wait(10)


def test_logs_without_a_robot_names_the_port_option():
    process = subprocess.Popen(
        [sys.executable, "-m", "soulstack.cli", "logs", "--port", "/nonexistent/ttyACM7"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        seen = read_until(process, "(waiting for the robot:")
        assert "/nonexistent/ttyACM7 does not exist" in seen[-1]
        time.sleep(2.5)  # it keeps waiting for the robot rather than giving up
        assert process.poll() is None
    finally:
        process.terminate()
        process.wait(10)


def test_logs_waits_through_an_unplug_and_follows_the_robot_again_when_it_is_back(tmp_path):
    import os

    first = FakeSerialDevice(boot_noise=False)
    port = tmp_path / "ttyACM0"  # the robot's stable name, as udev's by-id links give it
    os.symlink(first.path, port)
    process = subprocess.Popen(
        [sys.executable, "-m", "soulstack.cli", "logs", "--port", str(port)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    second = None
    try:
        read_until(process, f"(following {port}")
        first.write_raw(b"[soulstack] before the cable came out\n")
        read_until(process, "before the cable came out")
        first.unplug()
        os.remove(port)
        seen = read_until(process, "(waiting for the robot:")
        assert any(line.startswith(f"(lost {port}") for line in seen)  # said once, then it waits
        second = FakeSerialDevice(boot_noise=False)
        os.symlink(second.path, port)
        read_until(process, f"(following {port}")
        second.write_raw(b"[soulstack] booted again\n")
        read_until(process, "booted again")
        assert process.poll() is None
    finally:
        for device in (first, second):
            if device is not None:
                device.unplug()
        process.terminate()
        process.wait(10)
