"""`soulstack body terminal`: run the terminal body."""

DEFAULT_PORT = 9310


def terminal(args) -> int:
    from soulstack.adapters.terminal.body import run_terminal_body
    from soulstack.commandline import DEFAULT_NUDGE_URL
    from soulstack.protocol.commands import check_url
    from soulstack.serving import run_until_stopped

    nudge_url = check_url(args.nudge_url, "--nudge-url", DEFAULT_NUDGE_URL) if args.nudge_url else None
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
    from soulstack.commandline import add_insecure_no_token, add_nudge_options, add_secret, subcommand_group

    group = subcommand_group(subparsers, "body", "run a body")
    parser = group.add_parser(
        "terminal",
        help="the terminal body: your terminal is its face and voice, your keyboard nudges the soul",
        description="Serve Body Protocol v1 (status, look, speak, express) with the terminal as face and "
        "voice. Each line typed on stdin nudges the soul.",
    )
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on (default: %(default)s)")
    parser.add_argument("--port", type=int, default=DEFAULT_PORT, help="port to listen on (default: %(default)s)")
    add_secret(parser, "--token", "BODY_TOKEN", "bearer token callers must send")
    add_insecure_no_token(parser)
    add_nudge_options(parser)
    parser.add_argument(
        "--caption", default="", help="a line kept on the screen under the face (tools/demo names the soul's log)"
    )
    parser.set_defaults(func=terminal)
