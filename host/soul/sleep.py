"""The soul's sleep: from the end of one waking until something wakes it for the next.

`Soul.live` (host/soul/loop.py) ends each waking with `soul.sleep.until_woken(seconds)`. It
returns at the alarm, at words delivered (`Soul.deliver`), at nudges that are due (a nudge not yet
due shortens the sleep: host/soul/nudges/inbox.py), or at a reminder's time (host/soul/reminders/). On
the way it lets a reminder's retry run beside it and asks keep-warm whether the prompt cache
needs a refresh (host/soul/memory/keepwarm.py). The wake itself (`wake`) is set by the ways in,
`Soul.nudge` and `Soul.deliver`, and cleared when a waking begins.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from soulstack.soul.loop import Soul


class Sleep:
    """One soul's sleep: the event that wakes it, when it fell asleep and for how long it meant to."""

    def __init__(self, soul: Soul):
        self.soul = soul
        self.wake = asyncio.Event()  # set by a nudge or words: an asleep soul looks at what arrived
        self.slept_at: float | None = None  # clock.monotonic() when the last sleep began
        self.alarm_s: float | None = None  # that sleep's length, as planned

    async def until_woken(self, seconds: float) -> None:
        """Until the alarm, converse words, nudges that are due (a nudge that is not yet due shortens the sleep),
        or a reminder's time, whatever the sleep's length and clamp (a retry of one not said runs beside it)."""
        soul = self.soul
        self.slept_at, self.alarm_s = soul.clock.monotonic(), seconds
        alarm = self.slept_at + seconds
        while not soul.pending:
            now = soul.clock.monotonic()
            due = soul.inbox.due_in(now)
            if due == 0 or now >= alarm:
                return
            promised = soul.reminders.while_asleep()  # host/soul/reminders/delivery.py
            if promised == 0:
                return
            self.wake.clear()
            if soul.reminders.trying is not None:  # its body is saying a reminder: beside the sleep
                await self._beside(soul.reminders.trying, due)
                continue
            until = alarm if due is None else min(alarm, now + due)
            if promised is not None:
                until = min(until, now + promised)
            await self._doze(until - now)

    async def _beside(self, trying: asyncio.Future, due: float | None) -> None:
        """Wait for a reminder's try, raced against a person: a nudge or words (the wake), or nudges
        waiting for their interval (`due`). The clock does not run on by itself meanwhile: the alarm
        or another reminder would need the same body, busy with this sentence (a minute at most)."""
        waits: set[asyncio.Future] = {asyncio.ensure_future(self.wake.wait())}
        if due is not None:
            waits.add(asyncio.ensure_future(self.soul.clock.sleep(due)))
        try:
            await asyncio.wait({trying, *waits}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for wait in waits:
                wait.cancel()

    async def _doze(self, seconds: float) -> None:
        """One stretch of sleep: `seconds`, or until something wakes the soul. Keep-warm is asked when the
        prompt cache would expire first (host/soul/memory/keepwarm.py); the soul refreshes it then and
        dozes on. A refresh that fails ends the refreshes of this stretch, never the sleep."""
        clock, wake, keep_warm = self.soul.clock, self.wake, self.soul.keep_warm
        end = clock.monotonic() + max(0.0, seconds)
        refresh_at = keep_warm.first_refresh(end)
        while refresh_at is not None:
            if await clock.sleep_until_woken(refresh_at - clock.monotonic(), wake):
                return
            if not await self._refresh_unless_woken() or wake.is_set():
                break
            refresh_at = keep_warm.next_refresh(end)
        await clock.sleep_until_woken(end - clock.monotonic(), wake)

    async def _refresh_unless_woken(self) -> bool:
        """One keep-warm refresh, raced against a nudge (which wins: the soul never waits for a refresh)."""
        refresh = asyncio.ensure_future(self.soul.keep_warm.refresh())
        woken = asyncio.ensure_future(self.wake.wait())
        try:
            await asyncio.wait({refresh, woken}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            woken.cancel()
            if not refresh.done():
                refresh.cancel()
        return refresh.done() and not refresh.cancelled() and refresh.result()
