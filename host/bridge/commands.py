"""`soulstack bridge serial`: a robot on a USB cable, served as a Body Protocol v1 body."""

import logging

DEFAULT_LISTEN = "127.0.0.1:9201"


def parse_listen(text: str) -> tuple[str, int]:
    from soulstack.errors import UsageError

    host, sep, port = text.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise UsageError(f"--listen takes HOST:PORT such as {DEFAULT_LISTEN}, not {text!r}")
    return host.strip("[]"), int(port)


def locator(device: str):
    """What the link calls before each (re)open: the fixed path, or a fresh search by USB id."""
    from soulstack.serial_ports import find_esp32s3

    if device == "auto":
        return find_esp32s3
    return lambda: device


def bridge_serial(args) -> int:
    from soulstack.protocol.nudge_sender import NudgeSender
    from soulstack.serving import check_exposure, run_until_stopped, serve_forever
    from soulstack.bridge.app import make_bridge_app
    from soulstack.bridge.serial_link import SerialLink
    from soulstack.errors import UsageError
    from soulstack.commandline import setup_logging
    from soulstack.protocol.commands import nudge_url as checked_nudge_url
    from soulstack.serial_ports import not_a_port

    host, port = parse_listen(args.listen)
    check_exposure(host, bool(args.token), args.insecure_no_token, "--token-file FILE (or $BODY_TOKEN)")
    problem = None if args.device == "auto" else not_a_port(args.device)
    if problem:  # a typo: the link would wait for it forever
        raise UsageError(f"{problem}; --device takes the robot's USB serial port (or auto)")
    if args.baud <= 0:
        raise UsageError(f"--baud must be positive, not {args.baud}")
    if args.nudge_url:
        args.nudge_url = checked_nudge_url(args.nudge_url)
    setup_logging(logging.DEBUG if args.verbose else logging.INFO, verbose=args.verbose)

    link = SerialLink(locator(args.device), baud=args.baud)
    nudges = NudgeSender(args.nudge_url, token=args.nudge_token) if args.nudge_url else None
    app = make_bridge_app(link, token=args.token, nudges=nudges)

    def announce(line: str) -> None:  # once the port is bound: a taken one is an error, never a banner
        print(f"serial bridge: robot on {args.device}, Body Protocol v1 served", flush=True)
        print(line, flush=True)

    return run_until_stopped(
        serve_forever(app, host, port, announce=announce, insecure_no_token=args.insecure_no_token)
    )


def logs(args) -> int:
    from soulstack.bridge.logs import follow

    follow(args.port)
    return 0


def register(subparsers):
    from soulstack.commandline import (
        add_body_token,
        add_insecure_no_token,
        add_nudge_options,
        add_serial_port,
        subcommand_group,
    )

    parser = subparsers.add_parser(
        "logs",
        help="follow the robot's serial log (USB cable)",
        description="Print the robot's log lines from its USB serial port as they come; waits for the robot "
        "when it restarts or is unplugged. Ctrl+C stops. Not while a bridge or flash holds the port.",
    )
    add_serial_port(parser)
    parser.set_defaults(func=logs)

    group = subcommand_group(subparsers, "bridge", "bridge a robot on a cable to Body Protocol v1")
    parser = group.add_parser(
        "serial",
        help="serve a robot on a USB serial port as a Body Protocol v1 body",
        description="Open the robot's USB serial port and serve /status /look /speak /express over HTTP. "
        "Unplugging is noticed within seconds (/status says online: false, acting answers 503); "
        "plugging back in reconnects by itself. Nudges from the robot are forwarded to --nudge-url.",
    )
    parser.add_argument(
        "--device",
        required=True,
        metavar="PATH|auto",
        help="the robot's USB serial port, or 'auto' to find USB id 303a:1001",
    )
    parser.add_argument("--listen", default=DEFAULT_LISTEN, help="HOST:PORT to serve on (default: %(default)s)")
    add_body_token(parser, "demand Authorization: Bearer TOKEN on every request")
    add_insecure_no_token(parser)
    add_nudge_options(parser)  # the soul's own address unless told otherwise ("" turns nudges off)
    parser.add_argument(
        "--baud", type=int, default=115200, help="serial speed (default: %(default)s; USB serial ignores it)"
    )
    parser.add_argument(
        "--verbose",
        action="store_true",
        help="also log serial noise (boot messages, REPL output); the robot's own log lines are always shown",
    )
    parser.set_defaults(func=bridge_serial)
