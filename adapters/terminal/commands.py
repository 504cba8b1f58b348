"""`soulstack body terminal`: run the terminal body."""

DEFAULT_PORT = 9310


def terminal(args) -> int:
    from soulstack.adapters.terminal.body import run_terminal_body
    from soulstack.protocol.commands import nudge_url as checked_nudge_url
    from soulstack.serving import run_until_stopped

    nudge_url = checked_nudge_url(args.nudge_url) if args.nudge_url else None
    return run_until_stopped(
        run_terminal_body(
            args.host,
            args.port,
            token=args.token or None,
            nudge_url=nudge_url,
            nudge_token=args.nudge_token or None,
            caption=args.caption,
            insecure_no_token=args.insecure_no_token,
        )
    )


def register(subparsers):
    from soulstack.commandline import (
        add_body_token,
        add_insecure_no_token,
        add_listen_options,
        add_nudge_options,
        subcommand_group,
    )

    group = subcommand_group(subparsers, "body", "run a body")
    parser = group.add_parser(
        "terminal",
        help="the terminal body: your terminal is its face and voice, your keyboard nudges the soul",
        description="Serve Body Protocol v1 (status, look, speak, express) with the terminal as face and "
        "voice. Each line typed on stdin nudges the soul.",
    )
    add_listen_options(parser, DEFAULT_PORT)
    add_body_token(parser)
    add_insecure_no_token(parser)
    add_nudge_options(parser)
    parser.add_argument(
        "--caption", default="", help="a line kept on the screen under the face (tools/demo names the soul's log)"
    )
    parser.set_defaults(func=terminal)
