"""Nightly consolidation: once a night the soul keeps what matters of its day and lets the rest go.

A long life must not get dearer with age. Without this, the history grows
through the day (~17k tokens), the context ceiling folds it near 100k, and
every call reads what stayed: by the second week a day cost twice the first.
Sleep does better: once a night, inside the night window, the soul's waking
becomes a consolidation turn. It is asked to write what matters into its
life files with its own tools (diary, keep_in_mind, reflect, set_aspiration)
and then to answer, calling no tool, with a digest of the day for its
morning self. What the next day reads is compact: system, tools, its inner
life (shown again in full), the digest, and the last few exchanges.

On disk nothing is lost: every message is kept (session.jsonl, then the archive), and two records
make the consolidation restart-safe like a fold:
  {"type": "consolidation", "night": "<date>", "at": ...}    the turn begins
  {"type": "fold", ..., "night": "<date>"}                    the day is folded
A process killed between them finishes the same consolidation at its next
waking: it is told to continue from what it already wrote (its calls are in
the history), never to start over, so nothing is written twice. A fold
record with a "night" also says that night is done: one consolidation per
night, across restarts.

`loop.consolidate` (on by default) turns it on; a soul with no night window
(nightStartHour == nightEndHour) never consolidates and folds at the context
ceiling as before. A person speaking at night comes first: that waking is an
ordinary one and consolidation waits for the next quiet night waking.
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from soulstack.llm.types import Message, TextBlock
from soulstack.soul.memory import fold as folding
from soulstack.soul.memory.archive import Entry, stamp
from soulstack.soul import rhythm

if TYPE_CHECKING:
    from soulstack.soul.config import Loop
    from soulstack.soul.loop import Soul, Waking

log = logging.getLogger(__name__)

# Less than this many wakings since the last fold: nothing worth a consolidation turn yet.
MIN_WAKINGS = 3
# The last few exchanges kept word for word before the consolidation waking (in our token estimate).
KEEP_RECENT_TOKENS = 1200

# Its words (the instruction, the resumption, the pointer that stands in front of the compact
# context) are the soul's language's: host/soul/prompts/ (lang.TEXT["consolidate"], ...).


def night_of(loop: Loop, local: datetime) -> str | None:
    """The night `local` falls in, named by the date it began; None by day or with no night window."""
    start, end = loop.night_start_hour, loop.night_end_hour
    if not rhythm.is_night(local.hour, start, end):
        return None
    began = local.date()
    if start > end and local.hour < end:  # a window past midnight: the small hours are the evening's night
        began -= timedelta(days=1)
    return began.isoformat()


class Nightly:
    """Decides when a waking is the night's consolidation, opens its turn, and folds the day after it.

    The loop runs the turn itself, between `begin` and `end` (host/soul/loop.py)."""

    def __init__(self, soul: Soul):
        self.soul = soul
        self.done = 0  # consolidations finished by this process (tools/bench-life reads it)
        self.night = ""  # the night `due` found due: `begin` opens it (the clock may pass its end between)

    def due(self, waking: Waking) -> bool:
        """Whether `waking` (its snapshot just stored) should consolidate instead of living an ordinary turn."""
        soul = self.soul
        loop = soul.cfg.loop
        if not loop.consolidate or soul.model is soul.brainstem:
            return False  # the brainstem has nothing to write with; the ceiling's plain digest serves it
        if waking.why.heard or waking.delivered:
            return False  # a person is there: answer them; the night has more wakings
        if soul.session.consolidating:
            return True  # begun before the process stopped: finish it, by day too
        night = night_of(loop, soul.local_now())
        if night is None or night == soul.session.consolidated_night:
            return False
        live = soul.session.messages[soul.session.fold_upto :]
        self.night = night
        return len(folding.clean_boundaries(live)) + 1 >= MIN_WAKINGS

    def begin(self, waking: Waking) -> None:
        """The consolidation turn's opening: its record (unless it resumes one) and its instruction.
        The loop then runs the turn (host/soul/loop.py) and calls `end`."""
        soul, session = self.soul, self.soul.session
        at = soul.clock.now().isoformat()
        if session.consolidating:
            words = soul.lang.TEXT["consolidate_resume"]
            log.info(
                "finishing the consolidation of the night of %s, interrupted before", session.consolidating["night"]
            )
        else:
            words = soul.lang.TEXT["consolidate"]
            # This waking's snapshot is the last message: the consolidation begins there.
            session.begin_consolidation(self.night, len(session.messages) - 1, at)
        session.append(Message("user", [TextBlock(words)]), at=at)

    def end(self, waking: Waking) -> None:
        """After the consolidation turn: the night's sleep, and the fold that leaves tomorrow a compact context."""
        soul = self.soul
        if waking.sleep is None:  # the digest ends the turn without a sleep call: a night's sleep
            waking.sleep = soul.plan_sleep(rhythm.ceiling(soul.cfg.loop, soul.local_now()))
        if waking.on_brainstem:  # its mind failed midway: it finishes at a later waking, when the mind is back
            log.warning("the consolidation could not finish (the model failed); it goes on at the next quiet waking")
            return
        self.fold(waking)

    def fold(self, waking: Waking) -> None:
        """Fold everything before the last few exchanges; the consolidation turn itself stays whole."""
        soul, session = self.soul, self.soul.session
        if session.consolidating is None:  # end() follows begin(), which records it: nothing to fold
            return
        night, begun = session.consolidating["night"], session.consolidating["waking"]
        before = session.messages[session.fold_upto : begun]
        cut = folding.choose_cut(before, KEEP_RECENT_TOKENS) if before else None
        upto = session.fold_upto + (cut if cut is not None else len(before))
        digest = self._digest(begun)
        if session.fold_upto > begun:  # the ceiling folded while it was unfinished: its summary holds the rest
            summary = session.fold_summary or ""  # a fold happened, so it has its summary
        elif digest:
            summary = soul.lang.TEXT["consolidate_pointer"]
        else:  # no digest from the model: the day's plain digest stands in front instead
            folded = folding.with_summary(session.messages[session.fold_upto : upto], session.fold_summary, soul.lang)
            summary = folding.plain_digest(folded, soul.lang, soul.toolbox)
        tokens_before = folding.estimate_tokens(session.history())
        # The digest (or the plain one) joins the archive with the fold: recall finds the day by it.
        kept = Entry(stamp(soul.local_now()), "digest", "", digest or summary)
        session.append_fold(summary, upto, soul.clock.now().isoformat(), night=night, remember=kept)
        self.done += 1
        log.info(
            "consolidated the night of %s: %d messages folded (~%d -> ~%d tokens)%s",
            night,
            upto,
            tokens_before,
            folding.estimate_tokens(session.history()),
            "" if digest else " (no digest: a plain one)",
        )

    def _digest(self, begun: int) -> str | None:
        """The soul's digest: its longest words since the consolidation began (a short thought before
        a diary call is not one), or None when it wrote none."""
        texts = [
            "\n".join(b.text for b in message.content if isinstance(b, TextBlock)).strip()
            for message in self.soul.session.messages[begun:]
            if message.role == "assistant"
        ]
        return max(texts, key=len, default="") or None
