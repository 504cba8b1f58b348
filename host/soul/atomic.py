"""The soul's small state files as text and JSON, and what it does when one is corrupt.

The atomic write itself (temp file, fsync, rename, fsync the folder; 0600) is the ground
floor's soulstack.private_files.write_atomically; this adds the soul's encoding (UTF-8, JSON
indented and unescaped) and `read_state_json`, which sets a corrupt drives or vitals file
aside rather than stopping the soul. Drives, vitals, the life files, the nudge inbox and the
starter config write through here.
"""

import json
from pathlib import Path

from soulstack.private_files import tighten, write_atomically


def atomic_write_text(path, text: str) -> None:
    write_atomically(path, text.encode("utf-8"))


def atomic_write_json(path, data) -> None:
    atomic_write_text(path, json.dumps(data, indent=2, ensure_ascii=False) + "\n")


def read_json(path, default=None):
    """The JSON in `path`, or `default` when the file does not exist. A corrupt file raises ValueError."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        return default
    return json.loads(text)


def read_state_json(path, starting: str, log):
    """The JSON state in `path` (None when there is none yet), for small state files
    the soul can live without (drives, vitals). A corrupt file is set aside as
    `<name>.corrupt` and None returned, with a warning saying the state is `starting`
    afresh (on the caller's `log`): losing a count is a small thing, stopping the soul is not.
    The file is made 0600 if an older soulstack left it otherwise, before its next write does.
    """
    path = Path(path)
    tighten(path)
    try:
        return read_json(path)
    except (ValueError, OSError) as error:
        log.warning("%s is unreadable (%s); set aside as %s.corrupt, %s", path, error, path.name, starting)
        path.replace(path.with_name(path.name + ".corrupt"))
        return None
