"""The flock's clock seam: wall time and waiting until a deadline.

Deadlines (a verdict's 10 minutes, a prank cooldown) are stored as wall-clock
seconds so they survive a restart. Tests drive `ManualClock` to move time.
"""

import asyncio
import time
from datetime import datetime, timezone


class SystemClock:
    def now(self) -> float:
        return time.time()

    async def sleep_until(self, deadline: float) -> None:
        delay = deadline - time.time()
        if delay > 0:
            await asyncio.sleep(delay)


class ManualClock:
    """Time that moves only when `advance` is called."""

    def __init__(self, start: float = 1_800_000_000.0):
        self._now = start
        self._waiters: list = []

    def now(self) -> float:
        return self._now

    def advance(self, seconds: float) -> None:
        self._now += seconds
        waiters, self._waiters = self._waiters, []
        for future in waiters:
            if not future.done():
                future.set_result(None)

    async def sleep_until(self, deadline: float) -> None:
        while self._now < deadline:
            future = asyncio.get_running_loop().create_future()
            self._waiters.append(future)
            await future


def rfc3339(seconds: float) -> str:
    moment = datetime.fromtimestamp(seconds, timezone.utc)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")
