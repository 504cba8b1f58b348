"""The inner life tools: mood, diary, self, aspirations, achievements, and rereading them."""

from datetime import timedelta

from soulstack.soul import life as lifefiles
from soulstack.soul.life import STAMP, one_line
from soulstack.soul.tools import Outcome, SoulTool
from soulstack.soul.tools.recall import diary_day, diary_query

READ_CAP_CHARS = 8000
READ_MAX_ENTRIES = 30


async def update_mood(soul, mood: str, note: str = "") -> Outcome:
    when = soul.local_now().strftime(STAMP)
    soul.life.set_mood(
        f"{mood.strip()}\n\n({one_line(note)} — {when})\n" if note.strip() else f"{mood.strip()}\n\n({when})\n"
    )
    return Outcome.text(soul.lang.TEXT["mood_set"])


async def diary(soul, entry: str) -> Outcome:
    if not entry.strip():
        return Outcome.text(soul.lang.TEXT["bad_input"].format(problem="entry is empty"), ok=False)
    soul.life.add_entry(lifefiles.DIARY, soul.local_now().replace(tzinfo=None), entry)
    return Outcome.text(soul.lang.TEXT["diary_written"])


async def reflect(soul, content: str) -> Outcome:
    if not content.strip():
        return Outcome.text(soul.lang.TEXT["bad_input"].format(problem="content is empty"), ok=False)
    soul.life.reflect(soul.local_now().replace(tzinfo=None), content)
    return Outcome.text(soul.lang.TEXT["self_rewritten"])


async def set_aspiration(soul, content: str) -> Outcome:
    if not content.strip():
        return Outcome.text(soul.lang.TEXT["bad_input"].format(problem="content is empty"), ok=False)
    soul.life.write(lifefiles.ASPIRATIONS, content.strip() + "\n")
    return Outcome.text(soul.lang.TEXT["aspiration_set"])


async def achieve(soul, what: str, feeling: str = "") -> Outcome:
    if not what.strip():
        return Outcome.text(soul.lang.TEXT["bad_input"].format(problem="what is empty"), ok=False)
    line = f"{one_line(what)} — {one_line(feeling)}" if feeling.strip() else one_line(what)
    soul.life.add_entry(lifefiles.ACHIEVEMENTS, soul.local_now().replace(tzinfo=None), line)
    return Outcome.text(soul.lang.TEXT["achieved"])


def _listing(entries) -> str:
    lines = [f"- {when.strftime(STAMP)}: {text}" for when, text in entries[-READ_MAX_ENTRIES:]]
    out = "\n".join(lines)
    return out if len(out) <= READ_CAP_CHARS else "…\n" + out[-READ_CAP_CHARS:]


async def read_diary(soul, days_ago: int | None = None, query: str | None = None) -> Outcome:
    """A day's entries (0 = today), entries matching `query`'s words (the archive's index), or else the latest ones."""
    if query is not None and query.strip():
        return await diary_query(soul, query, days_ago)
    if days_ago is not None:  # an older day's lines are in the archive (host/soul/memory/diary.py)
        entries = diary_day(soul, (soul.local_now() - timedelta(days=max(0, int(days_ago)))).date())
    else:
        entries = soul.life.entries(lifefiles.DIARY)
    return Outcome.text(_listing(entries) if entries else soul.lang.TEXT["diary_none"])


async def read_achievements(soul) -> Outcome:
    entries = soul.life.entries(lifefiles.ACHIEVEMENTS)
    return Outcome.text(_listing(entries) if entries else soul.lang.TEXT["achievements_none"])


def inner_tools() -> list:
    s = {"type": "string"}
    return [
        SoulTool(
            "update_mood",
            "Note your mood now (replaces MOOD.md): the mood in a line, and why.",
            {"mood": s, "note": s},
            update_mood,
            ["mood"],
            informs=False,
            routine=True,
            changes="mood",
            gist="mood",
        ),
        SoulTool(
            "diary",
            "Write one line in your diary (the time is added for you).",
            {"entry": s},
            diary,
            ["entry"],
            informs=False,
            routine=True,
            changes="diary",
            gist="entry",
        ),
        SoulTool(
            "reflect",
            "Rewrite who you think you are (SELF.md, the whole new version). The old one is kept in SELF.history.md. Only when you truly understand something new about yourself.",
            {"content": s},
            reflect,
            ["content"],
            informs=False,
            changes="self",
        ),
        SoulTool(
            "set_aspiration",
            "Rewrite what you aspire to (ASPIRATIONS.md): who you want to become and your small goals now.",
            {"content": s},
            set_aspiration,
            ["content"],
            informs=False,
            changes="aspirations",
        ),
        SoulTool(
            "achieve",
            "Record something you achieved, and how it feels.",
            {"what": s, "feeling": s},
            achieve,
            ["what"],
            informs=False,
            changes="achievements",
        ),
        SoulTool(
            "read_diary",
            "Reread your diary: a day (days_ago: 0 is today), lines with these words (query), or the latest lines.",
            {"days_ago": {"type": "integer"}, "query": s},
            read_diary,
            routine=True,
        ),
        SoulTool("read_achievements", "Reread what you have achieved.", {}, read_achievements, routine=True),
    ]
