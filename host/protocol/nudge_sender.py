"""Sending nudges: the debounce, merge and delivery every body and the bridge share.

The nudge itself (its shape, validation, cap and a person's words) is the contract in
host/protocol/nudges.py; this module only decides which nudges go out, when, and how.

The sender keeps a body from waking the soul over and over (a face seen every
frame once caused wake storms):

- the same reason offered again within `same_reason_window_s` of the last time
  it was accepted is dropped: it is the same event seen again;
- nudges go out at most once per `min_interval_s`. A *different* reason that
  arrives sooner waits, and every reason waiting when the interval passes goes
  out merged ("; "), in as few nudges as the cap allows. A person's line is
  never merged: it goes out as its own nudge, with its `words`.

Nothing accepted is lost. While the soul is down (connection refused, 5xx, a
timeout, 408/429) the sender keeps the nudges and retries with a growing
backoff. Each nudge goes out with a `nudge_id` (the caller's, or a fresh one) and
keeps it, and its content, on every resend once it may have reached the soul (it
went out, and no answer came back): the soul counts it once. Only a nudge the
soul never got (the connection was refused) is packed anew with what arrived
meanwhile. A 400 for a merged nudge is split: each part is sent alone, and only
a part the soul refuses by itself is given up. Other 4xx (a wrong token)
cannot be fixed by retrying: the nudge is given up, reported to the listener
and logged with the soul's answer (at most once a minute, with a count).
"""

import asyncio
import contextlib
import logging
import time
from collections import deque
from dataclasses import dataclass, field, replace

import aiohttp

from soulstack.protocol.nudges import (
    MAX_CODES,
    MAX_REASON_CHARS,
    MAX_WORDS_CHARS,
    SEPARATOR,
    Nudge,
    cut,
    new_nudge_id,
)

log = logging.getLogger(__name__)

# 408 and 429 say "try again later", unlike the other 4xx.
RETRYABLE_4XX = (408, 429)


# --- merging -------------------------------------------------------------------------------


def merge(nudges: list) -> Nudge:
    """One nudge for a group `pack` made: a person's line (or what was heard) alone, or plain reasons joined
    (with their codes, piece by piece, when one has codes: `{"reason": ...}` for a piece without)."""
    if len(nudges) == 1:
        return nudges[0]
    codes = None
    if any(n.codes for n in nudges):
        codes = tuple(piece for n in nudges for piece in (n.codes or ({"reason": n.reason},)))
    return Nudge(SEPARATOR.join(n.reason for n in nudges), codes=codes if codes and len(codes) <= MAX_CODES else None)


def pack(nudges: list, cap: int = MAX_REASON_CHARS) -> list:
    """Groups to send, in order: a nudge with words (or a speaker, or `heard`) alone; plain reasons together
    up to `cap` characters."""
    groups: list = []
    size = 0
    for nudge in nudges:
        last = groups[-1] if groups else None
        fits = last is not None and last[-1].plain and size + len(SEPARATOR) + len(nudge.told) <= cap
        if nudge.plain and fits and last is not None:
            last.append(nudge)
            size += len(SEPARATOR) + len(nudge.told)
        else:
            groups.append([nudge])
            size = len(nudge.told)
    return groups


@dataclass(eq=False)
class Outgoing:
    """One nudge on the wire, with its id, and the offered nudges it carries (one, or plain reasons merged)."""

    nudge: Nudge
    parts: list = field(default_factory=list)
    # Sent and perhaps kept (no answer came back): from now on its content and id never change.
    reached: bool = False

    @classmethod
    def of(cls, group: list) -> "Outgoing":
        merged = merge(group)
        return cls(replace(merged, nudge_id=merged.nudge_id or new_nudge_id()), list(group))


def _capped(text: str, cap: int, what: str) -> str:
    if len(text) > cap:
        log.warning("a nudge's %s is %d characters; sending its first %d", what, len(text), cap)
    return cut(text, cap)


class RateLimitedLog:
    """Logs a kind of message at most once per `every_s`; the next one says how many were held back."""

    def __init__(self, logger: logging.Logger, every_s: float = 60.0, clock=time.monotonic):
        self.logger, self.every_s, self.clock = logger, every_s, clock
        self._last: dict = {}
        self._held: dict = {}

    def log(self, level: int, kind: str, message: str, *args) -> bool:
        """Log `message % args` unless a `kind` message went out within `every_s`; True when logged."""
        now, last = self.clock(), self._last.get(kind)
        if last is not None and now - last < self.every_s:
            self._held[kind] = self._held.get(kind, 0) + 1
            return False
        held = self._held.pop(kind, 0)
        suffix = f" ({held} more like it in the last {self.every_s:g} s not logged)" if held else ""
        self.logger.log(level, message + suffix, *args)
        self._last[kind] = now
        return True


# --- the sender ----------------------------------------------------------------------------


def _same(reason: str) -> str:
    return " ".join(reason.split()).lower()


class Debouncer:
    """Decides which nudges go out, and when. Pure logic on an injected clock."""

    def __init__(self, same_reason_window_s: float = 60.0, min_interval_s: float = 10.0, clock=time.monotonic):
        self.same_reason_window_s = same_reason_window_s
        self.min_interval_s = min_interval_s
        self.clock = clock
        self._accepted_at: dict[str, float] = {}
        self._pending: list[Nudge] = []
        self._last_sent: float | None = None

    def offer(
        self,
        reason: str | None,
        words: str | None = None,
        speaker: str | None = None,
        heard: dict | None = None,
        nudge_id: str | None = None,
        codes: tuple | None = None,
    ) -> bool:
        """Queue a nudge (a reason, a person's words with who spoke them, what was heard, or several; with
        `nudge_id` when the caller has one: it goes alone, under that id; `codes` beside the reason: what
        it says, for the soul to tell in its language); False when what it tells repeats one accepted
        within the window (or it is empty)."""
        reason, words = (reason or "").strip() or None, (words or "").strip() or None
        if reason is None and words is None and not heard:
            return False
        reason = reason and _capped(" ".join(reason.split()), MAX_REASON_CHARS, "reason")
        words = words and _capped(words, MAX_WORDS_CHARS, "words")
        speaker = (speaker or "").strip() or None if words else None
        nudge = Nudge(reason, words, speaker, heard or None, nudge_id, codes if reason else None)
        key, now = _same(nudge.told), self.clock()
        last = self._accepted_at.get(key)
        if last is not None and now - last < self.same_reason_window_s:
            return False
        # Forget reasons whose window has passed, so the table stays small on a long-lived body.
        self._accepted_at = {k: t for k, t in self._accepted_at.items() if now - t < self.same_reason_window_s}
        self._accepted_at[key] = now
        self._pending.append(nudge)
        return True

    @property
    def pending(self) -> list:
        """What the waiting nudges tell, oldest first."""
        return [nudge.told for nudge in self._pending]

    def seconds_until_due(self) -> float | None:
        """None when nothing waits; else how long until the next nudge may go (0 = now)."""
        if not self._pending:
            return None
        if self._last_sent is None:
            return 0.0
        return max(0.0, self._last_sent + self.min_interval_s - self.clock())

    def take(self) -> list:
        """The waiting nudges, removed from the queue (call when `seconds_until_due()` is 0)."""
        taken, self._pending = self._pending, []
        return taken

    def sent(self):
        """Record that a nudge reached the soul now; the next waits `min_interval_s`."""
        self._last_sent = self.clock()


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
        self._undelivered: list[Outgoing] = []  # taken from the debouncer, not yet accepted by the soul
        self._retry_at = 0.0
        self._backoff_s = first_backoff_s
        self._wake = asyncio.Event()
        self.refusals = RateLimitedLog(log, clock=self.clock)

    def nudge(
        self,
        reason: str | None = None,
        words: str | None = None,
        speaker: str | None = None,
        heard: dict | None = None,
        nudge_id: str | None = None,
        codes: tuple | None = None,
    ) -> bool:
        """Offer a nudge: what happened (with its `codes`, for the soul's language), a person's exact words (`words=`, with `speaker=` when known:
        the soul renders the reason), what the person heard of the soul's speech (`heard=`, the shape
        `parse_heard` keeps), or several; `nudge_id=` when the nudge has one already (a robot's, passed
        on); False when the debouncer collapsed it as a repeat."""
        accepted = self.debouncer.offer(reason, words, speaker, heard, nudge_id, codes)
        if accepted:
            self._wake.set()
        else:
            told = Nudge((reason or "").strip() or None, (words or "").strip() or None, None, heard or None).told
            self.listener(NudgeEvent("collapsed", [told], "the same reason went out moments ago"))
        return accepted

    @property
    def waiting(self) -> list:
        """What every nudge not yet delivered tells, oldest first."""
        return [part.told for out in self._undelivered for part in out.parts] + self.debouncer.pending

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

    def _outgoing(self) -> list:
        """What to send now, oldest first: nudges that may have reached the soul as they went, the rest
        (never received, and what the debouncer holds) packed anew."""
        outs: list = []
        loose: list = []
        for out in self._undelivered:
            if out.reached:
                outs += [Outgoing.of(group) for group in pack(loose)] + [out]
                loose = []
            else:
                loose += out.parts
        return outs + [Outgoing.of(group) for group in pack(loose + self.debouncer.take())]

    async def _attempt(self, session: aiohttp.ClientSession):
        # What is not yet accepted stays in `_undelivered` while in flight, so a stop mid-send still knows it.
        self._undelivered = self._outgoing()
        queue = deque(self._undelivered)
        while queue:
            out = queue.popleft()
            status, detail, reached = await self._post(session, out.nudge)
            reasons = [nudge.told for nudge in out.parts]
            if 200 <= status < 300:
                self._forget(out)
                self.debouncer.sent()
                self._backoff_s = self.first_backoff_s
                self.listener(NudgeEvent("delivered", reasons))
            elif status == 400 and len(out.parts) > 1:  # refused whole, so not kept: find the part it refuses
                alone = [Outgoing.of([nudge]) for nudge in out.parts]
                at = self._undelivered.index(out)
                self._undelivered[at : at + 1] = alone
                queue.extendleft(reversed(alone))
            elif 400 <= status < 500 and status not in RETRYABLE_4XX:
                self._forget(out)
                self.refusals.log(
                    logging.ERROR,
                    f"refused {status}",
                    "the soul at %s refused a nudge (it answered %s); gave up on: %s",
                    self.url,
                    detail,
                    out.nudge.told,
                )
                self.listener(NudgeEvent("rejected", reasons, detail))
            else:
                out.reached = out.reached or reached
                self._retry_at = self.clock() + self._backoff_s
                self.listener(NudgeEvent("retrying", self.waiting, detail, retry_in_s=self._backoff_s))
                log.warning("nudge not delivered (%s); retrying in %g s", detail, self._backoff_s)
                self._backoff_s = min(self._backoff_s * 2, self.max_backoff_s)
                return

    def _forget(self, out: Outgoing):
        self._undelivered = [kept for kept in self._undelivered if kept is not out]

    async def _post(self, session: aiohttp.ClientSession, nudge: Nudge) -> tuple[int, str, bool]:
        """(HTTP status, what happened, whether the soul may have it); status 0 when it did not answer at all.

        Only a refused connection proves the soul never got the nudge; after a timeout or a dropped
        connection it may have kept it, so the resend must be the same nudge under the same id.
        """
        headers = {"Authorization": f"Bearer {self.token}"} if self.token else {}
        try:
            async with session.post(
                self.url, json=nudge.to_json(), headers=headers, timeout=aiohttp.ClientTimeout(total=self.timeout_s)
            ) as response:
                text = (await response.text()).strip()[:200]
                return response.status, f"{response.status} {text}".strip(), True
        except TimeoutError:
            return 0, f"no answer within {self.timeout_s:g} s", True
        except aiohttp.ClientConnectorError as error:
            return 0, f"cannot connect to {self.url}: {error.os_error.strerror or error.os_error}", False
        except aiohttp.ClientError as error:
            return 0, f"{type(error).__name__}: {error}", True
