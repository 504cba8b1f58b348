"""Helpers for the fault tests (tests/test_faults_*.py, tests/flock/test_storage.py): a small real
disk (tmpfs, which needs root: CI runs as root on Debian), filled and freed; libfaketime's path.
No tests here."""

import glob
import os
import shutil
import subprocess
from pathlib import Path

import pytest


def can_mount() -> str | None:
    """Why a tmpfs cannot be mounted here, or None."""
    if os.geteuid() != 0:
        return "mounting a small tmpfs disk needs root (CI runs the suite as root)"
    if not shutil.which("mount"):
        return "no mount command"
    return None


class Disk:
    """A tmpfs of `size` mounted at `path` for one test: `fill()` takes every free byte, `free()` gives them back."""

    def __init__(self, path: Path, size: str = "8m"):
        self.path, self.size = Path(path), size
        self.filler = self.path / "filler"

    def __enter__(self):
        self.path.mkdir(parents=True, exist_ok=True)
        mounted = subprocess.run(
            ["mount", "-t", "tmpfs", "-o", f"size={self.size}", "tmpfs", str(self.path)],
            capture_output=True,
            text=True,
        )
        if mounted.returncode != 0:  # root in a container without the right to mount, say
            reason = f"cannot mount a tmpfs here: {mounted.stderr.strip() or mounted.returncode}"
            print(f"skipped: {reason}")
            pytest.skip(reason)
        return self

    def __exit__(self, *exc):
        subprocess.run(["umount", "-l", str(self.path)], check=False)

    def fill(self) -> None:
        with open(self.filler, "ab", buffering=0) as handle:
            for size in (1 << 20, 65536, 4096, 1):  # big blocks first, then down to the last byte
                block = b"\0" * size
                try:
                    while handle.write(block):
                        pass
                except OSError:
                    pass

    def free(self) -> None:
        self.filler.unlink(missing_ok=True)

    def free_bytes(self) -> int:
        stat = os.statvfs(self.path)
        return stat.f_bavail * stat.f_frsize


def small_disk(tmp_path, size: str = "8m") -> Disk:
    """A Disk under tmp_path (use it in a with block), or the test skipped saying why it cannot be."""
    reason = can_mount()
    if reason:
        print(f"skipped: {reason}")
        pytest.skip(reason)
    return Disk(tmp_path / "disk", size)


def faketime_library() -> str | None:
    """The path of Debian's libfaketime (tools/test installs it), or None."""
    found = glob.glob("/usr/lib/*/faketime/libfaketime.so.1")
    return found[0] if found else None
