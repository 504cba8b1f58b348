"""Files that hold a person's words or secrets: 0600, their folders 0700, whatever was there before.

The soul's folder holds what its person said and what it thought of them; the flock's
holds the lists people gave it and the crows' answers. Another account on the machine
must read none of it. Modes are set with chmod, never left to the umask, and set on
every write: os.open's mode applies only when a file is created, so a file (or a
leftover temporary) made 0644 or 0666 before would otherwise keep that mode for good.

Everything here follows no symbolic link it finds in place of a private file or folder.
"""

import os
import stat
import tempfile
from pathlib import Path

PRIVATE_FILE = 0o600
PRIVATE_DIR = 0o700


def make_private_dir(path) -> Path:
    """Make the folder `path` (and its missing parents) and set it 0700, even if it was there already."""
    path = Path(path)
    path.mkdir(parents=True, exist_ok=True, mode=PRIVATE_DIR)
    os.chmod(path, PRIVATE_DIR)
    return path


def tighten(path) -> None:
    """Set an existing file 0600 (a folder 0700); nothing for a missing path or a symbolic link."""
    try:
        mode = os.lstat(path).st_mode
        if stat.S_ISREG(mode):
            os.chmod(path, PRIVATE_FILE)
        elif stat.S_ISDIR(mode):
            os.chmod(path, PRIVATE_DIR)
    except FileNotFoundError:  # missing, or gone since: an atomic write's temporary, renamed meanwhile
        return


def tighten_tree(path) -> None:
    """`tighten` a folder and everything under it. Only for a folder that is wholly ours (the
    soul's backups), never one a person names, which may hold their other files too."""
    tighten(path)
    for folder, folders, files in os.walk(path):  # os.walk does not enter linked folders
        for name in folders + files:
            tighten(os.path.join(folder, name))


def _private_opener(path, flags: int) -> int:
    fd = os.open(path, flags, PRIVATE_FILE)
    try:
        os.fchmod(fd, PRIVATE_FILE)  # an existing file keeps its mode through O_CREAT: set it
    except BaseException:
        os.close(fd)
        raise
    return fd


def open_private(path, mode: str = "a", **options):
    """`open(path, mode)` whose file is 0600 from this moment on, created or not (appended logs)."""
    return open(path, mode, opener=_private_opener, **options)


def touch_private(path) -> None:
    """Create `path` empty if it is missing, and set it 0600 either way (a database before it is opened)."""
    open_private(path, "ab").close()


def _fsync_dir(folder: Path) -> None:
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return  # some filesystems do not let a folder be opened; the rename is still atomic
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def write_atomically(path, data: bytes, mode: int = PRIVATE_FILE) -> None:
    """Replace `path` with `data` so that a reader sees the old file or the new one, never half of
    each, even across kill -9 or a power cut (temp file, fsync, rename, fsync the folder).

    The file is `mode` (0600 unless told) whatever it was: the temporary is a fresh file with a
    name no one else has (mkstemp, O_EXCL), so no leftover temporary lends it its mode or a link,
    and its mode is set with fchmod rather than left to the umask. A missing folder is made 0700.
    """
    path = Path(path)
    if not path.parent.is_dir():
        make_private_dir(path.parent)
    fd, temp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            os.fchmod(handle.fileno(), mode)
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temp, path)
    except BaseException:
        try:
            os.unlink(temp)
        except FileNotFoundError:
            pass
        raise
    _fsync_dir(path.parent)
