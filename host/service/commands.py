"""`soulstack service install NAME`: write one of deploy/'s systemd units and enable it."""

import errno
import os
import subprocess
from pathlib import Path

from soulstack.errors import UsageError
from soulstack.private_files import PRIVATE_FILE, make_private_dir, tighten, write_atomically


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


def install(args) -> int:
    from soulstack.service import units

    executable = units.soulstack_executable()
    if executable is None:
        raise UsageError("cannot find the soulstack command to run; install soulstack (docs/deploy.md) and try again")
    unit_dir, env_dir = Path(args.unit_dir), Path(args.env_dir)
    unit_path = unit_dir / units.unit_name(args.name)
    env_path = env_dir / f"{args.name}.env"
    if not unit_dir.is_dir():  # checked before anything is created: a mistake leaves no folder behind
        raise UsageError(f"cannot write {unit_path} (No such file or directory: {unit_dir} does not exist)")
    try:
        if not env_dir.is_dir():
            make_private_dir(
                env_dir
            )  # secrets: 0700 (systemd reads them as root); a folder already there is left as it is
        _write(unit_path, units.render(args.name, executable, str(env_dir.absolute())), 0o644)
        if not env_path.exists():  # never overwrite the secrets someone already wrote
            _write(env_path, units.env_template(args.name), PRIVATE_FILE)
        tighten(env_path)  # but they are secrets: 0600, whoever wrote them
    except PermissionError as error:
        raise UsageError(
            f"cannot write {_named(error)}: run it as root (sudo soulstack service install {args.name})"
        ) from None
    except OSError as error:
        raise UsageError(f"cannot write {_named(error)} ({error.strerror})") from None
    print(f"wrote {unit_path} (runs {executable}); secrets and options go in {env_path}")
    checkout = units.checkout_of(executable)
    if checkout is not None:
        print(
            f"note: it runs the .venv of the checkout {checkout}: moving or deleting that folder stops the service; "
            "docs/deploy.md installs soulstack in /opt/soulstack instead"
        )
    if args.no_enable:
        print(f"start it with: systemctl daemon-reload && systemctl enable --now {unit_path.name}")
        return 0
    for command in (["systemctl", "daemon-reload"], ["systemctl", "enable", "--now", unit_path.name]):
        try:
            done = subprocess.run(command, capture_output=True, text=True)
        except FileNotFoundError:
            raise UsageError(
                "systemctl is not here (is this a systemd machine?); the unit is written, enable it by hand"
            ) from None
        if done.returncode != 0:
            why = (done.stderr.strip().splitlines() or ["no reason given"])[-1]
            raise UsageError(f"{' '.join(command)} failed: {why}")
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
