"""`soulstack service install NAME`: write one of deploy/'s systemd units and enable it."""

import errno
import os
import subprocess
from pathlib import Path

from soulstack.errors import UsageError
from soulstack.private_files import PRIVATE_FILE, make_private_dir, tighten, write_atomically
from soulstack.service.units import systemd_reads, where_to_copy


def _write(path: Path, text: str, mode: int) -> None:
    """Write `text` atomically (a half-written unit never exists) with exactly `mode`."""
    try:
        os.unlink(path.with_name(path.name + ".tmp"))  # what an older install that died left behind
    except FileNotFoundError:
        pass
    if not path.parent.is_dir():  # a unit folder that is not there is a mistake to name, not to create
        raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), str(path))
    try:
        write_atomically(path, text.encode(), mode)
    except OSError as error:
        error.filename = str(path)  # the file the user asked for, not the temporary beside it
        raise


def _named(error: OSError) -> str:
    return str(error.filename)


def write_unit(name: str, unit_dir: Path, env_dir: Path) -> tuple[Path, Path, str]:
    """Write soulstack-NAME.service (pointed at this soulstack and at `env_dir`) and, if there is none yet, its
    environment file; (unit path, env path, executable). UsageError, one line, for anything in the way."""
    from soulstack.service import units

    executable = units.soulstack_executable()
    if executable is None:
        raise UsageError("cannot find the soulstack command to run; install soulstack (docs/deploy.md) and try again")
    problem = units.unit_path_problem(executable)
    if problem:
        raise UsageError(f"soulstack is installed at {executable}, which {problem}; install it where the path has none")
    problem = units.unit_path_problem(str(env_dir.absolute()))
    if problem:
        raise UsageError(f"--env-dir {env_dir} {problem}; choose a folder whose path has none")
    unit_path = unit_dir / units.unit_name(name)
    env_path = env_dir / f"{name}.env"
    if not unit_dir.is_dir():  # checked before anything is created: a mistake leaves no folder behind
        raise UsageError(f"cannot write {unit_path} (No such file or directory: {unit_dir} does not exist)")
    try:
        if not env_dir.is_dir():
            make_private_dir(env_dir)  # secrets: 0700 (systemd reads them as root); one already there stays as it is
        _write(unit_path, units.render(name, executable, str(env_dir.absolute())), 0o644)
        if not env_path.exists():  # never overwrite the secrets someone already wrote
            _write(env_path, units.env_template(name), PRIVATE_FILE)
        tighten(env_path)  # but they are secrets: 0600, whoever wrote them
    except PermissionError as error:
        raise UsageError(f"cannot write {_named(error)}: run it as root (sudo soulstack ...)") from None
    except OSError as error:
        raise UsageError(f"cannot write {_named(error)} ({error.strerror})") from None
    return unit_path, env_path, executable


def checkout_note(executable: str) -> str | None:
    from soulstack.service import units

    checkout = units.checkout_of(executable)
    if checkout is None:
        return None
    return (
        f"note: it runs the .venv of the checkout {checkout}: moving or deleting that folder stops the service; "
        "docs/deploy.md installs soulstack in /opt/soulstack instead"
    )


def enable(unit_names: list[str]) -> None:
    """systemctl daemon-reload, then enable --now each unit; UsageError naming what failed."""
    for command in (["systemctl", "daemon-reload"], ["systemctl", "enable", "--now", *unit_names]):
        try:
            done = subprocess.run(command, capture_output=True, text=True)
        except FileNotFoundError:
            raise UsageError(
                "systemctl is not here (is this a systemd machine?); the unit is written, enable it by hand"
            ) from None
        if done.returncode != 0:
            why = (done.stderr.strip().splitlines() or ["no reason given"])[-1]
            raise UsageError(f"{' '.join(command)} failed: {why}")


def restart(unit_names: list[str]) -> None:
    """systemctl restart: what changed in an environment file or config takes effect now."""
    done = subprocess.run(["systemctl", "restart", *unit_names], capture_output=True, text=True)
    if done.returncode != 0:
        why = (done.stderr.strip().splitlines() or ["no reason given"])[-1]
        raise UsageError(f"systemctl restart failed: {why}")


def install(args) -> int:
    try:
        unit_path, env_path, executable = write_unit(args.name, Path(args.unit_dir), Path(args.env_dir))
    except UsageError as error:
        raise UsageError(
            str(error).replace("(sudo soulstack ...)", f"(sudo soulstack service install {args.name})")
        ) from None
    print(f"wrote {unit_path} (runs {executable}); secrets and options go in {env_path}")
    note = checkout_note(executable)
    if note:
        print(note)
    start = f"systemctl daemon-reload && systemctl enable --now {unit_path.name}"
    if not systemd_reads(unit_path.parent):  # systemctl would not find it: say what to copy where
        print(where_to_copy(unit_path.parent, [unit_path], start))
        return 0
    if args.no_enable:
        print(f"start it with: {start}")
        return 0
    enable([unit_path.name])
    print(f"enabled and started {unit_path.name}; follow it with: journalctl -fu {unit_path.name}")
    return 0


def register(subparsers):
    from soulstack.commandline import subcommand_group
    from soulstack.service.units import NAMES

    group = subcommand_group(subparsers, "service", "run a part of soulstack as a systemd service")
    parser = group.add_parser(
        "install",
        help="write and enable a systemd unit from deploy/",
        description="Write soulstack-NAME.service (from deploy/, pointed at this soulstack) and an "
        "environment file for its secrets, then enable and start it. Run as root.",
    )
    parser.add_argument("name", metavar="NAME", choices=NAMES, help=f"one of: {', '.join(NAMES)}")
    parser.add_argument("--unit-dir", default="/etc/systemd/system", help="where the unit goes (default: %(default)s)")
    parser.add_argument(
        "--env-dir", default="/etc/soulstack", help="where its environment file goes (default: %(default)s)"
    )
    parser.add_argument("--no-enable", action="store_true", help="write the files only; do not run systemctl")
    parser.set_defaults(func=install)
