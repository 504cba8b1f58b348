"""The `soulstack` command.

Each feature package owns its subcommands in a `commands.py` with one function,
`register(subparsers)`, which adds its parsers and sets `func` on each. This
module only gathers them, so `soulstack --help` lists exactly what is built.
A user mistake raises `UsageError` and becomes one line on stderr, exit 2.
"""

import argparse
import importlib
import importlib.metadata
import logging
import sys

# Feature packages whose `commands.register` adds subcommands, in help order.
COMMAND_MODULES = [
    "soulstack.soul.commands",
    "soulstack.protocol.commands",
    "soulstack.adapters.terminal.commands",
    "soulstack.sim.commands",
    "soulstack.bridge.commands",
    "soulstack.tts.commands",
    "soulstack.flock.commands",
    "soulstack.flash.commands",
]


class UsageError(Exception):
    """A mistake the user can fix; its message is the one line they see."""


def setup_logging(level=logging.INFO):
    """One log format for every long-running command: time, logger, message, on stderr.

    The SDKs' per-request lines ("HTTP Request: POST ...") are kept to warnings,
    so a soul's log says what it lived, not every call it made.
    """
    logging.basicConfig(level=level, format="%(asctime)s %(name)s: %(message)s", datefmt="%H:%M:%S", stream=sys.stderr)
    for chatty in ("httpx", "httpcore", "anthropic", "openai"):
        logging.getLogger(chatty).setLevel(logging.WARNING)


def subcommand_group(subparsers, name: str, help: str):
    """The sub-subcommands under `name` (e.g. `soulstack body terminal`), created once and shared.

    Several packages add to one group: the terminal body, the simulator and the
    xiaozhi adapter all live under `soulstack body`.
    """
    groups = subparsers._soulstack_groups = getattr(subparsers, "_soulstack_groups", {})
    if name not in groups:
        parser = subparsers.add_parser(name, help=help, description=help)
        groups[name] = parser.add_subparsers(dest=f"{name}_command", metavar="KIND", required=True)
    return groups[name]


def installed_version() -> str:
    try:
        return importlib.metadata.version("soulstack")
    except importlib.metadata.PackageNotFoundError:  # run from a checkout that was never installed
        return "(not installed)"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="soulstack",
        description="A life of its own for a desk robot: the soul, its bodies, the flock.",
    )
    parser.add_argument("--version", action="version", version=f"soulstack {installed_version()}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for module_name in COMMAND_MODULES:
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as error:
            # A feature not built yet stays out of --help; a broken import elsewhere does not hide.
            if error.name and module_name.startswith(error.name):
                continue
            raise
        module.register(subparsers)
    return parser


def main(argv=None) -> int:
    try:
        parser = build_parser()
    except KeyboardInterrupt:  # Ctrl+C while the command is still starting up
        return 130
    args = parser.parse_args(argv)
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
    # Run the imported module's main, so `python -m soulstack.cli` raises and catches the
    # same UsageError class the command modules import (not a __main__ copy of it).
    from soulstack.cli import main as imported_main

    sys.exit(imported_main())
