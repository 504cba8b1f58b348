"""What every subcommand shares: one log format, `soulstack GROUP KIND` groups, and secrets.

Every token comes the same way: `--token`, `--token-file FILE`, or an
environment variable (`add_secret`); a LAN bind without one needs
`--insecure-no-token` (`add_insecure_no_token`; the rule is soulstack.exposure's).

Feature packages own their subcommands (a `commands.py` with `register(subparsers)`);
they import this module, never `soulstack.cli`, so the command line has no cycles.
"""

import argparse
import logging
import os
import re
import sys
from pathlib import Path


# Loggers that write a line per HTTP request: the SDKs' clients and aiohttp's access log.
CHATTY_LOGGERS = ("httpx", "httpx2", "httpcore", "anthropic", "openai", "aiohttp.access", "websockets")


class _OurNames(logging.Formatter):
    """Our loggers are named for their module (`logging.getLogger(__name__)`); a line shows that name
    without the package's "soulstack." (`soul.inbox: ...`). Other libraries' names stay whole."""

    def format(self, record: logging.LogRecord) -> str:
        record.where = record.name.removeprefix("soulstack.")
        return super().format(record)


def setup_logging(level=logging.INFO, verbose: bool = False):
    """One log format for every long-running command: time, logger, message, on stderr.

    The per-request lines ("HTTP Request: POST ...", access lines with a user
    agent) are kept to warnings unless `verbose` (a command's --verbose), so a
    log says what happened, not every call that made it happen.
    """
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(_OurNames("%(asctime)s %(where)s: %(message)s", datefmt="%H:%M:%S"))
    logging.basicConfig(level=level, handlers=[handler])
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


# --- one help style --------------------------------------------------------------


class OneHelpStyle(argparse.HelpFormatter):
    """Every command's help in one style, whoever wrote its arguments: a default reads "(default: X)",
    and a value is named for its kind.

    The `soulstack` parser and every subcommand's use it (soulstack.cli.Parser), so a command added
    later follows it without thinking of it; tests/test_cli.py walks every --help to keep it so."""

    def _expand_help(self, action):
        return re.sub(r"\(default (?!:)", "(default: ", super()._expand_help(action))

    def _get_default_metavar_for_optional(self, action):
        """A value's name says its kind, not its flag: URL, TOKEN, DIR (an explicit metavar wins)."""
        dest = action.dest
        if dest.endswith("_url"):
            return "URL"
        if dest.endswith(("_token", "_key")) or dest == "token":
            return "TOKEN"
        if dest.endswith("_dir") or dest == "data":
            return "DIR"
        return super()._get_default_metavar_for_optional(action)


# --- secrets and exposure ------------------------------------------------------


class ReadSecretFile(argparse.Action):
    """`--token-file FILE`: the token is the file's one line, stored where `--token` keeps it.

    A value given on the command line is visible to every account on the machine
    (/proc/PID/cmdline, `ps`); a file (0600) or the environment is not.
    """

    def __call__(self, parser, namespace, path, option_string=None):
        try:
            text = Path(path).read_text(encoding="utf-8")
        except OSError as error:
            raise argparse.ArgumentError(self, f"cannot read {path} ({error.strerror or error})") from None
        except UnicodeDecodeError:
            raise argparse.ArgumentError(self, f"{path} is not UTF-8 text; it must hold the token alone") from None
        secret = text.strip()
        if not secret or "\n" in secret:
            raise argparse.ArgumentError(self, f"{path} must hold the token alone on one line")
        if any(char.isspace() for char in secret):
            raise argparse.ArgumentError(self, f"{path} holds a token with a space in it; a token is one word")
        mode = Path(path).stat().st_mode
        if mode & 0o077:  # told, not refused: the secret is what it is, and the person can mend the file
            print(
                f"warning: {path} is readable by other accounts (mode {mode & 0o777:o}); chmod 600 {path}",
                file=sys.stderr,
            )
        setattr(namespace, self.dest, secret)


def one_word(secret: str) -> str:
    """A secret given as `--token VALUE` or by $ENV is one word, as a --token-file's is: sent as
    "Authorization: Bearer a b" it would never match, and the robot would be locked out unsaid.
    Empty stays allowed: it is how a person says "none" through the environment."""
    if any(char.isspace() for char in secret):  # the message never repeats the secret
        raise argparse.ArgumentTypeError("a token is one word: this one has a space or a line break in it")
    return secret


def add_secret(parser, flag: str, env: str | None, help: str):
    """`flag VALUE` and `flag-file FILE` for one secret, defaulting to $env.

    `help` says what the secret is for; the rest (where it may come from) is added here.
    """
    dest = flag.lstrip("-").replace("-", "_")
    default = os.environ.get(env) if env else None
    where = f"${env}, " if env else ""
    either = parser.add_mutually_exclusive_group()  # both given, one would win unsaid
    either.add_argument(
        flag,
        dest=dest,
        default=default,
        type=one_word,  # argparse runs it on a string default too: $env is checked as the flag is
        help=f"{help} (default: {where}else none); prefer {flag}-file{' or $' + env if env else ''}: "
        "a value given here shows in the process list",
    )
    either.add_argument(
        f"{flag}-file",
        dest=dest,
        action=ReadSecretFile,
        metavar="FILE",
        help=f"read {flag} from FILE (the token alone on one line; keep the file 0600)",
    )


DEFAULT_NUDGE_URL = "http://127.0.0.1:9202/nudge"  # the soul's own default address (soulstack soul)


def add_nudge_options(parser, default: str | None = DEFAULT_NUDGE_URL):
    """--nudge-url and --nudge-token[-file]: where a body's nudges go (None: off unless given)."""
    if default:
        parser.add_argument(
            "--nudge-url", default=default, help="the soul's nudge URL; empty turns nudges off (default: %(default)s)"
        )
    else:
        parser.add_argument("--nudge-url", help=f"the soul's nudge URL, e.g. {DEFAULT_NUDGE_URL} (default: none)")
    add_secret(parser, "--nudge-token", "NUDGE_TOKEN", "bearer token for the soul's nudge endpoint")


def add_serial_port(parser, default: str | None = "auto"):
    """--device PATH|auto: the robot's USB serial port, one name for every command that opens it
    (flash, logs, the bridge). `--port` stays as a hidden alias for flash and logs, where it once meant
    this; everywhere else --port is an HTTP port."""
    shown = f" (default: {default})" if default else ""
    parser.add_argument(
        "--device",
        "--port",
        dest="port",
        default=default,
        metavar="PATH|auto",
        help=f"the robot's USB serial port, or 'auto' to find USB id 303a:1001{shown}",
    )
    # argparse lists every spelling of an option; the old one stays usable but out of the help.
    action = parser._option_string_actions["--port"]
    action.option_strings = ["--device"]
    parser._option_string_actions["--port"] = action


def add_listen_options(parser, port: int, host: str = "127.0.0.1"):
    """--host and --port for a server: the address it binds (loopback unless told) and its HTTP port."""
    parser.add_argument("--host", default=host, help="address to listen on (default: %(default)s)")
    parser.add_argument(
        "--port",
        type=int,
        default=port,
        metavar="PORT",
        help="port to listen on (default: %(default)s; 0: any free one)",
    )


def add_body_token(parser, help: str = "bearer token callers must send"):
    """--token for a body (terminal, simulator, bridge, StackChan adapter): one environment variable,
    $BODY_TOKEN, for every body, as the soul's config reads it (body.token)."""
    add_secret(parser, "--token", "BODY_TOKEN", help)


def add_insecure_no_token(parser):
    """The one way to serve a LAN address without a token, named for what it is."""
    parser.add_argument(
        "--insecure-no-token",
        action="store_true",
        help="listen on a non-loopback address without a token (anyone who reaches it may use it)",
    )
