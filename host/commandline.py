"""What every subcommand shares: one log format and `soulstack GROUP KIND` groups.

Feature packages own their subcommands (a `commands.py` with `register(subparsers)`);
they import this module, never `soulstack.cli`, so the command line has no cycles.
"""

import logging
import sys


# Loggers that write a line per HTTP request: the SDKs' clients and aiohttp's access log.
CHATTY_LOGGERS = ("httpx", "httpx2", "httpcore", "anthropic", "openai", "aiohttp.access")


def setup_logging(level=logging.INFO, verbose: bool = False):
    """One log format for every long-running command: time, logger, message, on stderr.

    The per-request lines ("HTTP Request: POST ...", access lines with a user
    agent) are kept to warnings unless `verbose` (a command's --verbose), so a
    log says what happened, not every call that made it happen.
    """
    logging.basicConfig(level=level, format="%(asctime)s %(name)s: %(message)s", datefmt="%H:%M:%S", stream=sys.stderr)
    for chatty in CHATTY_LOGGERS:
        logging.getLogger(chatty).setLevel(logging.NOTSET if verbose else logging.WARNING)


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
