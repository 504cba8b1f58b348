"""The inner life files in soulDir: the soul's diary, mood, mind, aspirations, achievements, self.

They are irreplaceable, so: every write is atomic (host/soul/atomic.py); each
day the first waking copies every file to soulDir/backups/YYYY-MM-DD/ (kept 14
days by when they were written, the last 7 always); a file that cannot be read
is reported and its newest backup is used —
it is never treated as empty, because the next write would then erase it.

The names are stackchan-soul's so an existing soul's files move over.
"""

import json
import logging
import re
import shutil
import time
from datetime import date, datetime
from pathlib import Path

from soulstack.private_files import make_private_dir, tighten, tighten_tree, write_atomically
from soulstack.soul.atomic import atomic_write_text
from soulstack.soul import database_backup

log = logging.getLogger(__name__)

MOOD, DIARY, MIND = "MOOD.md", "DIARY.md", "MIND.md"
ASPIRATIONS, ACHIEVEMENTS = "ASPIRATIONS.md", "ACHIEVEMENTS.md"
SELF, SELF_HISTORY = "SELF.md", "SELF.history.md"
REMINDERS = "REMINDERS.json"  # the promises of a time (host/soul/reminders/store.py)
ARCHIVE = "archive.sqlite3"  # the whole past, searchable (host/soul/memory/archive.py); copied apart
FILES = (MOOD, DIARY, MIND, ASPIRATIONS, ACHIEVEMENTS, SELF, SELF_HISTORY, REMINDERS)
KEEP_BACKUP_DAYS = 14  # a backup written longer ago than this may go ...
KEEP_BACKUPS = 7  # ... unless it is among the ones written last: these always stay
STAMP = "%Y-%m-%d %H:%M"

# One diary entry / kept matter / achievement per line: "- 2024-05-01 14:03: text".
ENTRY_LINE = re.compile(r"^- (\d{4}-\d{2}-\d{2} \d{2}:\d{2}): ?(.*)$")
# What a soul that moved from stackchan-soul brings (read, kept as written, never written anew):
# diary and achievements "- 2026/12/1 01:54:57: text", kept matters "- text (挂上: 2026/12/1 01:54:57)".
_OLD_STAMP = r"(\d{4})/(\d{1,2})/(\d{1,2}) (\d{1,2}):(\d{2})(?::(\d{2}))?"
OLD_ENTRY_LINE = re.compile(r"^- " + _OLD_STAMP + r": ?(.*)$")
OLD_KEPT_LINE = re.compile(r"^- (.*?) \(挂上: ?" + _OLD_STAMP + r"\)\s*$")
# stackchan-soul keeps the mood in this section of MOOD.md, which others may share.
MOOD_SECTIONS = ("## 当前心情", "## Current mood")


def parse_entry(line: str):
    """(datetime, text) for an entry line in either format, else None."""
    match = ENTRY_LINE.match(line)
    if match:
        return datetime.strptime(match.group(1), STAMP), match.group(2)
    match = OLD_ENTRY_LINE.match(line)
    if match:
        return _old_stamp(match.groups()[:6]), match.group(7)
    match = OLD_KEPT_LINE.match(line)
    if match:
        return _old_stamp(match.groups()[1:7]), match.group(1)
    return None


def _old_stamp(parts) -> datetime:
    year, month, day, hour, minute, second = (int(part or 0) for part in parts)
    return datetime(year, month, day, hour, minute, second)


def replace_section(text: str, heading: str, body: str) -> str | None:
    """`text` with the section under `heading` (up to the next "## ") replaced by `body`; None without it."""
    lines = text.splitlines()
    starts = [i for i, line in enumerate(lines) if line.strip() == heading]
    if not starts:
        return None
    start = starts[0] + 1
    end = next((i for i in range(start, len(lines)) if lines[i].startswith("## ")), len(lines))
    kept_after = ["", *lines[end:]] if end < len(lines) else []
    return "\n".join(lines[:start] + body.rstrip("\n").splitlines() + kept_after) + "\n"


class Unreadable(Exception):
    """A life file exists but cannot be read, and no backup of it exists either."""


def one_line(text: str) -> str:
    return " ".join(str(text).split())


class Life:
    def __init__(self, soul_dir, mood_path: str | None = None):
        # Every file in soulDir holds a person's words: the folder is 0700 and each file 0600,
        # however an older soulstack or stackchan-soul left them (soulstack.private_files).
        # Only the files named here are touched: soulDir may be a folder holding others too.
        self.dir = make_private_dir(soul_dir)
        self.backups = self.dir / "backups"
        for name in FILES:
            tighten(self.dir / name)
        tighten_tree(self.backups)
        self.mood_path = Path(mood_path) if mood_path else None
        self.problems: list[str] = []  # told to the soul at its next waking, then cleared
        self._kept_aside: set[str] = set()  # unreadable files whose bytes are in NAME.damaged already

    def path(self, name: str) -> Path:
        if name == MOOD and self.mood_path:
            return self.mood_path
        return self.dir / name

    # --- raw file access ---------------------------------------------------------------

    def read(self, name: str) -> str:
        """The file's text; "" when it does not exist yet; its newest backup when it cannot be read."""
        path = self.path(name)
        try:
            return path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return ""
        except (OSError, UnicodeDecodeError) as error:
            backup = self.newest_backup(name)
            if backup is None:
                problem = f"{name} cannot be read ({error}) and has no backup; leaving it untouched"
                log.error(problem)
                self._note(problem)
                raise Unreadable(problem) from None
            # Its next write puts the backup's text (and what comes after) in its place: what the damaged
            # file held since that backup (a day's diary lines, say) is kept aside first, once.
            aside = f"; the damaged file is kept as {name}.damaged" if self._keep_aside(name) else ""
            problem = f"{name} cannot be read ({error}); using the backup from {backup.parent.name}{aside}"
            log.error(problem)
            self._note(problem)
            return backup.read_text(encoding="utf-8")

    def _note(self, problem: str):
        if problem not in self.problems:
            self.problems.append(problem)

    def write(self, name: str, text: str) -> None:
        path = self.path(name)
        if path.exists() and self.newest_backup(name) is None:
            self._save_damaged(name)
        atomic_write_text(path, text)

    def _keep_aside(self, name: str) -> bool:
        """Copy an unreadable file's bytes to NAME.damaged, once a life; False when its bytes cannot be read."""
        if name in self._kept_aside:
            return True
        try:
            write_atomically(self.dir / f"{name}.damaged", self.path(name).read_bytes())
        except OSError:
            return False
        self._kept_aside.add(name)
        return True

    def _save_damaged(self, name: str):
        """Before overwriting a file that cannot be read and was never backed up, keep its bytes aside."""
        path = self.path(name)
        try:
            path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            try:
                write_atomically(self.dir / f"{name}.damaged", path.read_bytes())
            except OSError:
                pass

    def append(self, name: str, text: str) -> None:
        current = self.read(name)
        if current and not current.endswith("\n"):
            current += "\n"
        self.write(name, current + text)

    # --- backups -----------------------------------------------------------------------

    def backup_daily(self, today: date) -> None:
        """Copy each readable life file into backups/<today>/ once a day; drop old ones (_prune_backups)."""
        folder = self.backups / today.isoformat()
        make_private_dir(self.backups)
        make_private_dir(folder)
        for name in FILES:
            source, target = self.path(name), folder / name
            if target.exists() or not source.exists():
                continue
            try:
                data = source.read_bytes()
                text = data.decode("utf-8")
                if name.endswith(".json"):
                    json.loads(text)
            except (OSError, ValueError):  # UnicodeDecodeError and json's errors are ValueErrors
                continue  # never let a damaged file become the newest backup
            write_atomically(target, data)
        database_backup.back_up(self.dir / ARCHIVE, folder, self._backup_folders())  # the whole past, too
        self._prune_backups()

    def _prune_backups(self) -> None:
        """Drop a backup only when it is older, by when it was written, than KEEP_BACKUP_DAYS and
        not among the KEEP_BACKUPS written last. Never by the date in its name: a clock that jumped
        ahead a month would otherwise find every backup "old" and delete them all."""
        now = time.time()
        for rank, folder in enumerate(reversed(self._backup_folders())):
            written = folder.stat().st_mtime
            if rank >= KEEP_BACKUPS and now - written > KEEP_BACKUP_DAYS * 86400:
                shutil.rmtree(folder, ignore_errors=True)

    def _backup_folders(self) -> list:
        """The day folders under backups/, oldest written first (by mtime: the order they were written)."""
        folders = []
        if self.backups.is_dir():
            for entry in self.backups.iterdir():
                try:
                    date.fromisoformat(entry.name)
                    folders.append((entry.stat().st_mtime_ns, entry.name, entry))
                except (ValueError, OSError):
                    continue
        return [entry for _written, _name, entry in sorted(folders)]

    def newest_backup(self, name: str) -> Path | None:
        """The copy of `name` written last (not the one whose folder has the latest date)."""
        return next(iter(self.backups_of(name)), None)

    def backups_of(self, name: str) -> list[Path]:
        """Every backup copy of `name`, the one written last first."""
        return [folder / name for folder in reversed(self._backup_folders()) if (folder / name).exists()]

    # --- the shapes inside the files ---------------------------------------------------

    def entries(self, name: str) -> list:
        """[(datetime, text)] for every entry line of DIARY/MIND/ACHIEVEMENTS, in either format."""
        return [entry for entry in map(parse_entry, self.read(name).splitlines()) if entry]

    def add_entry(self, name: str, when: datetime, text: str) -> None:
        self.append(name, f"- {when.strftime(STAMP)}: {one_line(text)}\n")

    def keep(self, when: datetime, matter: str) -> bool:
        """Keep a matter in mind (MIND.md); True when it was kept already: then it is renewed, not
        repeated (it moves to the end with today's date, so it does not fade)."""
        wanted = one_line(matter)
        lines = self.read(MIND).splitlines()
        others = [line for line in lines if not ((entry := parse_entry(line)) and entry[1] == wanted)]
        renewed = len(others) < len(lines)
        others.append(f"- {when.strftime(STAMP)}: {wanted}")
        self.write(MIND, "\n".join(others) + "\n")
        return renewed

    def settle(self, matter: str):
        """Remove one kept matter matched exactly or by a unique prefix. (removed text | None, why not)."""
        wanted = one_line(matter)
        if not wanted:
            return None, "empty"
        lines = self.read(MIND).splitlines()
        kept = [(i, parse_entry(line)) for i, line in enumerate(lines)]
        kept = [(i, entry[1]) for i, entry in kept if entry]
        exact = [(i, text) for i, text in kept if text == wanted]
        found = exact or [(i, text) for i, text in kept if text.startswith(wanted)]
        if not found:
            return None, "none"
        if len(found) > 1 and not exact:
            return None, "ambiguous"
        index, text = found[0]
        del lines[index]
        self.write(MIND, "\n".join(lines) + ("\n" if lines else ""))
        return text, None

    def set_mood(self, text: str) -> None:
        """Write the mood: only its own section when MOOD.md is shared (has one), else the whole file."""
        current = self.read(MOOD)
        for heading in MOOD_SECTIONS:
            replaced = replace_section(current, heading, text)
            if replaced is not None:
                self.write(MOOD, replaced)
                return
        self.write(MOOD, text)

    def reflect(self, when: datetime, content: str) -> None:
        """Replace SELF.md; the previous version goes to the end of SELF.history.md first."""
        previous = self.read(SELF)
        if previous.strip():
            self.append(SELF_HISTORY, f"\n=== until {when.strftime(STAMP)} ===\n{previous.rstrip()}\n")
        self.write(SELF, content.strip() + "\n")
