"""`soulstack body stackchan`: a StackChan running xiaozhi firmware, through its xiaozhi-server, as a body."""

import asyncio
import logging
import os

from soulstack.errors import UsageError

log = logging.getLogger(__name__)

DEFAULT_PORT = 9201
DEFAULT_DEVICE_LISTEN = "0.0.0.0:8001"


def host_port(value: str, what: str) -> tuple[str, int]:
    host, _, port = value.rpartition(":")
    if not host or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise UsageError(f"{what} must look like 0.0.0.0:8001, not {value!r}")
    return host.strip("[]"), int(port)


def check_ws_url(url: str) -> str:
    from soulstack.config_checks import split_url

    if split_url(url, ("ws", "wss")) is None:
        raise UsageError(f"--upstream must look like ws://HOST:8000/xiaozhi/v1/, not {url!r}")
    return url


def robot_side_problem(device_host: str, args) -> str | None:
    """Why robots must not be served on `device_host` as asked, or None.

    A robot connection can make the soul's body and speak to the soul, so an
    address other machines reach needs a device token, as every LAN server does.
    """
    from soulstack.exposure import is_loopback

    if is_loopback(device_host) or args.device_token or args.device_auth_key or args.insecure_no_device_token:
        return None
    return (
        f"refusing to listen for robots on {device_host or 'every address'} without a device token (anyone on "
        "the network could become the soul's body): pass xiaozhi-server's server.auth_key with "
        "--device-auth-key-file FILE, or the token your robots send with --device-token-file FILE "
        "(docs/stackchan-xiaozhi.md), or --insecure-no-device-token if that is really what you want"
    )


def announce_trust(device_host: str, args):
    """Say once, at start, how far robots are trusted."""
    if args.device_token or args.device_auth_key:
        return
    if args.insecure_no_device_token:
        log.warning(
            "listening for robots on %s with NO device token (--insecure-no-device-token): anyone who can "
            "reach it can be the soul's body; what a robot hears reaches the soul as a reason, never as a "
            "person's words",
            device_host or "every address",
        )
    else:
        log.info(
            "robots connect to %s without a device token (loopback only): what a robot hears reaches the "
            "soul as a reason, never as a person's words",
            device_host,
        )


async def run_stackchan_body(args, announce=print):
    from soulstack.adapters.stackchan.body import StackChanBody
    from soulstack.adapters.stackchan.wake import XIAOZHI_WAKE_WORDS
    from soulstack.protocol.commands import check_url, nudge_url as checked_nudge_url
    from soulstack.protocol.nudge_sender import NudgeSender

    upstream = check_ws_url(args.upstream)
    tts_url = check_url(args.tts_url, "--tts-url", "http://127.0.0.1:9204/tts")
    device_host, device_port = host_port(args.device_listen, "--device-listen")
    problem = robot_side_problem(device_host, args)
    if problem:
        raise UsageError(problem)
    sender = None
    if args.nudge_url:
        sender = NudgeSender(checked_nudge_url(args.nudge_url), token=args.nudge_token or None)
    body = StackChanBody(
        upstream,
        tts_url=tts_url,
        sender=sender,
        device_token=args.device_token or None,
        device_auth_key=args.device_auth_key or None,
        device_id=args.device_id or None,
        wake_words=args.wake_word or XIAOZHI_WAKE_WORDS,
        tts_voice=args.tts_voice,
        tts_model=args.tts_model,
        tts_key=os.environ.get("OPENAI_API_KEY"),
    )
    try:
        serving = body.serving(
            args.host,
            args.port,
            device_host,
            device_port,
            token=args.token or None,
            insecure_no_token=args.insecure_no_token,
        )
        async with serving as (body_port, robot_port, vision_port):
            announce(
                f"body: Body Protocol on http://{args.host}:{body_port}" + (" (token required)" if args.token else ""),
                flush=True,
            )
            announce(
                f"body: robots connect to ws://{device_host}:{robot_port}/ (relayed to {upstream}); "
                f"photos upload to port {vision_port}",
                flush=True,
            )
            announce_trust(device_host, args)  # once bound: a refusal to start stays one line
            await asyncio.Event().wait()
    except OSError as error:
        why = os.strerror(error.errno) if error.errno else error  # asyncio's own text repeats the address
        raise UsageError(
            f"cannot listen on {device_host}:{device_port} ({why}); choose another --device-listen"
        ) from None


def stackchan(args) -> int:
    from soulstack.commandline import setup_logging
    from soulstack.serving import run_until_stopped

    setup_logging()  # quiets websockets' line per robot connection
    return run_until_stopped(run_stackchan_body(args))


def register(subparsers):
    from soulstack.commandline import add_insecure_no_token, add_nudge_options, add_secret, subcommand_group

    group = subcommand_group(subparsers, "body", "run a body")
    parser = group.add_parser(
        "stackchan",
        help="a StackChan running xiaozhi firmware: proxy between the robot and its xiaozhi-server",
        description="Relay the robot's xiaozhi WebSocket to its xiaozhi-server unchanged and serve Body Protocol v1 "
        "(status, look, speak, express) through it; nudge the soul when the robot wakes, hears its wake word, "
        "or goes quiet.",
    )
    parser.add_argument(
        "--upstream", required=True, help="the xiaozhi-server WebSocket, e.g. ws://HOST:8000/xiaozhi/v1/"
    )
    parser.add_argument("--host", default="127.0.0.1", help="Body Protocol address (default: %(default)s)")
    parser.add_argument("--port", type=int, default=DEFAULT_PORT, help="Body Protocol port (default: %(default)s)")
    add_secret(parser, "--token", "BODY_TOKEN", help="bearer token the soul must send to the Body Protocol side")
    add_insecure_no_token(parser)
    parser.add_argument(
        "--device-listen",
        default=DEFAULT_DEVICE_LISTEN,
        help="where robots connect, HOST:PORT; photos upload to PORT+1 (any free port with PORT 0) "
        "(default: %(default)s)",
    )
    add_secret(
        parser,
        "--device-auth-key",
        "DEVICE_AUTH_KEY",
        help="xiaozhi-server's server.auth_key (with server.auth enabled): accept the per-robot tokens "
        "its OTA hands out, which also prove each robot's Device-Id",
    )
    add_secret(
        parser,
        "--device-token",
        "DEVICE_TOKEN",
        help="a fixed token robots must send as Authorization: Bearer TOKEN (py-xiaozhi's WEBSOCKET_ACCESS_TOKEN)",
    )
    parser.add_argument(
        "--insecure-no-device-token",
        action="store_true",
        help="let any robot connect to a non-loopback --device-listen without a token (what "
        "robots hear then reaches the soul as a reason, never as a person's words)",
    )
    parser.add_argument(
        "--device-id",
        default=os.environ.get("DEVICE_ID"),
        help="the Device-Id (the robot's MAC, e.g. aa:bb:cc:dd:ee:ff) of the one robot that is the "
        "body (default: $DEVICE_ID, else the first robot to connect, for the life of the process)",
    )
    parser.add_argument(
        "--wake-word",
        action="append",
        help="a wake word of xiaozhi-server's `wakeup_words`, once per word and as written there, when you "
        "changed that list: as on the server, the robot's `listen detect` whose text without spaces and "
        "punctuation is one of them (case counts) is its wake word, any other text was typed "
        "(default: xiaozhi-server's own list, 你好小智 ...)",
    )
    add_nudge_options(parser)
    parser.add_argument(
        "--tts-url",
        default="http://127.0.0.1:9204/tts",
        help="`soulstack tts`, or an OpenAI-compatible .../v1/audio/speech (default: %(default)s)",
    )
    parser.add_argument("--tts-voice", help="voice name for the TTS server (default: its own)")
    parser.add_argument("--tts-model", help="model for an OpenAI-compatible TTS (default: tts-1)")
    parser.set_defaults(func=stackchan)
