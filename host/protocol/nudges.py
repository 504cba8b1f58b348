"""Waking the soul: the nudge debouncer and sender every body shares.

A nudge is `POST <nudge url>` with `{"reason": "<what happened>"}`. Two rules
keep a body from waking the soul over and over (a face seen every frame once
caused wake storms):

- the same reason offered again within `same_reason_window_s` of the last time
  it was accepted is dropped: it is the same event seen again;
- nudges go out at most once per `min_interval_s`. A *different* reason that
  arrives sooner is not dropped: it waits, and every reason waiting when the
  interval passes goes out together in one nudge, joined by "; ".

Nothing accepted is lost. While the soul is down (connection refused, 5xx, a
timeout) the sender keeps the reasons and retries with a growing backoff,
merging whatever else arrives meanwhile. A 4xx (a wrong token, a malformed
nudge) cannot be fixed by retrying: it is logged loudly, reported to the
listener, and the reasons are given up.
"""

import asyncio
import contextlib
import logging
import time
from dataclasses import dataclass

import aiohttp

log = logging.getLogger(__name__)

# 408 and 429 say "try again later", unlike the other 4xx.
RETRYABLE_4XX = (408, 429)


def _same(reason: str) -> str:
    return " ".join(reason.split()).lower()


class Debouncer:
    """Decides which reasons become nudges, and when. Pure logic on an injected clock."""

    def __init__(self, same_reason_window_s: float = 60.0, min_interval_s: float = 10.0, clock=time.monotonic):
        self.same_reason_window_s = same_reason_window_s
        self.min_interval_s = min_interval_s
        self.clock = clock
        self._accepted_at: dict[str, float] = {}
        self._pending: list[str] = []
        self._last_sent: float | None = None

    def offer(self, reason: str) -> bool:
        """Queue `reason` for the next nudge; False when it repeats one accepted within the window."""
        reason = reason.strip()
        if not reason:
            return False
        key, now = _same(reason), self.clock()
        last = self._accepted_at.get(key)
        if last is not None and now - last < self.same_reason_window_s:
            return False
        # Forget reasons whose window has passed, so the table stays small on a long-lived body.
        self._accepted_at = {k: t for k, t in self._accepted_at.items() if now - t < self.same_reason_window_s}
        self._accepted_at[key] = now
        self._pending.append(reason)
        return True

    @property
    def pending(self) -> list[str]:
        return list(self._pending)

    def seconds_until_due(self) -> float | None:
        """None when nothing waits; else how long until the next nudge may go (0 = now)."""
        if not self._pending:
            return None
        if self._last_sent is None:
            return 0.0
        return max(0.0, self._last_sent + self.min_interval_s - self.clock())

    def take(self) -> list[str]:
        """The waiting reasons, removed from the queue (call when `seconds_until_due()` is 0)."""
        taken, self._pending = self._pending, []
        return taken

    def sent(self):
        """Record that a nudge reached the soul now; the next waits `min_interval_s`."""
        self._last_sent = self.clock()


def merge(reasons: list[str]) -> str:
    return "; ".join(reasons)


@dataclass
class NudgeEvent:
    """What happened to a nudge, for a body that shows it (the terminal paints these).

    kind: "delivered", "retrying" (the soul is down; kept), "rejected" (a 4xx;
    given up) or "collapsed" (a repeat within the window; not sent again).
    """

    kind: str
    reasons: list
    detail: str = ""
    retry_in_s: float = 0.0


class NudgeSender:
    """Delivers debounced nudges to one soul; run `run()` as a task, call `nudge()` from anywhere on the loop."""

    def __init__(
        self,
        url: str,
        token: str | None = None,
        debouncer: Debouncer | None = None,
        listener=None,
        clock=None,
        timeout_s: float = 10.0,
        first_backoff_s: float = 1.0,
        max_backoff_s: float = 30.0,
    ):
        self.url = url
        self.token = token
        self.debouncer = debouncer or Debouncer(clock=clock or time.monotonic)
        self.clock = clock or self.debouncer.clock
        self.listener = listener or (lambda event: None)
        self.timeout_s = timeout_s
        self.first_backoff_s = first_backoff_s
        self.max_backoff_s = max_backoff_s
        self._undelivered: list[str] = []  # taken from the debouncer, not yet accepted by the soul
        self._retry_at = 0.0
        self._backoff_s = first_backoff_s
        self._wake = asyncio.Event()

    def nudge(self, reason: str) -> bool:
        """Offer a reason; False when the debouncer collapsed it as a repeat."""
        accepted = self.debouncer.offer(reason)
        if accepted:
            self._wake.set()
        else:
            self.listener(NudgeEvent("collapsed", [reason.strip()], "the same reason went out moments ago"))
        return accepted

    @property
    def waiting(self) -> list[str]:
        """Every reason not yet delivered, oldest first."""
        return self._undelivered + self.debouncer.pending

    def seconds_until_attempt(self) -> float | None:
        if self._undelivered:
            return max(0.0, self._retry_at - self.clock())
        return self.debouncer.seconds_until_due()

    async def _sleep_or_wake(self, seconds: float | None):
        self._wake.clear()
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(self._wake.wait(), seconds)

    async def run(self):
        """Deliver nudges until cancelled."""
        async with aiohttp.ClientSession() as session:
            while True:
                wait = self.seconds_until_attempt()
                if wait is None or wait > 0:
                    await self._sleep_or_wake(wait)
                    continue
                await self._attempt(session)

    async def _attempt(self, session: aiohttp.ClientSession):
        # The batch stays in `_undelivered` while in flight, so a stop mid-send still knows it.
        batch = self._undelivered = self._undelivered + self.debouncer.take()
        status, detail = await self._post(session, merge(batch))
        if 200 <= status < 300:
            self._undelivered = []
            self.debouncer.sent()
            self._backoff_s = self.first_backoff_s
            self.listener(NudgeEvent("delivered", batch))
        elif 400 <= status < 500 and status not in RETRYABLE_4XX:
            self._undelivered = []
            log.error("the soul refused a nudge (answered %s); giving up on: %s", detail, merge(batch))
            self.listener(NudgeEvent("rejected", batch, detail))
        else:
            self._retry_at = self.clock() + self._backoff_s
            self.listener(NudgeEvent("retrying", batch, detail, retry_in_s=self._backoff_s))
            log.warning("nudge not delivered (%s); retrying in %g s", detail, self._backoff_s)
            self._backoff_s = min(self._backoff_s * 2, self.max_backoff_s)

    async def _post(self, session: aiohttp.ClientSession, reason: str) -> tuple[int, str]:
        """(HTTP status, what happened); status 0 when the soul did not answer at all."""
        headers = {"Authorization": f"Bearer {self.token}"} if self.token else {}
        try:
            async with session.post(
                self.url, json={"reason": reason}, headers=headers, timeout=aiohttp.ClientTimeout(total=self.timeout_s)
            ) as response:
                text = (await response.text()).strip()[:200]
                return response.status, f"{response.status} {text}".strip()
        except asyncio.TimeoutError:
            return 0, f"no answer within {self.timeout_s:g} s"
        except aiohttp.ClientConnectorError as error:
            return 0, f"cannot connect to {self.url}: {error.os_error.strerror or error.os_error}"
        except aiohttp.ClientError as error:
            return 0, f"{type(error).__name__}: {error}"
