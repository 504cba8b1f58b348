"""Keep-warm: while the soul sleeps longer than its prompt cache lives, a tiny request keeps the cache alive.

Why: a night sleep outlives the 1 h cache, and the waking after it would write its whole context
again at twice the input price; a request that reads that prefix shortly before the entry expires
pays a tenth of it and renews the entry. When a refresh is due, what it sends and what it costs:
docs/metabolism.md, "Keep-warm: the cache through long sleeps".

What the code must keep: a refresh is the turn's own request (`view(soul)`, host/soul/memory/view.py)
with one short line after it, and that final message is left out of the cache, so every refresh
renews the very entry the next waking reads (not the line's own, longer one). It never reaches
session.jsonl; its usage goes to the `on_usage` hooks with waking=None (a keep-warm call of the day).
The soul's sleep (host/soul/sleep.py) asks `first_refresh`/`next_refresh` and sends `refresh`; a nudge
drops a pending refresh and abandons one in flight, and a refresh that fails ends that sleep's refreshes.
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
# A lifetime starts when a request starts; the soul notes when the answer came (up to the SDK's
# 120 s later), and a waking senses its body before its first call.
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
        if not soul.cfg.model.keep_warm or soul.model is soul.brainstem:
            return None
        model = soul.last_mind  # the cache the next waking most likely reads (a routine mind has its own)
        if getattr(model, "provider", None) != "anthropic":
            return None
        interval = TTL_S.get(getattr(model, "cache_ttl", ""), 0) - MARGIN_S
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
            log.info(
                "a sleep this long would need %d cache refreshes; the next waking rewrites the cache instead", needed
            )
            return 0
        return needed

    # --- asked by the sleep (host/soul/sleep.py) --------------------------------------------

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
            reply = await soul.last_mind.complete(
                soul.system, request, soul.tools, max_tokens=1, cache=True, cache_final_message=False
            )  # type: ignore[call-arg]  # only an anthropic mind is refreshed (interval_s): it takes this
        except asyncio.CancelledError:
            raise
        except Exception as error:  # a refresh must never disturb the sleep
            log.warning("keep-warm: the cache refresh failed (%s); the next waking writes the cache again", error)
            return False
        self.touched = started
        self.sent += 1
        usage = reply.usage
        log.info(
            "keep-warm: cache refreshed (read %d, written %d tokens)", usage.cache_read_tokens, usage.cache_write_tokens
        )
        soul.hooks.each("on_usage", soul, None, reply)  # waking None: the cost meter books a keep-warm call
        return True
