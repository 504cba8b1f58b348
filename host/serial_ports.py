"""Finding and opening the robot's USB serial port, with errors a person can act on.

Shared by the bridge (`--device auto`) and `soulstack flash` (`--port auto`).
"""

import errno
import os
import stat

import serial
from serial.tools import list_ports

# The ESP32-S3's built-in USB serial/JTAG unit.
ESP32S3_VID = 0x303A
ESP32S3_PID = 0x1001
USB_ID = "303a:1001"
NOT_A_PORT = " is not a serial port"


class PortError(Exception):
    """The port cannot be found or opened; the message is one line saying what to do. `lasting`: waiting
    will not mend it (the path is there and is no serial port), where a robot that is unplugged or
    restarting comes back."""

    def __init__(self, message: str, lasting: bool = False):
        super().__init__(message)
        self.lasting = lasting


def describe(port) -> str:
    """One short description of a port pyserial lists, e.g. '/dev/ttyUSB0 (10c4:ea60 CP2102)'."""
    usb = f"{port.vid:04x}:{port.pid:04x}" if port.vid is not None else "no USB id"
    what = port.product or port.description or ""
    return f"{port.device} ({usb}{' ' + what if what and what != 'n/a' else ''})"


def find_esp32s3(comports=list_ports.comports, flag: str = "--device") -> str:
    """The path of the one attached ESP32-S3 (USB id 303a:1001); PortError says what was seen otherwise.

    `comports` is the listing seam (pyserial's by default); `flag` is the option
    that names a port by hand in the command the person ran.
    """
    seen = list(comports())
    matches = [p for p in seen if p.vid == ESP32S3_VID and p.pid == ESP32S3_PID]
    if len(matches) == 1:
        return matches[0].device
    if len(matches) > 1:
        paths = ", ".join(p.device for p in matches)
        raise PortError(
            f"more than one ESP32-S3 ({USB_ID}) is plugged in: {paths}; pick one with {flag} PATH instead of auto"
        )
    saw = "; ".join(describe(p) for p in seen) or "no serial ports at all"
    raise PortError(
        f"no device with USB id {USB_ID} (ESP32-S3) found; saw: {saw}. "
        f"Plug the robot in with a data USB-C cable, or name its port with {flag} PATH"
    )


def identity(path: str, comports=list_ports.comports) -> str:
    """Who is at `path`, in words that differ when a different device takes the path over.

    A USB port says its VID:PID and serial number (pyserial's listing, where the OS
    gives them). A port without them (a pty, a plain UART) is known by its node:
    the real path, device number and inode, and when the node was made, since a
    new pty may reuse a closed one's number. OSError when nothing is at `path`.
    """
    real = os.path.realpath(path)
    node = os.stat(real)
    for port in comports():
        if port.device in (path, real) and port.vid is not None:
            return f"USB {port.vid:04x}:{port.pid:04x} serial number {port.serial_number or 'unknown'}"
    return (
        f"{real} (device {os.major(node.st_rdev)}:{os.minor(node.st_rdev)}, inode {node.st_ino}, "
        f"made at {node.st_ctime_ns} ns)"
    )


def _errno(error: Exception) -> int | None:
    """The errno behind an open that failed (pyserial wraps the OSError in a SerialException)."""
    code = getattr(error, "errno", None)
    if code is None and isinstance(error.__context__, OSError):
        code = error.__context__.errno
    return code


def _no_port(error: Exception) -> bool:
    """The path was opened and is no serial port (a folder, a file, /dev/null): waiting will not mend it."""
    return _errno(error) in (errno.EISDIR, errno.ENOTTY, errno.EINVAL) or "Inappropriate ioctl" in str(error)


def explain_open_error(path: str, error: Exception) -> str:
    """A one-line, actionable reason why `path` could not be opened."""
    code = _errno(error)
    if isinstance(error, PermissionError) or code in (errno.EACCES, errno.EPERM):
        return (
            f"permission denied on {path}: add yourself to the dialout group "
            "(sudo usermod -aG dialout $USER), then log out and back in"
        )
    if isinstance(error, FileNotFoundError) or code == errno.ENOENT:
        return f"{path} does not exist; is the robot plugged in? (or give auto to search by USB id {USB_ID})"
    if code == errno.EBUSY:
        return f"{path} is busy: another program (a serial monitor, a running bridge, mpremote) has it open; close it"
    if _no_port(error):
        return f"{path}{NOT_A_PORT}"
    return f"cannot open {path}: {error}"


def open_serial(path: str, baud: int = 115200, timeout_s: float = 0.2) -> serial.Serial:
    """Open `path` without pulsing the reset lines; raises PortError with an actionable line.

    DTR and RTS stay low: on the ESP32-S3's USB serial the two together can
    reset the chip or drop it into its bootloader.
    """
    port = serial.Serial()
    port.port = path
    port.baudrate = baud
    port.timeout = timeout_s
    port.write_timeout = 5
    port.dtr = False
    port.rts = False
    try:
        port.open()
    except (OSError, serial.SerialException) as error:
        raise PortError(explain_open_error(path, error), lasting=_no_port(error)) from None
    return port


def not_a_port(path: str) -> str | None:
    """Why `path` can never be the robot's serial port, or None: it is there and is no device (a file,
    a folder), so waiting for the robot to come back would be forever. A missing path is None: the
    robot may be unplugged."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return None
    return None if stat.S_ISCHR(mode) else f"{path}{NOT_A_PORT}"


def resolve(device: str, flag: str = "--device") -> str:
    """The path to open for --device/--port: 'auto' searches by USB id; a path is followed if it is a link."""
    if device == "auto":
        return find_esp32s3(flag=flag)
    if not os.path.exists(device):
        raise PortError(explain_open_error(device, FileNotFoundError(errno.ENOENT, "missing")))
    return device
