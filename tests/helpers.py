"""Plain helpers for every feature's tests: the checkout's root, the one poll-until (`poll`, and
`until`, which fails the test when it times out), and reading a process's output until a line
comes. A feature's own helpers are in its folder's helpers.py."""

import asyncio
import inspect
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
