"""Plain helpers for every feature's tests: the checkout's root, the one poll-until (`poll`, and
`until`, which fails the test when it times out), reading a process's output until a line comes,
and a port for a server to listen on (`free_port`). A feature's own helpers are in its folder's
helpers.py."""

import asyncio
import collections
import inspect
import os
import random
import socket
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


async def poll(condition, timeout=10.0, every=0.01):
    """Call `condition()` (sync or async) every `every` seconds until it is true or `timeout` seconds
    have passed; its last value (false if it never came true)."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if inspect.isawaitable(value):
            value = await value
        if value or time.monotonic() > deadline:
            return value
        await asyncio.sleep(every)


async def until(condition, what="the condition", timeout=10.0, every=0.01):
    """Wait until `condition()` (sync or async) is true and return its value; fail naming `what`
    after `timeout` seconds."""
    value = await poll(condition, timeout, every)
    if not value:
        raise AssertionError(f"timed out waiting for {what}")
    return value


async def until_real(condition, what="the condition", timeout=20.0):
    """`until` for a real process (`soulstack ...` started by the test): twice the patience."""
    return await until(condition, what, timeout, every=0.02)


def read_until(process, text, timeout_s=20):
    """Read a process's stdout (text mode) line by line until one holds `text`; the lines read."""
    seen = []
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        line = process.stdout.readline()
        if not line:
            break
        seen.append(line)
        if text in line:
            return seen
    raise AssertionError(f"{text!r} never came; saw {seen}")


def _ephemeral_start():
    try:
        return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


# Ports are chosen below the kernel's ephemeral range, which it hands to outgoing connections: a port
# from bind(0) can be given to some test's client socket before the server the port was meant for
# binds it (0.0.0.0:P is then "in use"). Each xdist worker takes its own slice, so two workers running
# side by side never pick the same port, and a worker never hands out one of its last 256 again (a
# test may take several before it starts a server on any).
_LOWEST_PORT = 10000
_SLICES = 8
_given: collections.deque[int] = collections.deque(maxlen=256)


def free_port() -> int:
    """A TCP port nothing listens on or connects from now, for a server a test is about to start."""
    top = _ephemeral_start()
    if top - _LOWEST_PORT < _SLICES * 200:  # an odd kernel setting: the kernel's own choice, as before
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            return probe.getsockname()[1]
    worker = os.environ.get("PYTEST_XDIST_WORKER", "gw0").removeprefix("gw")
    width = (top - _LOWEST_PORT) // _SLICES
    low = _LOWEST_PORT + (int(worker) % _SLICES if worker.isdigit() else 0) * width
    while True:
        port = random.randrange(low, low + width)
        if port in _given:
            continue
        with socket.socket() as probe:
            try:
                probe.bind(("0.0.0.0", port))
            except OSError:
                continue
        _given.append(port)
        return port
