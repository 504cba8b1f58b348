"""The clock seam: everything in soulstack that reads the time or waits goes through one of these.

One interface for the soul and the flock: `now()` (aware UTC datetime),
`time()` (the same instant as seconds since 1970, what the flock stores so a
deadline survives a restart), `monotonic()`, `sleep(seconds)`,
`sleep_until(epoch seconds)` and `sleep_until_woken(seconds, event)`.

`Clock` is the wall clock. `ScaledClock` runs virtual time `scale` times faster
than real time from a chosen start, so a test lives a day of wakings in a
second or two, and a nudge can still arrive while the soul really is asleep.
`StepClock` moves virtual time only when something waits on it, by exactly
what it waits: what a test or a bench sees does not depend on how busy the
machine is (on a ScaledClock at 6000x, a tenth of a second of CPU load is
ten virtual minutes). `ManualClock` moves only when a test calls `advance`.
"""

import asyncio
import time
from datetime import datetime, timedelta, UTC


class Clock:
    def now(self) -> datetime:
        """Aware UTC now."""
        return datetime.now(UTC)

    def time(self) -> float:
        """Now as seconds since 1970 (UTC)."""
        return self.now().timestamp()

    def monotonic(self) -> float:
        return time.monotonic()

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(max(0.0, seconds))

    async def sleep_until(self, deadline: float) -> None:
        """Wait until `time()` reaches `deadline` (seconds since 1970)."""
        await self.sleep(deadline - self.time())

    async def sleep_until_woken(self, seconds: float, wake: asyncio.Event) -> bool:
        """Wait `seconds` or until `wake` is set; True when woken early."""
        if wake.is_set():
            return True
        try:
            await asyncio.wait_for(wake.wait(), timeout=self._real_seconds(seconds))
            return True
        except TimeoutError:
            return wake.is_set()

    def _real_seconds(self, seconds: float) -> float:
        return max(0.0, seconds)


class ScaledClock(Clock):
    """Virtual time: starts at `start` and runs `scale` times faster than real time."""

    def __init__(self, start: datetime | None = None, scale: float = 1000.0):
        self.start = start or datetime.now(UTC)
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


class StepClock(Clock):
    """Virtual time that moves only when something waits on it, by exactly what it waits.

    Every wait passes at once (after one turn of the event loop), except:
    - with `end`: the first wait that would reach `end` sets `over` and never
      returns; the caller cancels the soul (tools/bench-life: the day is done);
    - while held (`hold`): a soul's sleep (`sleep_until_woken`) waits in real
      time, virtual time standing still, until `release()` lets it pass or
      its wake event (a nudge) ends it early. A test holds the soul asleep at
      the moment it wants to look, instead of racing it.
    Plain `sleep` (retry backoffs, timers) is never held.
    """

    def __init__(self, start: datetime, end: datetime | None = None):
        if start.tzinfo is None:
            raise ValueError("StepClock needs an aware start time")
        self.start, self.end, self.seconds = start, end, 0.0
        self.over = asyncio.Event()
        self.sleeps = 0  # sleep_until_woken calls begun so far; the first is number 1
        self.held = 0  # the number of the sleep being held now, 0 when none
        self._hold_from: int | None = None  # sleeps numbered this or later are held
        self._released = asyncio.Event()

    def monotonic(self) -> float:
        return self.seconds

    def now(self) -> datetime:
        return self.start + timedelta(seconds=self.seconds)

    def advance(self, seconds: float) -> None:
        """Let virtual time pass without waiting (e.g. what a model call takes)."""
        self.seconds += max(0.0, seconds)

    def hold(self, after: int = 0) -> None:
        """Let the next `after` sleeps pass, then hold every sleep until `release()` or its wake."""
        self._hold_from = self.sleeps + after + 1

    def release(self) -> None:
        """A held sleep passes its full length; no sleep is held until `hold` again."""
        self._hold_from = None
        self._released.set()
        self._released = asyncio.Event()

    async def sleep(self, seconds: float) -> None:
        await self._pass(seconds)

    async def sleep_until_woken(self, seconds: float, wake: asyncio.Event) -> bool:
        if wake.is_set():
            return True
        self.sleeps += 1
        if self._hold_from is not None and self.sleeps >= self._hold_from:
            await self._held(wake)
            if wake.is_set():
                return True  # woken while held: no virtual time passed
        await self._pass(seconds)
        return wake.is_set()

    async def _held(self, wake: asyncio.Event) -> None:
        self.held = self.sleeps
        released = asyncio.ensure_future(self._released.wait())
        woken = asyncio.ensure_future(wake.wait())
        try:
            await asyncio.wait({released, woken}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            released.cancel()
            woken.cancel()
            self.held = 0

    async def _pass(self, seconds: float) -> None:
        seconds = max(0.0, seconds)
        if self.end is not None and self.now() + timedelta(seconds=seconds) >= self.end:
            self.over.set()
            await asyncio.Event().wait()  # until cancelled
        self.seconds += seconds
        await asyncio.sleep(0)


class ManualClock(Clock):
    """Time that moves only when `advance` is called; waits end when it passes their deadline."""

    def __init__(self, start: float = 1_800_000_000.0):
        self._now = start
        self._waiters: list = []

    def time(self) -> float:
        return self._now

    def now(self) -> datetime:
        return datetime.fromtimestamp(self._now, UTC)

    def monotonic(self) -> float:
        return self._now

    def advance(self, seconds: float) -> None:
        self._now += seconds
        waiters, self._waiters = self._waiters, []
        for future in waiters:
            if not future.done():
                future.set_result(None)

    async def sleep(self, seconds: float) -> None:
        await self.sleep_until(self._now + max(0.0, seconds))

    async def sleep_until(self, deadline: float) -> None:
        while self._now < deadline:
            future = asyncio.get_running_loop().create_future()
            self._waiters.append(future)
            await future


def rfc3339(seconds: float) -> str:
    """Seconds since 1970 as the contract's timestamps: UTC, milliseconds, "Z"."""
    moment = datetime.fromtimestamp(seconds, UTC)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")
