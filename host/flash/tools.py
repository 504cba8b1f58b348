"""The outside tools `soulstack flash` drives: esptool and mpremote, as subprocesses.

Their own output (esptool's progress, mpremote's file list) streams straight to
the person's terminal; a tail is kept so a failure becomes one actionable line.
"""

import re
import shlex
import subprocess
import sys
import threading

from soulstack.serial_ports import explain_open_error

ESPTOOL = [sys.executable, "-m", "esptool"]
MPREMOTE = [sys.executable, "-m", "mpremote"]
TAIL_CHARS = 4000


class FlashError(Exception):
    """A step failed; the message is one line a person can act on."""

    output: str = ""  # a tool's last words, when run() saw it fail
    timed_out: bool = False  # whether run() stopped it at its time limit


def shown(argv: list[str]) -> str:
    """The command as a person would type it (`python -m esptool` shown as `esptool`)."""
    words = list(argv)
    if words[:2] == [sys.executable, "-m"]:
        words = words[2:]
    return shlex.join(words)


def run(argv: list[str], out=None, timeout_s: float | None = None) -> str:
    """Run `argv`, echoing its output live to `out` (stdout by default); returns the output's tail.

    Raises FlashError (with the tail in `.output`) on a non-zero exit, or when
    it runs past `timeout_s` (`.timed_out` set): mpremote waits forever on a
    device that never answers, so every call here carries a limit.
    """
    out = out or sys.stdout
    try:
        process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, bufsize=0)
    except OSError as error:
        raise FlashError(f"could not start {shown(argv[:3])}: {error}") from None
    tail = []

    def pump():
        for chunk in iter(lambda: process.stdout.read(256), b""):
            text = chunk.decode("utf-8", "replace")
            out.write(text)  # progress lines end in \r; passing chunks through keeps them animating
            out.flush()
            tail.append(text)

    reader = threading.Thread(target=pump, daemon=True)
    reader.start()
    try:
        process.wait(timeout_s)
        timed_out = False
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
        timed_out = True
    reader.join(5)
    output = "".join(tail)[-TAIL_CHARS:]
    if timed_out or process.returncode != 0:
        why = f"gave no result within {timeout_s:g} s" if timed_out else f"failed (exit {process.returncode})"
        failure = FlashError(f"{shown(argv)} {why}")
        failure.output, failure.timed_out = output, timed_out
        raise failure
    return output


# --- esptool ------------------------------------------------------------------


def esptool_argv(port: str, *command: str) -> list[str]:
    return [*ESPTOOL, "--chip", "esp32s3", "--port", port, *command]


def explain_esptool(port: str, output: str) -> str | None:
    """One actionable line for an esptool failure, from its output; None when unrecognised."""
    wrong = re.search(r"This chip is ([\w-]+), not ESP32-S3", output)
    if wrong:
        return (
            f"wrong chip on {port}: esptool found an {wrong.group(1)}, not an ESP32-S3; "
            "this tool flashes the M5Stack CoreS3 (StackChan) only"
        )
    if "Permission denied" in output or "[Errno 13]" in output:
        return explain_open_error(port, PermissionError(13, "Permission denied"))
    if "Failed to connect" in output or "No serial data received" in output:
        return (
            f"esptool could not reach the ESP32-S3 bootloader on {port}: hold the CoreS3's reset button "
            "about 3 seconds until the green light flashes (download mode), then run this again"
        )
    if "could not open port" in output or "No such file" in output:
        return f"{port} went away during flashing; check the cable and run this again"
    return None


def esptool(port: str, *command: str, out=None, timeout_s: float = 300):
    try:
        run(esptool_argv(port, *command), out, timeout_s)
    except FlashError as error:
        raise FlashError(explain_esptool(port, getattr(error, "output", "")) or str(error)) from None


# --- mpremote -----------------------------------------------------------------


def mpremote_argv(port: str, *commands: list[str]) -> list[str]:
    """One mpremote invocation running `commands` in order over one connection (joined with '+')."""
    argv = [*MPREMOTE, "connect", port]
    for index, command in enumerate(commands):
        if index:
            argv.append("+")
        argv.extend(command)
    return argv


def explain_mpremote(port: str, output: str, timed_out: bool = False) -> str | None:
    if "could not enter raw repl" in output or (timed_out and not output.strip()):
        return (
            f"the device on {port} is not running MicroPython (no REPL answer); flash it first with "
            "--firmware IMAGE.bin (upstream ESP32_GENERIC_S3 or M5Stack UIFlow2), see docs/wired.md"
        )
    if "Permission denied" in output or "[Errno 13]" in output:
        return explain_open_error(port, PermissionError(13, "Permission denied"))
    if "failed to access" in output or "No such file" in output:
        return f"mpremote could not open {port}; is the robot still plugged in?"
    return None


def mpremote(port: str, *commands: list[str], out=None, timeout_s: float = 20) -> str:
    """Run mpremote commands; a device that gives no REPL answer within `timeout_s` is not running MicroPython."""
    try:
        return run(mpremote_argv(port, *commands), out, timeout_s)
    except FlashError as error:
        explained = explain_mpremote(port, getattr(error, "output", ""), getattr(error, "timed_out", False))
        raise FlashError(explained or str(error)) from None
