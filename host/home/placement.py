"""Where the home's units and state folders are, as systemd sees them.

`soulstack home init` may be told to write its units where systemd does not look (`--unit-dir`), and
to keep the services' state somewhere other than systemd's own state folder (`--state-dir`). What it
prints and what the units run must agree either way: a unit reads its state where home init wrote it.
(Which folders systemd reads units from is soulstack.service.units': `service install` asks it too.)
"""

import grp
import os
import pwd
from pathlib import Path

SYSTEMD_STATE = Path("/var/lib")  # %S of a system unit: where StateDirectory= makes its folders


def is_systemds_own(state_dir: Path) -> bool:
    """The state folder a unit's %S names: its StateDirectory= is made and owned by systemd."""
    return state_dir.resolve() == SYSTEMD_STATE.resolve()


def owner(folder: Path) -> tuple:
    """(user, group, uid, gid) of `folder`, by name where the system has one (systemd takes either)."""
    info = folder.stat()
    try:
        user = pwd.getpwuid(info.st_uid).pw_name
    except KeyError:
        user = str(info.st_uid)
    try:
        group = grp.getgrgid(info.st_gid).gr_name
    except KeyError:
        group = str(info.st_gid)
    return user, group, info.st_uid, info.st_gid


def make_state_folder(folder: Path, uid: int, gid: int) -> None:
    """A service's state folder outside /var/lib: systemd makes none there, so home init does (0700),
    given to the account the unit runs as."""
    folder.mkdir(mode=0o700, exist_ok=True)
    give(folder, uid, gid)


def give(path: Path, uid: int, gid: int) -> None:
    """`path` to the unit's account (root writes as root; the service must read what home init wrote)."""
    info = path.stat()
    if os.geteuid() == 0 and (info.st_uid, info.st_gid) != (uid, gid):
        os.chown(path, uid, gid)


def with_state_dir(text: str, name: str, state_dir: Path, user: str, group: str) -> str:
    """The unit `text` with its state in `state_dir` instead of systemd's own folder: %S/soulstack-NAME
    spelled out; StateDirectory= (always under /var/lib) gives way to ReadWritePaths=; DynamicUser=
    (whose account owns only what systemd made for it) to the folder's owner."""
    folder = state_dir / f"soulstack-{name}"
    replaced = {
        f"%S/soulstack-{name}": str(folder),
        f"StateDirectory=soulstack-{name}\n": f"ReadWritePaths={folder}\n",
        "DynamicUser=yes\n": f"User={user}\nGroup={group}\n",
        "# Its own user, made by systemd for this service; its files live in the state\n"
        f"# directory (/var/lib/soulstack-{name}), which survives restarts and upgrades.": (
            f"# Run by the owner of its state folder ({folder}, soulstack home init --state-dir):\n"
            "# the account systemd makes for a service (DynamicUser=) owns only a folder it made in /var/lib."
        ),
    }
    for old, new in replaced.items():
        text = text.replace(old, new)
    return text
