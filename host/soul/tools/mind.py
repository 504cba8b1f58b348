"""keep_in_mind and settle_mind: matters the soul carries until they are settled (MIND.md).

Kept matters come back at every waking; after three days they fade to a short
line (a stale matter repeated in full every waking teaches a soul to wait).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from soulstack.soul.tools import Outcome, SoulTool

if TYPE_CHECKING:
    from soulstack.soul.loop import Soul


async def keep_in_mind(soul: Soul, matter: str) -> Outcome:
    if not matter.strip():
        return Outcome.text(soul.lang.TEXT["bad_input"].format(problem="matter is empty"), ok=False)
    renewed = soul.life.keep(soul.local_now().replace(tzinfo=None), matter)
    return Outcome.text(soul.lang.TEXT["kept_renewed" if renewed else "kept_done"])


async def settle_mind(soul: Soul, matter: str) -> Outcome:
    """Settle one matter, matched exactly or by a unique prefix; otherwise nothing is removed and the soul is told why."""
    text = soul.lang.TEXT
    removed, why_not = soul.life.settle(matter)
    if removed is None:
        return Outcome.text(text[f"settle_{why_not}"], ok=False)
    return Outcome.text(text["settled"].format(text=removed))


def mind_tools() -> list:
    s = {"type": "string"}
    return [
        SoulTool(
            "keep_in_mind",
            "Keep a matter in mind; it stays in front of you until you settle it.",
            {"matter": s},
            keep_in_mind,
            ["matter"],
            informs=False,
            routine=True,
            changes="kept",
        ),
        SoulTool(
            "settle_mind",
            "Let a kept matter go: give it exactly, or its beginning if that is unique.",
            {"matter": s},
            settle_mind,
            ["matter"],
            informs=False,
            changes="kept",
        ),
    ]
