"""Time seams. Core logic never reads a clock itself; it is handed milliseconds.

`sleep_ms` is the one way the firmware waits: MicroPython's own asyncio.sleep_ms, which makes nothing
on the heap (a wrapper would make a coroutine, and a float, each time a loop waits), or on CPython,
which has none, asyncio.sleep in seconds.

`Monotonic` turns a wrapping tick counter (MicroPython's time.ticks_ms wraps
after ~12 days on the ESP32) into milliseconds that only grow. Tests hand the
core a `FakeClock` and move it by hand.
"""

import asyncio


async def _sleep_ms(ms):
    await asyncio.sleep(ms / 1000)


sleep_ms = getattr(asyncio, "sleep_ms", _sleep_ms)


class Monotonic:
    def __init__(self, ticks_ms, ticks_diff):
        self._ticks_ms = ticks_ms
        self._ticks_diff = ticks_diff
        self._last = ticks_ms()
        self._total = 0

    def ms(self):
        now = self._ticks_ms()
        self._total += self._ticks_diff(now, self._last)
        self._last = now
        return self._total


class FakeClock:
    def __init__(self, start_ms=0):
        self.now = start_ms

    def ms(self):
        return self.now

    def advance(self, ms):
        self.now += ms
        return self.now


def system_clock():
    """A Monotonic over MicroPython's ticks, or over CPython's monotonic clock."""
    import time

    if hasattr(time, "ticks_ms"):
        return Monotonic(time.ticks_ms, time.ticks_diff)
    return Monotonic(lambda: int(time.monotonic() * 1000), lambda a, b: a - b)


class Rng:
    """A tiny deterministic generator (xorshift32): same seed, same face, on both runtimes."""

    def __init__(self, seed=1):
        self.state = (seed & 0xFFFFFFFF) or 1

    def next32(self):
        x = self.state
        x ^= (x << 13) & 0xFFFFFFFF
        x ^= x >> 17
        x ^= (x << 5) & 0xFFFFFFFF
        self.state = x
        return x

    def uniform(self, low, high):
        return low + (high - low) * (self.next32() / 4294967296.0)

    def between(self, low, high):
        """An integer in [low, high]."""
        return low + self.next32() % (high - low + 1)
