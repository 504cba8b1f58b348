"""Pranks: a requester who floods the flock, or whom the Sentry judges abusive,
gets a strike and a cooldown. During a cooldown every new list is refused with
429 and a line in a crow's voice.

Rules (also in docs/events.md): more than `per_minute` lists in any 60 s window
is a strike; so is an item the Sentry triages as `abuse`. The n-th strike
costs a cooldown of BASE_COOLDOWN_S * 2**(n-1), at most MAX_COOLDOWN_S. Strikes
and cooldowns live in the ledger (SQLite) and survive restarts; the sliding
window of recent lists is kept in memory.
"""

import math
from collections import defaultdict, deque

from soulstack.clocks import rfc3339
from soulstack.flock.personas import ROSTER

BASE_COOLDOWN_S = 60
MAX_COOLDOWN_S = 3600
WINDOW_S = 60.0


class Pranks:
    def __init__(self, store, clock, per_minute: int = 10):
        self.store = store
        self.clock = clock
        self.per_minute = per_minute
        self.recent: defaultdict[str, deque] = defaultdict(deque)  # requester -> times of accepted lists

    def check(self, requester: str) -> tuple | None:
        """Before accepting a list: None to go ahead, or (message, cooldown_s) to refuse with 429."""
        now = self.clock.time()
        strikes, cooldown_until = self.store.strikes_of(requester)
        if now < cooldown_until:
            return self._message(strikes, cooldown_until - now)
        times = self.recent[requester]
        while times and times[0] <= now - WINDOW_S:
            times.popleft()
        if len(times) >= self.per_minute:
            times.clear()
            return self.strike(requester)
        times.append(now)
        return None

    def strike(self, requester: str) -> tuple:
        """Add a strike; -> (message, cooldown_s)."""
        strikes, _ = self.store.strikes_of(requester)
        strikes += 1
        cooldown = min(BASE_COOLDOWN_S * 2 ** (strikes - 1), MAX_COOLDOWN_S)
        self.store.set_strikes(requester, strikes, self.clock.time() + cooldown)
        return self._message(strikes, cooldown)

    def _message(self, strikes: int, seconds: float) -> tuple:
        cooldown_s = max(1, math.ceil(seconds))
        crow = ROSTER[(strikes - 1) % len(ROSTER)]  # a different crow scolds each time
        return crow.prank_message(cooldown_s), cooldown_s

    def to_json(self) -> list:
        """The strikes for GET /api/trust; `cooldown_until` in RFC 3339, as every other time the API gives."""
        rows = self.store.strike_rows()
        return [{"requester": r, "strikes": s, "cooldown_until": rfc3339(until)} for r, s, until in rows]
