"""Keep-warm: while the soul sleeps longer than its prompt cache lives, a tiny request keeps the cache alive.

Anthropic's prompt cache keeps an entry `model.cacheTtl` from the start of
the last request that read or wrote it, and every read starts that lifetime
again. A night sleep of 90-120 minutes outlives the 1 h cache, so the waking
after it writes its whole context again at 2x the input price (~43k tokens,
~$0.17 at Sonnet prices, on the third day of a life). A request that repeats
that prefix shortly before the entry expires reads it at 0.1x (~$0.004) and
renews it.

What a refresh sends: the turn's own request (`view(soul)`, host/soul/memory/view.py:
the session's history as every request shows it, the same system prompt, tools and cache
breakpoints) with one short line added after it, max_tokens=1, and the final
message (the one holding the line) left out of the cache. So its last
breakpoint is the end of the soul's last reply, which the next waking's
request repeats, and every refresh renews that very entry: were the line
cached too, the second refresh would find and renew the line's own, longer
entry instead, and let the one the waking needs expire. The line is never
written to session.jsonl and the soul never sees the reply. Its usage goes to
the `on_usage` hooks with waking=None: the cost meter books it as a keep-warm
call of the day.

When: only for the anthropic provider, with `model.keepWarm` on (default)
and a 1 h TTL. A refresh is due TTL - MARGIN_S after the last request that
touched the cache; refreshes repeat while the alarm is further away than the
next due time. MARGIN_S covers what the soul cannot see: a lifetime starts
when a request starts, but the soul notes the time when its answer arrives
(the SDK gives up after 120 s), and a waking senses its body before its first
call. A 5 m TTL leaves nothing after that margin, and keeping it warm would
cost a request every few minutes of every sleep, more than the 1 h TTL costs
by itself; a soul that wants its cache to last sets `cacheTtl` to "1h".
A sleep that would need more than MAX_REFRESHES goes without: past that,
writing the cache once more is cheaper than reading it that many times.

The soul's sleep (host/soul/loop.py) asks `first_refresh`/`next_refresh` when a
refresh is due and sends it with `refresh`. A nudge still wakes the soul at
once: a pending refresh is dropped and one in flight is abandoned. A refresh
that fails is logged and the rest of that sleep goes without (the next waking
writes the cache, as it would have).
"""

from __future__ import annotations

import asyncio
import logging
import math
from typing import TYPE_CHECKING

from soulstack.soul.memory.fold import summary_request
from soulstack.soul.memory.view import view

if TYPE_CHECKING:
    from soulstack.soul.loop import Soul, Waking

log = logging.getLogger(__name__)

TTL_S = {"5m": 300, "1h": 3600}
MARGIN_S = 300
# A 1 h write costs 2x the input price, a read 0.1x: 19 refreshes plus the waking's
# read would cost as much as the waking's rewrite, so a sleep needing more goes without.
MAX_REFRESHES = 18


class KeepWarm:
    """When the prompt cache needs a refresh, and the refresh itself; the sleep asks and sends it."""

    def __init__(self, soul: Soul):
        self.soul = soul
        self.touched: float | None = None  # clock.monotonic() of the last call that read or wrote the cache
        self.sent = 0  # refreshes that went through in this process

    def interval_s(self) -> float | None:
        """Seconds between refreshes, or None when keep-warm does not apply to this soul."""
        soul = self.soul
        if not soul.cfg["model"]["keepWarm"] or soul.model is soul.brainstem:
            return None
        model = soul.last_mind  # the cache the next waking most likely reads (a routine mind has its own)
        if getattr(model, "provider", None) != "anthropic":
            return None
        interval = TTL_S.get(getattr(model, "cache_ttl", None), 0) - MARGIN_S
        return interval if interval > 0 else None

    def on_usage(self, soul: Soul, waking: Waking | None, reply) -> None:
        """A turn's model call read or wrote the cache (a refresh notes its own start)."""
        if waking is not None and reply.model != soul.brainstem.model_id:
            self.touched = soul.clock.monotonic()

    def plan(self, alarm: float) -> int:
        """How many refreshes a sleep ending at `alarm` needs (0: none, or none worth it)."""
        interval = self.interval_s()
        if interval is None or self.touched is None:
            return 0
        needed = max(0, math.ceil((alarm - self.touched) / interval) - 1)
        if needed > MAX_REFRESHES:
            log.info("a sleep this long would need %d cache refreshes; the next waking rewrites the cache instead", needed)
            return 0
        return needed

    # --- asked by the sleep (host/soul/loop.py) ---------------------------------------------

    def first_refresh(self, alarm: float) -> float | None:
        """When (clock.monotonic()) a stretch of sleep ending at `alarm` first needs a refresh;
        None when it needs none, or none worth it (plan)."""
        return self.next_refresh(alarm) if self.plan(alarm) else None

    def next_refresh(self, alarm: float) -> float | None:
        """When the next refresh is due, if before `alarm` (after a refresh: counted from its start)."""
        interval = self.interval_s()
        if interval is None or self.touched is None:
            return None
        due = self.touched + interval
        return due if due < alarm else None

    async def refresh(self) -> bool:
        """Send one refresh; True when it went through. A failure is logged, never raised."""
        soul = self.soul
        started = soul.clock.monotonic()
        request = summary_request(view(soul), soul.lang.TEXT["keep_warm"])  # the line ends the final user message
        try:
            reply = await soul.last_mind.complete(soul.system, request, soul.tools, max_tokens=1, cache=True,
                                              cache_final_message=False)
        except asyncio.CancelledError:
            raise
        except Exception as error:  # a refresh must never disturb the sleep
            log.warning("keep-warm: the cache refresh failed (%s); the next waking writes the cache again", error)
            return False
        self.touched = started
        self.sent += 1
        usage = reply.usage
        log.info("keep-warm: cache refreshed (read %d, written %d tokens)", usage.cache_read_tokens, usage.cache_write_tokens)
        soul.hooks.each("on_usage", soul, None, reply)  # waking None: the cost meter books a keep-warm call
        return True
