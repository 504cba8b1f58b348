"""Storage faults: a full disk, a read-only or failing one, a database that cannot write.

`storage_problem(error)` says in one line what went wrong with the storage, or None when the
error is something else. The serving layer answers such an error 503 naming the cause (the
request was fine; the server cannot keep it right now), the soul's /health files it under
`storage_failing` rather than blaming its model, and the flock's lists wait for the storage to
come back instead of dying (`through_storage_faults`, used by host/flock/lists/flow.py).
"""

import asyncio
import errno
import logging
import os
import sqlite3

log = logging.getLogger(__name__)

RETRY_WAITS_S = (0.5, 1.0, 2.0, 5.0)  # waits between tries while the storage refuses writes

# errno values that mean "the storage", not "the request" or "a bug".
_CAUSES = {
    errno.ENOSPC: "the disk is full",
    errno.EDQUOT: "the disk quota is used up",
    errno.EROFS: "the disk is read-only",
    errno.EIO: "the disk failed (input/output error)",
    errno.EFBIG: "a file grew past the largest this disk allows",
}
# SQLite's primary result codes that mean the same (extended codes share their low byte).
_SQLITE_CAUSES = {
    13: "the disk is full",  # SQLITE_FULL
    10: "the disk failed (SQLite I/O error)",  # SQLITE_IOERR
    8: "the database is read-only",  # SQLITE_READONLY
    14: "the database file cannot be opened",  # SQLITE_CANTOPEN
    11: "the database file is damaged",  # SQLITE_CORRUPT
    26: "the database file is not a database",  # SQLITE_NOTADB
}
# The codes SQLite gives for a full disk when it fails before it can say SQLITE_FULL; a damaged
# or foreign file (CORRUPT, NOTADB) is named as it is, full disk or not.
_FULL_AS = (10, 14)  # SQLITE_IOERR, SQLITE_CANTOPEN


def code_is(code, primaries) -> bool:
    return isinstance(code, int) and code & 0xFF in primaries


def storage_problem(error: BaseException, folder=None) -> str | None:
    """One line naming the storage fault behind `error`, or None when it is not one. With the
    `folder` the failed file lives in, an I/O error on a disk with no room left says so."""
    if isinstance(error, sqlite3.Error):
        code = getattr(error, "sqlite_errorcode", None)
        cause = _SQLITE_CAUSES.get(code & 0xFF) if isinstance(code, int) else None
        if cause is None and "disk is full" in str(error):  # an SQLite built without error codes
            cause = "the disk is full"
        if code_is(code, _FULL_AS) and folder is not None and _no_room(folder):
            cause = "the disk is full"  # SQLite opening a database says "I/O error" for it
        return f"{cause} ({error})" if cause else None
    if isinstance(error, OSError) and error.errno in _CAUSES:
        where = f": {error.filename}" if error.filename else ""
        return f"{_CAUSES[error.errno]}{where}"
    return None


def _no_room(folder) -> bool:
    try:
        stat = os.statvfs(folder)
    except OSError:
        return False
    return stat.f_bavail == 0


def storage_problem_in(text: str | None) -> str | None:
    """The storage fault an error's text names (an OSError written as "[Errno 28] ..."), or None.
    For a failure kept only as a line, such as the soul's last error."""
    for code, cause in _CAUSES.items():
        if text and f"[Errno {code}]" in text:
            return cause
    return None


async def through_storage_faults(what: str, attempt, sleep, before_retry=None):
    """Run `attempt()` until it ends without a storage fault, `sleep`ing between tries (and
    calling `before_retry()`, such as a store asking its WAL's space back). The first fault is
    logged once, naming `what` waits; any other error propagates. -> what `attempt()` returned."""
    waits = 0
    while True:
        try:
            return await attempt()
        except asyncio.CancelledError:
            raise
        except Exception as error:
            problem = storage_problem(error)
            if problem is None:
                raise
            if waits == 0:
                log.error("%s waits for the storage: %s", what, problem)
        await sleep(RETRY_WAITS_S[min(waits, len(RETRY_WAITS_S) - 1)])
        waits += 1
        if before_retry is not None:
            before_retry()
