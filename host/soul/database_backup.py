"""A daily copy of an SQLite life file (the archive, host/soul/memory/archive.py) into backups/.

It lives beside life.py's backups rather than in the memory room, so the life files' daily
backup can include the archive without every room that reads the life files reaching into
memory (pyproject's rooms contract).
"""

import logging
import sqlite3
import threading
import time
from pathlib import Path

from soulstack.private_files import touch_private

log = logging.getLogger(__name__)

KEEP_COPIES = 3  # the archive in the newest this many day folders of backups/ (it is the largest life file)
_copying: set = set()  # targets being written now (one copy of a day at a time)
_copying_lock = threading.Lock()


def back_up(source: Path, folder: Path, folders: list, wait: bool = False):
    """Today's copy of the archive at `source` into the backup day `folder` (once a day), then the copies
    in day folders older than the newest KEEP_COPIES removed; `folders`: every day folder, oldest first.

    The copy runs in a thread of its own, so the waking that asks for it is not held up by a large
    archive (SQLite's online backup reads one consistent snapshot while the soul writes on). A copy a
    kill -9 cut short is a leftover temporary, removed by the next. The thread, or None when there is
    no archive, today's copy exists or is being made; `wait`: return when it is done."""
    target = folder / source.name
    with _copying_lock:
        if not source.exists() or target.exists() or target in _copying:
            return None
        _copying.add(target)
    thread = threading.Thread(target=_copy, args=(source, target, folders), name="archive backup", daemon=True)
    thread.start()
    if wait:
        thread.join()
    return thread


def _copy(source: Path, target: Path, folders: list) -> None:
    try:
        for leftover in target.parent.glob(f".{target.name}.*.tmp"):
            leftover.unlink(missing_ok=True)
        temporary = target.with_name(f".{target.name}.{int(time.time() * 1000)}.tmp")
        touch_private(temporary)
        origin, copy = sqlite3.connect(source), sqlite3.connect(temporary)
        try:
            origin.backup(copy)
        finally:
            copy.close()
            origin.close()
        temporary.replace(target)
        holding = [day for day in folders if (day / target.name).exists() or day == target.parent]
        for day in holding[:-KEEP_COPIES]:
            (day / target.name).unlink(missing_ok=True)
    except (OSError, sqlite3.Error) as error:  # a backup that failed must never disturb the soul
        log.warning("the archive's backup into %s failed (%s); the next day tries again", target.parent, error)
    finally:
        with _copying_lock:
            _copying.discard(target)
