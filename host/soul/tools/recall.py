"""recall: the soul looks anything up in its whole past; and read_diary's query, through the same index.

What is searched is the archive's entries (host/soul/memory/archive.py): a person's words as they
arrived, what the soul said aloud, its nightly digests and fold summaries (kept there the moment
they exist), and its life files, which `sync_life` brings in before every search: diary lines,
achievements, kept matters (a matter no longer in MIND.md stays findable, as settled) and earlier
selves (SELF.history.md). A file is read again only when it changed, and only its new tail when it
grew as the soul's writers grow it (an append), so a search stays quick in a long life.

A query is words, never search syntax (host/soul/memory/words.py quotes every word). What a
model or a person may send that is no query is a tool error naming what is wrong: not a string,
longer than MAX_QUERY_CHARS, holding control characters, or holding no word at all.
"""

import hashlib
import json
import re
import unicodedata
from datetime import datetime, timedelta

from soulstack.soul import life as lifefiles
from soulstack.soul.memory.archive import STAMP, Entry, stamp
from soulstack.soul.tools import Outcome, SoulTool

MAX_QUERY_CHARS = 300
DEFAULT_HITS, MAX_HITS = 5, 20
DIARY_HITS = 30  # read_diary lists at most this many matching lines (inner.py's READ_MAX_ENTRIES)
HIT_CHARS = 600  # a long hit (a digest, an earlier self) is cut here; recall again with its words for more

# life file -> the kind of entry its lines become
FILE_KINDS = ((lifefiles.DIARY, "diary"), (lifefiles.ACHIEVEMENTS, "achievement"), (lifefiles.MIND, "kept"))
EARLIER_SELF = re.compile(r"^=== until (\d{4}-\d{2}-\d{2} \d{2}:\d{2}) ===$", re.MULTILINE)


def query_problem(query) -> str | None:
    """What makes `query` no query, in words the soul can act on; None when it is one."""
    if not isinstance(query, str):
        return "query must be a string"
    if len(query) > MAX_QUERY_CHARS:
        return f"query is {len(query)} characters long; at most {MAX_QUERY_CHARS}: ask with a few words"
    if any(unicodedata.category(c) == "Cc" and c not in "\t\n" for c in query):
        return "query holds control characters; ask with plain words"
    if not query.strip():
        return "query is empty"
    return None


# --- the life files, into the index ---------------------------------------------------------


def sync_life(soul) -> None:
    """Bring what changed in the life files into the archive's entries (see the module)."""
    archive = soul.session.archive
    for name, kind in FILE_KINDS:
        _sync_file(soul.life, archive, name, lambda text, kind=kind: _lines(text, kind))
    _sync_file(soul.life, archive, lifefiles.SELF_HISTORY, _earlier_selves)


def _sync_file(life, archive, name: str, entries_of) -> None:
    path = life.path(name)
    try:
        status = path.stat()
    except FileNotFoundError:
        return
    key = f"file:{name}"
    known = json.loads(archive.get(key) or "{}")
    if known.get("size") == status.st_size and known.get("mtime") == status.st_mtime_ns:
        return
    data = path.read_bytes()
    old = int(known.get("size", 0))
    # MIND.md is rewritten, not appended to (a renewed matter moves): read whole, so settling is seen.
    grew = name != lifefiles.MIND and 0 < old <= len(data) and data[old - 1 : old] == b"\n"
    grew = grew and hashlib.sha1(data[:old]).hexdigest() == known.get("sha1")
    text = data[old:] if grew else data
    found = entries_of(text.decode("utf-8", errors="replace"))
    archive.remember_all((entry, False) for entry in found)
    if name == lifefiles.MIND:
        _settle_gone(archive, {entry.text for entry in found})
    archive.put(
        key, json.dumps({"size": len(data), "mtime": status.st_mtime_ns, "sha1": hashlib.sha1(data).hexdigest()})
    )


def _lines(text: str, kind: str) -> list:
    out = []
    for line in text.splitlines():
        parsed = lifefiles.parse_entry(line)
        if parsed:
            out.append(Entry(stamp(parsed[0]), kind, "", parsed[1]))
    return out


def _earlier_selves(text: str) -> list:
    marks = list(EARLIER_SELF.finditer(text))
    out = []
    for mark, following in zip(marks, marks[1:] + [None], strict=True):
        body = text[mark.end() : following.start() if following else len(text)].strip()
        out.append(Entry(mark.group(1), "self", "", body))
    return out


def _settle_gone(archive, kept_now: set) -> None:
    """Kept matters no longer in MIND.md were settled (or faded): they stay findable as such."""
    gone = [entry_id for entry_id, _, text in archive.entries("kept") if text not in kept_now]
    if gone:
        archive.rekind(gone, "settled")


# --- the tools ----------------------------------------------------------------------------------


def _who(soul, hit) -> str:
    kinds = soul.lang.TEXT["recall_kinds"]
    if hit.kind == "heard":
        return kinds["heard"].format(who=hit.who or soul.cfg.persona.human)
    return kinds.get(hit.kind, hit.kind)


def _short(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= HIT_CHARS else text[: HIT_CHARS - 1] + "…"


async def recall(soul, query: str, limit: int = DEFAULT_HITS) -> Outcome:
    problem = query_problem(query)
    if problem:
        return Outcome.text(soul.lang.TEXT["bad_input"].format(problem=problem), ok=False)
    sync_life(soul)
    try:
        hits = soul.session.archive.search(query, soul.local_now(), limit=max(1, min(MAX_HITS, int(limit))))
    except ValueError as error:  # no word in it
        return Outcome.text(soul.lang.TEXT["bad_input"].format(problem=str(error)), ok=False)
    if not hits:
        return Outcome.text(soul.lang.TEXT["recall_none"])
    return Outcome.text("\n".join(f"- {hit.at} · {_who(soul, hit)}: {_short(hit.text)}" for hit in hits))


async def diary_query(soul, query: str, days_ago: int | None = None) -> Outcome:
    """read_diary's query: diary lines matching its words (the same index), in the order written."""
    problem = query_problem(query)
    if problem:
        return Outcome.text(soul.lang.TEXT["bad_input"].format(problem=problem), ok=False)
    sync_life(soul)
    between = None
    if days_ago is not None:  # the day is asked of the index: that day's matches, however many newer ones match
        day = (soul.local_now() - timedelta(days=max(0, int(days_ago)))).date()
        between = (day.isoformat(), (day + timedelta(days=1)).isoformat())
    try:
        hits = soul.session.archive.search(query, soul.local_now(), kinds=["diary"], limit=200, between=between)
    except ValueError as error:
        return Outcome.text(soul.lang.TEXT["bad_input"].format(problem=str(error)), ok=False)
    if not hits:
        return Outcome.text(soul.lang.TEXT["diary_none"])
    hits = sorted(hits[:DIARY_HITS], key=lambda hit: hit.at)
    return Outcome.text("\n".join(f"- {hit.at}: {hit.text}" for hit in hits))


def diary_day(soul, day) -> list:
    """[(datetime, text)] of the diary lines of `day` (a date): DIARY.md keeps only its recent part
    (host/soul/memory/diary.py moves the rest into the archive), so the archive's are read too."""
    sync_life(soul)
    start, end = day.isoformat(), (day + timedelta(days=1)).isoformat()
    found = {(at, text) for at, text in soul.session.archive.entries_between("diary", start, end)}
    found |= {(stamp(when), text) for when, text in soul.life.entries(lifefiles.DIARY) if when.date() == day}
    return [(datetime.strptime(at, STAMP), text) for at, text in sorted(found)]


def recall_tools() -> list:
    return [
        SoulTool(
            "recall",
            "Search your whole past: everything a person ever said to you, what you said aloud, your digests, "
            "diary, achievements, kept and settled matters and earlier selves. Give a few words (query); the "
            "best and newest matches come first, each with its date and who said it.",
            {"query": {"type": "string"}, "limit": {"type": "integer"}},
            recall,
            ["query"],
            routine=True,
        )
    ]
