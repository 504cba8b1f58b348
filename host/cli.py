"""The `soulstack` command.

Each feature package owns its subcommands in a `commands.py` with one function,
`register(subparsers)`, which adds its parsers and sets `func` on each; the
commands modules import only the ground floor (soulstack.errors,
soulstack.commandline) at the top and their feature when run, so `soulstack
--help` stays fast. A user mistake raises `UsageError` and becomes one line on
stderr, exit 2.
"""

import argparse
import importlib.metadata
import sys

from soulstack.adapters.stackchan import commands as stackchan_commands
from soulstack.adapters.terminal import commands as terminal_commands
from soulstack.bridge import commands as bridge_commands
from soulstack.ears import commands as ears_commands
from soulstack.errors import UsageError
from soulstack.flash import commands as flash_commands
from soulstack.flock import commands as flock_commands
from soulstack.home import commands as home_commands
from soulstack.protocol import commands as protocol_commands
from soulstack.service import commands as service_commands
from soulstack.sim import commands as sim_commands
from soulstack.soul import commands as soul_commands
from soulstack.tts import commands as tts_commands

# Each feature's `register(subparsers)` adds its subcommands, in help order.
COMMANDS = [
    soul_commands,
    protocol_commands,
    terminal_commands,
    stackchan_commands,
    sim_commands,
    bridge_commands,
    tts_commands,
    ears_commands,
    flock_commands,
    flash_commands,
    service_commands,
    home_commands,
]


class Parser(argparse.ArgumentParser):
    """argparse, but a mistake is one line plus where to look, not a screen of usage.

    Subparsers are built from the same class (argparse's default), so every
    subcommand's mistakes read the same way.
    """

    argv: list = []  # what main() parses, to name a mistyped flag (below)

    def __init__(self, *args, **kwargs):
        from soulstack.commandline import OneHelpStyle

        kwargs.setdefault("formatter_class", OneHelpStyle)  # one help style for every subcommand
        super().__init__(*args, **kwargs)

    def error(self, message):
        self.exit(2, f"{self.prog}: {self.stray_value(message) or message} (see: {self.prog} --help)\n")

    def stray_value(self, message: str) -> str | None:
        """`--soul-interval 10` (a mistyped flag) leaves 10 to the sub-subcommand, and argparse blames
        that value ("invalid choice: '10'"); name the flag it belongs to instead."""
        if "invalid choice: '" not in message:
            return None
        value = message.split("invalid choice: '", 1)[1].split("'", 1)[0]
        for before, token in zip(self.argv, self.argv[1:], strict=False):
            if token == value and before.startswith("-") and before.split("=")[0] not in self._option_string_actions:
                return f"unrecognized argument: {before}"
        return None


def installed_version() -> str:
    try:
        return importlib.metadata.version("soulstack")
    except importlib.metadata.PackageNotFoundError:  # run from a checkout that was never installed
        return "(not installed)"


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(
        prog="soulstack",
        description="A life of its own for a desk robot: the soul, its bodies, the flock.",
    )
    parser.add_argument("--version", action="version", version=f"soulstack {installed_version()}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for commands in COMMANDS:
        commands.register(subparsers)
    return parser


def main(argv=None) -> int:
    try:
        parser = build_parser()
    except KeyboardInterrupt:  # Ctrl+C while the command is still starting up
        return 130
    Parser.argv = list(sys.argv[1:] if argv is None else argv)
    args, extra = parser.parse_known_args(argv)
    if extra:
        # argparse reports a subcommand's unknown option from the top parser; name the subcommand.
        words = [
            "soulstack",
            *[getattr(args, key) for key in ("command", f"{args.command}_command") if getattr(args, key, None)],
        ]
        parser.prog = " ".join(words)
        parser.error(f"unrecognized arguments: {' '.join(extra)}")
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        return args.func(args) or 0
    except UsageError as error:
        print(f"soulstack {args.command}: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
