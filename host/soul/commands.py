"""`soulstack soul [--config PATH] [--init] [--host HOST] [--port P]`: run the soul, or write a starter config."""

import logging

from soulstack.soul import config

log = logging.getLogger(__name__)


def register(subparsers):
    parser = subparsers.add_parser(
        "soul",
        help="run the soul (wakes, lives a turn, sleeps; /nudge on 127.0.0.1:9202)",
        description="Run the soul: a life that wakes, senses its body, lives one turn with a model, and sleeps.",
    )
    parser.add_argument(
        "--config", metavar="PATH", help=f"the soul's config (default $SOUL_CONFIG or ./{config.DEFAULT_PATH})"
    )
    parser.add_argument("--init", action="store_true", help="write a starter config for the terminal body and exit")
    parser.add_argument("--host", default="127.0.0.1", help="address the soul's HTTP server binds (default 127.0.0.1)")
    from soulstack.config_checks import add_flags

    add_flags(parser, config.SoulConfig)  # --port: nudge.port, from the soul's table
    parser.add_argument(
        "--verbose", action="store_true", help="also log every HTTP request the soul makes (model calls)"
    )
    from soulstack.commandline import add_insecure_no_token

    add_insecure_no_token(parser)
    parser.set_defaults(func=handle)


def body_command(nudge_port: int | None) -> str:
    """How to start the terminal body for a starter config: told where the soul's /nudge is when
    --port moved it from the body's default."""
    if nudge_port is None or nudge_port == config.Nudge.port:
        return "soulstack body terminal"
    shown = nudge_port or "PORT"  # 0: a free port each start, which the soul's log names
    return f"soulstack body terminal --nudge-url http://127.0.0.1:{shown}/nudge"


def handle(args) -> int:
    from soulstack.config_checks import ConfigError, port, with_flags
    from soulstack.errors import UsageError

    if args.config is not None and not args.config.strip():
        raise UsageError("--config is empty: give the path of the soul's config")
    path = config.resolve_path(args.config)
    try:
        if args.port is not None:  # converse.port and health.port follow it unless the config sets them
            port()("--port", args.port)  # checked as the file's nudge.port is
        if args.init:
            config.write_starter(path, nudge_port=args.port)
            print(f"wrote {path}: a soul living in the terminal body (start the body with `{body_command(args.port)}`)")
            return 0
        cfg, warnings = config.load(path)
        cfg = with_flags(cfg, args)
    except ConfigError as error:
        raise UsageError(str(error)) from None
    except OSError as error:  # --init into a folder that cannot be written
        raise UsageError(f"cannot write {path}: {error.strerror or error}") from None
    from soulstack.commandline import setup_logging

    setup_logging(verbose=args.verbose)
    for warning in warnings:
        log.warning("%s: %s", path, warning)
    from soulstack.soul.run import run_soul

    return run_soul(cfg, host=args.host, insecure_no_token=args.insecure_no_token)
