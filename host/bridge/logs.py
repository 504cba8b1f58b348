"""`soulstack logs [--port P]`: follow the robot's serial log, as `esphome logs` does.

The firmware prints its log lines ("[soulstack] ...") on the USB serial line,
between the bridge's frames. This reads that line and prints everything that
is not a frame; when the robot restarts or is unplugged it waits for it to
come back and carries on, until Ctrl+C.
"""

import sys
import time

from soulstack.errors import UsageError
from soulstack.firmware.core import serial_frames
from soulstack.serial_ports import PortError, open_serial, resolve

RETRY_S = 1.0


def follow(device: str, out=sys.stdout) -> None:
    """Print the robot's log lines from `device` ('auto' or a path) until interrupted."""
    waiting = False
    while True:
        try:
            path = resolve(device, flag="--device")
            port = open_serial(path)
        except PortError as error:
            if error.lasting:  # a path that is no serial port (a typo): waiting would be forever
                raise UsageError(f"{error}; --device takes the robot's USB serial port (or auto)") from None
            if not waiting:
                print(f"(waiting for the robot: {error})", file=out, flush=True)
                waiting = True
            time.sleep(RETRY_S)
            continue
        waiting = False
        print(f"(following {path}; Ctrl+C stops)", file=out, flush=True)
        try:
            _print_lines(port, out)
        except OSError as error:  # unplugged or restarted: the port vanishes under the read
            print(f"(lost {path}: {error})", file=out, flush=True)
        finally:
            try:
                port.close()
            except OSError:
                pass


def _print_lines(port, out) -> None:
    buffer = b""
    while True:
        chunk = port.read(1)  # returns empty after the port timeout; loops so Ctrl+C is noticed
        if not chunk:
            continue
        buffer += chunk + port.read(port.in_waiting)
        *lines, buffer = buffer.split(b"\n")
        for line in lines:
            if serial_frames.decode(line) is None:  # frames are the bridge's business, not the log
                print(line.decode("utf-8", "replace").rstrip("\r"), file=out, flush=True)
