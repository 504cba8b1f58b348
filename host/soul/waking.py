"""One waking, as the loop keeps it (host/soul/loop.py): why it woke, what it was given, what it did.

`Waking` is the record every part is handed (hooks, the turn, the rooms); `Delivery` is a
person's words waiting for a waking; `tally` and `collapse` are how its reasons and words are
listed, each once.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING
from collections.abc import Callable

if TYPE_CHECKING:
    from soulstack.soul import rhythm
    from soulstack.soul.snapshot import WakeReasons


@dataclass
class Delivery:
    """The human's words delivered through converse (`Soul.deliver`), waiting for the soul (nudges wait in
    the inbox; those that came while it was thinking are `WakeReasons.nudged_while_thinking`)."""

    text: str
    while_thinking: bool = False
    on_enter: Callable | None = None  # called once the words are in the model's context
    speaker: str | None = None  # who spoke them, when the voice stack knows (None: the soul's human)
    heard_by: str | None = None  # the body whose microphone heard them, when the voice stack names it


@dataclass
class Waking:
    number: int
    started: object  # aware datetime
    why: WakeReasons
    delivered: list = field(default_factory=list)  # Deliveries (converse words)
    nudges: list = field(default_factory=list)  # inbox Entries this waking shows
    step: int = 0  # model calls made so far
    tools_used: list = field(default_factory=list)
    sleep: rhythm.SleepPlan | None = None
    on_brainstem: bool = False
    fell_back: bool = False
    error: str | None = None
    heard_in_turn: list = field(default_factory=list)  # words that joined the running turn
    body_changed: bool = False  # its body sense differs from the last waking's
    consolidating: bool = False  # the night's consolidation (host/soul/memory/consolidate.py)
    routine: bool | None = None  # False once the main mind took over (Soul.mind)
    shown: bool = False  # its snapshot is stored in the session (the nudges it took may leave the inbox at its end)


def tally(items: list) -> list:
    """Repeats shown once with their count ("a face appeared (x40)"), first-come order kept."""
    counts = Counter(items)
    return [f"{item} (x{counts[item]})" if counts[item] > 1 else item for item in collapse(items)]


def collapse(items: list) -> list:
    """Exact duplicates collapsed, first-come order kept."""
    seen, out = set(), []
    for item in items:
        if item not in seen:
            seen.add(item)
            out.append(item)
    return out
