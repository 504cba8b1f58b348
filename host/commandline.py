"""What every subcommand shares: one log format and `soulstack GROUP KIND` groups.

Feature packages own their subcommands (a `commands.py` with `register(subparsers)`);
they import this module, never `soulstack.cli`, so the command line has no cycles.
"""

import logging
import sys


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

    Several packages add to one group: the terminal body and the simulator both
    live under `soulstack body`.
    """
    groups = subparsers._soulstack_groups = getattr(subparsers, "_soulstack_groups", {})
    if name not in groups:
        parser = subparsers.add_parser(name, help=help, description=help)
        groups[name] = parser.add_subparsers(dest=f"{name}_command", metavar="KIND", required=True)
    return groups[name]
