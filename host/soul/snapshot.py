"""The waking snapshot: the one user message each waking begins with.

Built as a list of content blocks. The first holds the slower inner life
(self, aspirations, mood, kept matters, diary); the LAST block holds what is
volatile (time, why it woke, body sense, felt drives, the closing line), so a
provider that caches prompts finds everything before it unchanged.

The inner life is shown in full only when the soul does not already have it
in front of it (`InnerSight`): at the first waking of a process, when a part
changed, and when a fold took away the message that showed it. A part still
in view, unchanged, is not repeated at all, and neither is a change the soul
made itself (its own update_mood or keep_in_mind call is in the history), so
a quiet waking's snapshot is only its volatile block. Every snapshot stays in
the history and is read again by every later call of the day: re-sending an
unchanged SELF.md every waking made it ~600 tokens of each waking's ~950, and
even a line saying "unchanged" cost ~25 tokens a waking (tools/bench-life
measures it).
"""

import random
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from soulstack.llm.types import TextBlock, ToolCall
from soulstack.soul import life as lifefiles
from soulstack.soul.life import one_line

if TYPE_CHECKING:
    from soulstack.soul.config import Persona

FADE_AFTER_DAYS = 3
FADED_CHARS = 40
DIARY_RECENT = 10
FILE_CAP = 2000
MEMORY_EVERY = timedelta(hours=1)  # an older diary line surfaces at most this often

FILE_PARTS = (("self", lifefiles.SELF), ("aspirations", lifefiles.ASPIRATIONS), ("mood", lifefiles.MOOD))


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
    nudged_while_thinking: list = field(default_factory=list)  # nudges' reasons that came while it was thinking
    heard: list = field(default_factory=list)  # the human's own words
    speakers: dict = field(default_factory=dict)  # words -> who spoke them, when not the human (a voiceprint)
    heard_by: dict = field(default_factory=dict)  # words -> the body that heard them, when the voice stack named it
    sleep_told: bool = False  # the sleep it woke from was the one its sleep call was told (its length is in view)
    due: list = field(default_factory=list)  # reminders due now (host/soul/reminders/delivery.py's Due)

    def causes(self) -> list:
        """What woke it, in order, each (kind, what): the one account that the log line (loop.py's
        `_why_text`) and the diary the brainstem writes (loop.py's `situation`) are both worded from,
        so they cannot disagree (they did: words heard were "my own alarm" in the diary). Kinds:
        started, nudged and while_thinking (what: a nudge's reason), heard (a person's words),
        reminder (a Due), alarm (minutes slept; only when nothing else woke it)."""
        out: list[tuple[str, object]] = [("started", "")] if self.first else []
        out += [("nudged", reason) for reason in self.nudged]
        out += [("while_thinking", reason) for reason in self.nudged_while_thinking]
        out += [("heard", words) for words in self.heard]
        out += [("reminder", due) for due in self.due]
        if not out and self.slept_minutes is not None:
            out.append(("alarm", self.slept_minutes))
        return out

    def in_a_word(self) -> str:
        """The waking's reason in one word, for its vitals record: from the same causes, the weightiest
        (a person's words above a nudge carrying them)."""
        kinds = {kind for kind, _ in self.causes()}
        order = (("started", "start"), ("heard", "heard"), ("nudged", "nudge"), ("while_thinking", "nudge"))
        return next((word for kind, word in (*order, ("reminder", "reminder")) if kind in kinds), "alarm")


def fmt_minutes(value: float) -> str:
    """Minutes as people write them: 60 (not 59.9072), 7, 2.5."""
    if value >= 10 or round(value, 1) == round(value):
        return str(round(value))
    return f"{value:.1f}"


@dataclass
class Shown:
    text: object  # what the soul saw: a part's text, or the diary entries it has in view
    at: int  # index in session.messages of the message that showed it in full


class InnerSight:
    """What of its inner life the soul already has in its live history (this process only).

    `block()` builds a waking's inner block: a part is shown in full when it is
    new to this process, when it changed, or when the message that showed it
    was folded away; otherwise it is named in one "unchanged" line. The diary
    is shown as its new lines when the last listing is still there, leaving
    out lines the soul wrote itself since (its `diary` call is in the history).
    `after_fold()` shows again, in full, whatever a fold just took away.

    A part the soul changed with its own call is already in front of it (the call is in the
    history): `tools` (the Toolbox) says which part a call changes (SoulTool.changes) and what a
    diary call wrote (its gist); it is asked once `block` is given a session.
    """

    def __init__(self, tools=None):
        self.tools = tools
        self.shown: dict = {}  # part -> Shown
        self.said: dict = {}  # a steady line of the volatile block (body sense, sleep ceiling) -> Shown
        self.last_snapshot = None  # index of the last snapshot built
        self.memory_at: datetime | None = None  # when an older diary line last surfaced

    def fresh(self, key: str, line: str, session) -> bool:
        """Whether a steady line must be said in the snapshot about to be appended: it is new to this
        process, it changed, or the message that said it was folded away (else it is still in view)."""
        at, live_from = (len(session.messages), session.fold_upto) if session is not None else (0, 0)
        seen = self.said.get(key)
        if seen and seen.at >= live_from and seen.text == line and session is not None:
            return False
        self.said[key] = Shown(line, at)
        return True

    def block(self, life, lang, local: datetime, rng: random.Random, session=None) -> TextBlock:
        """The inner block of a snapshot about to be appended to `session` (None: shown in full)."""
        at = len(session.messages) if session is not None else 0
        live_from = session.fold_upto if session is not None else 0
        own = self._own_calls(session) if session is not None else OwnCalls()
        self.last_snapshot = at
        return self._render(life, lang, local, at, live_from, own, rng)

    def after_fold(self, life, lang, local: datetime, session) -> TextBlock | None:
        """The parts a fold just took out of the live history, to append as a message; None if none."""
        if not any(seen.at < session.fold_upto for seen in self.shown.values()):
            return None
        block = self._render(
            life, lang, local, len(session.messages), session.fold_upto, OwnCalls(), None, blank_line=False
        )
        return block if block.text else None

    def _render(self, life, lang, local, at, live_from, own, rng, blank_line=True) -> TextBlock:
        """The parts not in view; an empty text when everything is (a blank life says so, with `blank_line`)."""
        text = lang.TEXT
        parts, anything = [], False
        current = {key: _file_part(life, text[key], name) for key, name in FILE_PARTS}
        current["kept"] = _kept_part(life, text, local)
        for key in ("self", "aspirations", "mood", "kept"):
            now, seen = current[key], self.shown.get(key)
            anything = anything or bool(now)
            in_view = seen is not None and seen.at >= live_from
            if in_view and seen is not None and seen.text == now:
                continue
            made_at = own.part_at(key)
            if in_view and made_at is not None:  # its own call changed it: the call shows the change
                self.shown[key] = Shown(now, made_at)
                continue
            if now:
                parts.append(now)
            elif seen and seen.text and seen.at >= live_from:
                parts.append(f"{text[key]}\n{text['nothing_now']}")  # it was there, now it is gone
            self.shown[key] = Shown(now, at)
        diary = _entries(life, lifefiles.DIARY)
        recent = diary[-DIARY_RECENT:]
        seen = self.shown.get("diary")
        new = _continues(seen.text, diary) if seen and seen.at >= live_from else None
        anything = anything or bool(recent)
        if new is None:
            if recent:
                parts.append(text["diary"] + "\n" + "\n".join(_diary_line(e) for e in recent))
            self.shown["diary"] = Shown(recent, at)
        else:
            assert seen is not None, "a continued diary was seen before"
            others = [entry for entry in new if entry[1] not in own.diary_lines]
            if others:
                parts.append(text["diary_new"] + "\n" + "\n".join(_diary_line(e) for e in others))
            seen.text = (list(seen.text) + new)[-DIARY_RECENT:]
        if rng is not None:
            older = diary[:-DIARY_RECENT]
            if older and (self.memory_at is None or local - self.memory_at >= MEMORY_EVERY):
                parts.append(text["memory"] + "\n" + _diary_line(rng.choice(older)))
                self.memory_at = local
            if life.problems:
                parts.append(text["problems"] + "\n" + "\n".join(f"- {p}" for p in life.problems))
                life.problems.clear()
        if not parts and not anything and blank_line:
            return TextBlock(text["empty_life"])
        return TextBlock("\n\n".join(parts))

    def _own_calls(self, session) -> "OwnCalls":
        """What the soul changed with its own calls since the last snapshot (their calls are in view)."""
        own = OwnCalls()
        if self.last_snapshot is None:
            return own
        for index in range(self.last_snapshot, len(session.messages)):
            for block in session.messages[index].content:
                if not isinstance(block, ToolCall):
                    continue
                part = self.tools.changes(block.name)
                if part == "diary" and isinstance(block.input, dict):
                    own.diary_lines.add(one_line(str(block.input.get(self.tools.facts(block.name).gist, ""))))
                if part is not None:
                    own.parts[part] = index
        return own


@dataclass
class OwnCalls:
    """The soul's own calls since its last snapshot: the latest message index of a call changing each
    part of its inner life, and its diary lines."""

    parts: dict = field(default_factory=dict)
    diary_lines: set = field(default_factory=set)

    def part_at(self, part: str) -> int | None:
        """Where the soul's latest own change of `part` is, or None when it made none."""
        return self.parts.get(part)


def inner_block(life, lang, local: datetime, rng: random.Random) -> TextBlock:
    """The whole inner life, every part in full (a soul seeing it for the first time)."""
    return InnerSight().block(life, lang, local, rng)


def _continues(known: list, entries: list) -> list | None:
    """The entries added after `known` (the diary lines in view) when the diary only grew; else None."""
    n = len(known)
    if n == 0:
        return list(entries) if len(entries) < DIARY_RECENT else None
    for added in range(DIARY_RECENT):
        start, end = len(entries) - added - n, len(entries) - added
        if start < 0:
            return None
        if entries[start:end] == list(known):
            return entries[end:]
    return None


def _file_part(life, heading: str, name: str) -> str:
    content = _read(life, name).strip()
    return f"{heading}\n{content[:FILE_CAP]}" if content else ""


def _kept_part(life, text: dict, local: datetime) -> str:
    kept = _entries(life, lifefiles.MIND)
    if not kept:
        return ""
    lines = []
    for when, matter in kept:
        days = (local.replace(tzinfo=None) - when).days
        if days >= FADE_AFTER_DAYS:
            short = matter if len(matter) <= FADED_CHARS else _cut(matter, FADED_CHARS)
            lines.append(text["kept_faded"].format(text=short, days=days))
        else:
            lines.append(text["kept_fresh"].format(text=matter, date=when.strftime("%Y-%m-%d")))
    return text["kept"] + "\n" + "\n".join(lines)


def now_block(
    lang,
    persona: "Persona",
    body_name: str,
    local: datetime,
    night: bool,
    why: WakeReasons,
    body: BodySense,
    ceiling: float,
    felt: list,
    sight: InnerSight | None = None,
    session=None,
) -> TextBlock:
    """The volatile block. With `sight`, the steady lines (the date and weekday, the body sense, the
    sleep ceiling, the closing line) are said only when they are not already in view unchanged: each
    line stays in the history and is read by every later call of the day."""
    text = lang.TEXT
    fresh = (lambda key, line: sight.fresh(key, line, session)) if sight is not None else (lambda key, line: True)
    # What is due comes first: a promise of a time is the one thing this waking must not miss.
    lines = [due.line(text) for due in why.due]
    if fresh("date", local.strftime("%Y-%m-%d")):
        lines.append(text["now"].format(time=local.strftime("%Y-%m-%d %H:%M"), weekday=lang.WEEKDAYS[local.weekday()]))
    else:  # the same day as the full date in view: the clock time is enough
        lines.append(text["now_time"].format(time=local.strftime("%H:%M")))
    if night:
        lines.append(text["night"])
    if why.first:
        lines.append(text["woke_start"])
    for reason in why.nudged:
        lines.append(text["woke_nudge"].format(reason=reason))
    if why.nudged and why.early_minutes and why.early_minutes > 0:
        lines.append(text["woke_early"].format(minutes=fmt_minutes(why.early_minutes)))
    something_woke_it = why.first or why.nudged or why.nudged_while_thinking or why.heard or why.due
    if not something_woke_it and why.slept_minutes is not None:
        told = why.sleep_told and why.early_minutes is not None and why.early_minutes < 0.5
        lines.append(
            text["woke_alarm_told"] if told else text["woke_alarm"].format(minutes=fmt_minutes(why.slept_minutes))
        )
    for reason in why.nudged_while_thinking:
        lines.append(text["arrived_while_thinking"].format(reason=reason))
    for words in why.heard:
        human, body_heard = why.speakers.get(words, persona.human), why.heard_by.get(words)
        key = "heard_by" if body_heard else "heard"
        lines.append(text[key].format(human=human, words=words, body=body_heard))
    key = {"awake": "body_awake", "dormant": "body_dormant", "silent": "body_silent"}.get(body.state, "body_no_sense")
    for steady, line in (
        ("body", text[key].format(body=body_name, reason=body.reason)),
        ("ceiling", text["ceiling"].format(minutes=fmt_minutes(ceiling))),
    ):
        if fresh(steady, line):
            lines.append(line)
    felt = [f for f in felt if f]
    if felt:
        lines.append(text["felt"] + "\n" + "\n".join(felt))
    if fresh("closing", text["closing"]):  # (the system prompt says it too; once in view is enough)
        lines += ["", text["closing"]]
    return TextBlock("\n".join(lines))


def _cut(text: str, limit: int) -> str:
    """At most `limit` characters, ending on a whole word when there is one to end on."""
    head = text[:limit]
    if " " in head and not text[limit : limit + 1].isspace():
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
