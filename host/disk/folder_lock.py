"""One process per folder: a kernel lock on a file inside it.

Two flocks on one data folder would both work every list; two souls on one soulDir would
each rewrite the other's inbox and lose a nudge one of them acknowledged. `hold_folder`
takes an exclusive `flock(2)` lock on `<folder>/<name>` without waiting. The lock is the
kernel's: it goes with the process, so a process killed -9 leaves no stale lock behind, and
the (empty) lock file left in place means nothing by itself.
"""

import fcntl
import os

PRIVATE_FILE = 0o600  # as soulstack.private_files makes them (a layer above: this stands below serving)


class FolderBusy(Exception):
    """Another process holds the folder's lock."""


def hold_folder(folder, name: str):
    """Lock `<folder>/<name>` (made 0600 if missing) for as long as the returned file is open.

    Raises FolderBusy when another process holds it; an OSError (a full disk cannot make the
    file) propagates for the caller to name."""
    fd = os.open(os.path.join(folder, name), os.O_WRONLY | os.O_CREAT | os.O_APPEND, PRIVATE_FILE)
    os.fchmod(fd, PRIVATE_FILE)  # an existing lock file keeps its mode through O_CREAT: set it
    handle = os.fdopen(fd, "a")
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        handle.close()
        raise FolderBusy(os.path.join(folder, name)) from None
    return handle
