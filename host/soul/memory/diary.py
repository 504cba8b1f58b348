"""DIARY.md stays light: its old lines move into the archive, the file keeps a bounded recent part.

The diary is only ever appended to, and every waking's snapshot reads it whole (host/soul/snapshot.py
shows its latest lines): at three years it was 3.5 MB, read and parsed each waking. So when the file
grows past TRIM_AT_BYTES, the lines before its newest KEEP_BYTES move into archive.sqlite3
(host/soul/memory/archive.py): each verbatim, in order (`moved_lines`, either diary format, a line
that is no entry too), and each entry as a diary entry `recall` and `read_diary` find. What stays
is the file's preamble (whatever stands before its first entry, a title) and its newest lines, in
the same format as before, so stackchan-soul's reader (life.parse_entry) reads it as ever.

kill -9 safe, like the fold's move: the archive's transaction stores the moved lines, their entries
and a note of the cut (the old file's length and hash, where the cut is); then the file is rewritten
atomically. A process killed between the two finds the note at its next start: a file that still
begins with the old bytes is cut as noted (nothing is moved twice), one that does not was rewritten
already. The first cut of a long diary (an old soul's, or one moved from stackchan-soul) keeps
DIARY.md.before-archive until every line is verified to be in the archive or the file.
"""

import hashlib
import json
import logging
from pathlib import Path

from soulstack.private_files import write_atomically
from soulstack.soul import life as lifefiles
from soulstack.soul.memory.archive import Entry, stamp

log = logging.getLogger(__name__)

TRIM_AT_BYTES = 96 * 1024  # the file is cut when it grows past this (~1,000 lines, two or three weeks) ...
KEEP_BYTES = 48 * 1024  # ... down to its newest lines within this: what the snapshot reads stays flat
BEFORE_ARCHIVE = ".before-archive"  # the first cut's backup, until it is verified
NAME = lifefiles.DIARY


def keep_light(life, archive, name: str = NAME, trim_at: int = TRIM_AT_BYTES, keep: int = KEEP_BYTES) -> int:
    """Finish a cut a kill -9 interrupted, then cut the file if it grew past `trim_at` bytes down to its
    newest lines within `keep`; how many lines moved."""
    path = life.path(name)
    _finish(archive, path, name)
    moved = store_cut(life, archive, name, trim_at, keep)
    if moved:
        _finish(archive, path, name)  # the rewrite, then (the first time) the backup's verification
        log.info("%s: %d old lines moved into the archive", name, moved)
    return moved


def store_cut(life, archive, name: str = NAME, trim_at: int = TRIM_AT_BYTES, keep: int = KEEP_BYTES) -> int:
    """The first half of a cut: the old lines, their entries and the note of the cut, in the archive
    (one transaction); the file is not touched yet. How many lines it stored (0: no cut is due)."""
    path = life.path(name)
    try:
        if path.stat().st_size <= trim_at:
            return 0
        data = path.read_bytes()
        data.decode("utf-8")
    except FileNotFoundError:
        return 0
    except (OSError, UnicodeDecodeError) as error:  # an unreadable diary is life.py's to report, never cut
        log.warning("%s cannot be read (%s); it is not cut", name, error)
        return 0
    head, cut = _cut_points(data, keep)
    if cut <= head:
        return 0
    if archive.get(f"cut:{name}:done") is None:  # the first cut of this diary: a copy until verified
        write_atomically(path.with_name(path.name + BEFORE_ARCHIVE), data)
    moving = _lines(data[head:cut])
    note = {"len": len(data), "sha1": _sha1(data), "head": head, "cut": cut}
    archive.move_lines(name, moving, _entries(moving), f"cut:{name}", json.dumps(note))
    return len(moving)


def _cut_points(data: bytes, keep: int) -> tuple:
    """(end of the preamble, start of the kept part): byte offsets on line starts in `data`."""
    starts, at = [], 0
    for line in data.splitlines(keepends=True):
        starts.append((at, line))
        at += len(line)
    head = next((offset for offset, line in starts if lifefiles.parse_entry(_text(line))), len(data))
    cut = len(data) - keep
    cut = next((offset for offset, _ in starts if offset >= cut), len(data))
    # The kept part begins on an entry: an entry's continuation lines move with it.
    cut = next((offset for offset, line in starts if offset >= cut and lifefiles.parse_entry(_text(line))), cut)
    return head, max(head, cut)


def _finish(archive, path: Path, name: str) -> None:
    """The rewrite a stored cut asks for, when the file still begins as it did (see the module); then,
    after a first cut, the backup's verification; the note is cleared last, so a kill anywhere here
    is finished at the next call."""
    noted = archive.get(f"cut:{name}")
    if not noted:
        return
    note = json.loads(noted)
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        data = b""
    if len(data) >= note["len"] and _sha1(data[: note["len"]]) == note["sha1"]:
        write_atomically(path, data[: note["head"]] + data[note["cut"] :])
    backup = path.with_name(path.name + BEFORE_ARCHIVE)
    if backup.exists():
        _verify(archive, path, name, backup)
    archive.put_many({f"cut:{name}": "", f"cut:{name}:done": "1"})


def _entries(lines: list) -> list:
    """The moved lines' entries for recall, keyed as recall's own sync keys a diary line (no repeat)."""
    out = []
    for line in lines:
        parsed = lifefiles.parse_entry(line)
        if parsed:
            out.append((Entry(stamp(parsed[0]), "diary", "", parsed[1]), False))
    return out


def _verify(archive, path: Path, name: str, backup: Path) -> None:
    """Every line of the old file is in the archive or the file, once and in order: then the copy goes."""
    before, now = _lines(backup.read_bytes()), _lines(path.read_bytes())
    head = next((i for i, line in enumerate(now) if lifefiles.parse_entry(line)), len(now))
    after = now[:head] + archive.moved_lines(name) + now[head:]
    if after[: len(before)] == before:
        backup.unlink()
        log.info("%s: migrated %d lines into the archive; the copy is removed", name, len(before))
    else:
        log.warning("%s: its move into the archive could not be verified; the old file is kept as %s", name, backup)


def _lines(data: bytes) -> list:
    """The file's lines as the soul's writers end them (at a newline only: a line may hold U+2028)."""
    return [line.decode("utf-8") for line in data.splitlines()]


def _text(line: bytes) -> str:
    return line.decode("utf-8").rstrip("\r\n")


def _sha1(data: bytes) -> str:
    return hashlib.sha1(data).hexdigest()


def on_waking_end(soul, waking) -> None:
    """After each waking (a hook): one stat of the file, and a cut when it grew too long."""
    keep_light(soul.life, soul.session.archive)
