"""After a restart: wait for the robot's `ready` frame over serial to learn its address.

The firmware announces `{"ready": {"ip", "wifi", "version", "hal"}}` once Wi-Fi
has been tried and on each Wi-Fi change, then repeats it every 5 s for a
minute, so a port reopened after the first one went by still hears it. The
USB port drops while the chip restarts, so both waits here reopen the port
until their deadline.
"""

import os
import time

from soulstack.firmware.core import serial_frames
from soulstack.serial_ports import PortError, open_serial
from soulstack.flash.tools import FlashError

RETRY_S = 0.3


def wait_for_port(path: str, timeout_s: float, clock=time.monotonic, sleep=time.sleep):
    """Return once `path` exists again; FlashError after `timeout_s`."""
    deadline = clock() + timeout_s
    while not os.path.exists(path):
        if clock() > deadline:
            raise FlashError(
                f"{path} did not come back within {timeout_s:g} s after flashing; unplug the robot, plug it back in and run again without --firmware"
            )
        sleep(RETRY_S)


def _judge(info: dict, want_wifi: bool) -> dict:
    """`info` when it is the answer we wait for; FlashError when the robot reports a failure."""
    wifi = info.get("wifi")
    if wifi == "connected" and info.get("ip"):
        return info
    reason = str(wifi or "no reason given")
    if reason.startswith("config.json"):
        raise FlashError(f"the robot refused its {reason}")
    if not want_wifi:
        return info
    raise FlashError(
        f"Wi-Fi join failed: the robot says {reason!r}; check --ssid and --password, and that the network is 2.4 GHz"
    )


def wait_for_ready(
    locate, timeout_s: float = 60, want_wifi: bool = True, clock=time.monotonic, open_port=open_serial
) -> dict:
    """The robot's `ready` info, read from serial within `timeout_s`.

    `locate` is the port path, or a function returning it (re-found on each
    reopen, for --port auto). Raises FlashError when Wi-Fi failed (with the
    robot's reason) or nothing came.
    """
    find = locate if callable(locate) else (lambda: locate)
    deadline = clock() + timeout_s
    last_problem = "it printed no ready frame"
    while clock() < deadline:
        try:
            port = open_port(find(), timeout_s=0.2)
        except PortError as error:
            last_problem = str(error)
            time.sleep(RETRY_S)
            continue
        try:
            buffer = b""
            while clock() < deadline:
                buffer += port.read(max(1, port.in_waiting))
                *lines, buffer = buffer.split(b"\n")
                for line in lines:
                    frame = serial_frames.decode(line)
                    if frame and isinstance(frame.get("ready"), dict):
                        return _judge(frame["ready"], want_wifi)
        except FlashError:
            raise
        except Exception as error:  # pyserial's errors when the port drops during the restart: reopen
            last_problem = f"the port dropped ({error})"
            time.sleep(RETRY_S)
        finally:
            port.close()
    where = find() if not callable(locate) else "the robot's port"
    raise FlashError(
        f"the robot did not report in over serial within {timeout_s:g} s ({last_problem}); "
        f"see what it prints with: mpremote connect {where} repl — or allow longer with --wait"
    )
