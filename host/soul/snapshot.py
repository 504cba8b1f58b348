"""The waking snapshot: the one user message each waking begins with.

Built as a list of content blocks. The first holds the slower inner life
(self, aspirations, mood, kept matters, diary); the LAST block holds what is
volatile (time, why it woke, body sense, felt drives, the closing line), so a
provider that caches prompts finds everything before it unchanged.
"""

import random
from dataclasses import dataclass, field
from datetime import datetime

from host.llm.types import TextBlock
from host.soul import life as lifefiles

FADE_AFTER_DAYS = 3
FADED_CHARS = 40
DIARY_RECENT = 10
FILE_CAP = 2000


@dataclass
class BodySense:
    state: str  # "awake" | "dormant" | "silent" | "none"
    reason: str = ""


@dataclass
class WakeReasons:
    first: bool = False  # the process just started
    slept_minutes: float | None = None  # how long it slept (alarm or nudge)
    early_minutes: float | None = None  # > 0 when a nudge came before the alarm
    nudged: list = field(default_factory=list)  # reasons that woke it from sleep
    arrived: list = field(default_factory=list)  # reasons that came while it was thinking
    heard: list = field(default_factory=list)  # the human's own words


def fmt_minutes(value: float) -> str:
    return f"{value:g}" if value >= 10 or value == int(value) else f"{value:.1f}"


def inner_block(life, T, local: datetime, rng: random.Random) -> TextBlock:
    text = T.TEXT
    parts = []
    for key, name in (("self", lifefiles.SELF), ("aspirations", lifefiles.ASPIRATIONS), ("mood", lifefiles.MOOD)):
        content = _read(life, name).strip()
        if content:
            parts.append(f"{text[key]}\n{content[:FILE_CAP]}")
    kept = _entries(life, lifefiles.MIND)
    if kept:
        lines = []
        for when, matter in kept:
            days = (local.replace(tzinfo=None) - when).days
            if days >= FADE_AFTER_DAYS:
                short = matter if len(matter) <= FADED_CHARS else _cut(matter, FADED_CHARS)
                lines.append(text["kept_faded"].format(text=short, days=days))
            else:
                lines.append(text["kept_fresh"].format(text=matter, date=when.strftime("%Y-%m-%d")))
        parts.append(text["kept"] + "\n" + "\n".join(lines))
    diary = _entries(life, lifefiles.DIARY)
    if diary:
        recent, older = diary[-DIARY_RECENT:], diary[:-DIARY_RECENT]
        parts.append(text["diary"] + "\n" + "\n".join(_diary_line(e) for e in recent))
        if older:
            parts.append(text["memory"] + "\n" + _diary_line(rng.choice(older)))
    if life.problems:
        parts.append(text["problems"] + "\n" + "\n".join(f"- {p}" for p in life.problems))
        life.problems.clear()
    return TextBlock("\n\n".join(parts) if parts else text["empty_life"])


def now_block(T, persona: dict, body_name: str, local: datetime, night: bool, why: WakeReasons,
              body: BodySense, ceiling: float, felt: list) -> TextBlock:
    text = T.TEXT
    lines = [text["now"].format(time=local.strftime("%Y-%m-%d %H:%M"), weekday=T.WEEKDAYS[local.weekday()])]
    if night:
        lines.append(text["night"])
    if why.first:
        lines.append(text["woke_start"])
    for reason in why.nudged:
        lines.append(text["woke_nudge"].format(reason=reason))
    if why.nudged and why.early_minutes and why.early_minutes > 0:
        lines.append(text["woke_early"].format(minutes=fmt_minutes(why.early_minutes)))
    if not why.first and not why.nudged and not why.arrived and not why.heard and why.slept_minutes is not None:
        lines.append(text["woke_alarm"].format(minutes=fmt_minutes(why.slept_minutes)))
    for reason in why.arrived:
        lines.append(text["arrived_while_thinking"].format(reason=reason))
    for words in why.heard:
        lines.append(text["heard"].format(human=persona["human"], words=words))
    key = {"awake": "body_awake", "dormant": "body_dormant", "silent": "body_silent"}.get(body.state, "body_no_sense")
    lines.append(text[key].format(body=body_name, reason=body.reason))
    lines.append(text["ceiling"].format(minutes=fmt_minutes(ceiling)))
    felt = [f for f in felt if f]
    if felt:
        lines.append(text["felt"] + "\n" + "\n".join(felt))
    lines.append("")
    lines.append(text["closing"])
    return TextBlock("\n".join(lines))


def _cut(text: str, limit: int) -> str:
    """At most `limit` characters, ending on a whole word when there is one to end on."""
    head = text[:limit]
    if " " in head and not text[limit:limit + 1].isspace():
        head = head.rsplit(" ", 1)[0]
    return head.rstrip()


def _read(life, name):
    try:
        return life.read(name)
    except lifefiles.Unreadable:
        return ""


def _entries(life, name):
    try:
        return life.entries(name)
    except lifefiles.Unreadable:
        return []


def _diary_line(entry) -> str:
    when, text = entry
    return f"- {when.strftime('%Y-%m-%d %H:%M')}: {text}"
