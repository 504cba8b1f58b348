"""`soulstack flock export-rive FILE` writes the built-in crows (the same bytes the page gets), a
path it cannot write is one line and exit 2; and an owner's `--rive FILE` is checked at start with
the same checker, each problem one line (files from tests/fakes/riv.py)."""

import subprocess

from soulstack.flock.commands import check_rive
from soulstack.flock.rive.builtin import built_in
from soulstack.flock.rive.check import read
from tests.fakes.riv import riv


def run(soulstack_cmd, *args):
    return subprocess.run([*soulstack_cmd, *args], capture_output=True, text=True, timeout=60)


def test_export_rive_writes_the_built_in_file(soulstack_cmd, tmp_path):
    done = run(soulstack_cmd, "flock", "export-rive", str(tmp_path / "crows.riv"))
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "crows.riv").read_bytes() == built_in()
    assert "Sentry" in done.stdout and f"{len(built_in()):,} bytes" in done.stdout
    done = run(soulstack_cmd, "flock", "export-rive", str(tmp_path / "no-such-folder" / "crows.riv"))
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.count("\n") == 1 and "cannot write" in done.stderr and "No such file" in done.stderr


def test_an_owners_rive_file_is_checked_against_the_contract(tmp_path):
    contract = read(built_in())[0].machines[0].inputs
    (tmp_path / "good.riv").write_bytes(riv("crow", contract))
    assert check_rive(str(tmp_path / "good.riv")) == []
    (tmp_path / "old.riv").write_bytes(riv("crow", {k: v for k, v in contract.items() if k != "talk"}))
    assert check_rive(str(tmp_path / "old.riv")) == [
        f"--rive {tmp_path / 'old.riv'}: artboard 'crow': input talk (trigger) is missing"
    ]
    (tmp_path / "junk.riv").write_bytes(b"not a rive file")
    (line,) = check_rive(str(tmp_path / "junk.riv"))
    assert "does not start with RIVE" in line
