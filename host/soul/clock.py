"""The clock seam: everything in the soul that reads the time or waits goes through one of these.

`Clock` is the wall clock. `ScaledClock` runs virtual time `scale` times faster
than real time from a chosen start, so a test lives a day of wakings in a
second or two, and a nudge can still arrive while the soul really is asleep.
"""

import asyncio
import time
from datetime import datetime, timedelta, timezone


class Clock:
    def now(self) -> datetime:
        """Aware UTC now."""
        return datetime.now(timezone.utc)

    def monotonic(self) -> float:
        return time.monotonic()

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(max(0.0, seconds))

    async def sleep_until_woken(self, seconds: float, wake: asyncio.Event) -> bool:
        """Wait `seconds` or until `wake` is set; True when woken early."""
        if wake.is_set():
            return True
        try:
            await asyncio.wait_for(wake.wait(), timeout=self._real_seconds(seconds))
            return True
        except asyncio.TimeoutError:
            return wake.is_set()

    def _real_seconds(self, seconds: float) -> float:
        return max(0.0, seconds)


class ScaledClock(Clock):
    """Virtual time: starts at `start` and runs `scale` times faster than real time."""

    def __init__(self, start: datetime | None = None, scale: float = 1000.0):
        self.start = start or datetime.now(timezone.utc)
        if self.start.tzinfo is None:
            raise ValueError("ScaledClock needs an aware start time")
        self.scale = scale
        self._real_start = time.monotonic()

    def monotonic(self) -> float:
        return (time.monotonic() - self._real_start) * self.scale

    def now(self) -> datetime:
        return self.start + timedelta(seconds=self.monotonic())

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(self._real_seconds(seconds))

    def _real_seconds(self, seconds: float) -> float:
        return max(0.0, seconds) / self.scale
