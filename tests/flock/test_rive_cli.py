"""`soulstack flock export-rive FILE` writes the built-in crows (the same bytes the page gets), a
path it cannot write is one line and exit 2; and an owner's `--rive FILE` is checked at start with
the same checker: a file the page cannot use (missing, not Rive, without the crow machine's inputs)
stops the flock with one line and exit 2 before it serves, a good one is served (files from
tests/fakes/riv.py)."""

import os
import signal
import subprocess
import time
import urllib.request


from soulstack.flock.commands import check_rive
from soulstack.flock.rive.builtin import built_in
from soulstack.flock.rive.check import read
from tests.helpers import free_port
from tests.fakes.riv import obj, riv


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


def flock(soulstack_cmd, tmp_path, rive, **options):
    """`soulstack flock --rive FILE` as a person starts it, model-less, on a port of its own."""
    port = free_port()
    env = {key: value for key, value in os.environ.items() if key not in ("FLOCK_CONFIG", "ANTHROPIC_API_KEY")}
    argv = [*soulstack_cmd, "flock", "--provider", "brainstem", "--port", str(port), "--data", str(tmp_path / "data")]
    return port, subprocess.Popen([*argv, "--rive", str(rive)], env=env, cwd=tmp_path, text=True, **options)


def refused(soulstack_cmd, tmp_path, rive):
    """What the flock says and does for a file it cannot use: exit 2 with one line, nothing served."""
    port, process = flock(soulstack_cmd, tmp_path, rive, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        out, err = process.communicate(timeout=60)
    finally:
        process.kill()
    assert process.returncode == 2, (out, err)
    assert out == "" and err.count("\n") == 1 and "Traceback" not in err, (out, err)
    assert err.startswith(f"soulstack flock: --rive {rive}: "), err
    assert not (tmp_path / "data").exists()  # stopped before it made its data folder, let alone served
    return err


def test_a_missing_rive_file_stops_the_flock_before_it_serves(soulstack_cmd, tmp_path):
    err = refused(soulstack_cmd, tmp_path, tmp_path / "no-such.riv")
    assert "no such file" in err and "leave --rive out" in err
    (tmp_path / "a-folder.riv").mkdir()
    assert "cannot read it (Is a directory)" in refused(soulstack_cmd, tmp_path, tmp_path / "a-folder.riv")


def test_a_file_that_is_not_rive_stops_the_flock(soulstack_cmd, tmp_path):
    (tmp_path / "crows.png").write_bytes(b"\x89PNG\r\n\x1a\n not a rive file")
    err = refused(soulstack_cmd, tmp_path, tmp_path / "crows.png")
    assert "not a Rive file the page can draw (the file does not start with RIVE)" in err
    (tmp_path / "cut.riv").write_bytes(built_in()[:1000])  # a real file, cut short
    assert "the file ends inside" in refused(soulstack_cmd, tmp_path, tmp_path / "cut.riv")


def test_a_rive_file_without_the_contract_stops_the_flock(soulstack_cmd, tmp_path):
    contract = read(built_in())[0].machines[0].inputs
    (tmp_path / "old.riv").write_bytes(riv("crow", {k: v for k, v in contract.items() if k != "talk"}))
    err = refused(soulstack_cmd, tmp_path, tmp_path / "old.riv")
    assert "artboard 'crow': input talk (trigger) is missing" in err
    (tmp_path / "other.riv").write_bytes(riv("bird", contract))
    err = refused(soulstack_cmd, tmp_path, tmp_path / "other.riv")
    assert "artboard 'crow' has no state machine named 'crow' (it has: bird)" in err


def test_a_good_rive_file_is_served_and_what_the_checker_does_not_know_is_a_warning(soulstack_cmd, tmp_path):
    contract = read(built_in())[0].machines[0].inputs
    (tmp_path / "good.riv").write_bytes(riv("crow", contract))
    assert check_rive(str(tmp_path / "good.riv")) == []  # no warning either
    # A part this checker does not know (type 7, a rectangle in the runtime's defs): the runtime may
    # draw it, so the flock says so and serves the file.
    (tmp_path / "editor.riv").write_bytes(riv("crow", contract) + obj(7))
    port, process = flock(soulstack_cmd, tmp_path, tmp_path / "editor.riv", stdout=subprocess.PIPE)
    try:
        served = None
        deadline = time.monotonic() + 30
        while served is None and process.poll() is None and time.monotonic() < deadline:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/rive/flock.riv", timeout=5) as answer:
                    served = answer.read()
            except OSError:
                time.sleep(0.1)
        assert served == (tmp_path / "editor.riv").read_bytes(), f"exit {process.poll()}"
    finally:
        process.send_signal(signal.SIGINT)
        out, _ = process.communicate(timeout=15)
    assert f"flock: --rive {tmp_path / 'editor.riv'}: artboard 'crow': part 1 is a type 7" in out, out
