"""`soulstack tts`: host text-to-speech for devices."""

from soulstack.errors import UsageError

DEFAULT_PORT = 9204


def tts(args) -> int:
    from soulstack.commandline import setup_logging
    from soulstack.serving import check_exposure, run_until_stopped, serve_forever
    from soulstack.tts.server import make_tts_app

    if not 1 <= args.port <= 65535:
        raise UsageError("--port must be from 1 to 65535")
    check_exposure(args.host, bool(args.token), args.insecure_no_token, "--token-file FILE (or $TTS_TOKEN)")
    setup_logging()  # the one log format of every long-running command
    print(f'tts: POST http://{args.host}:{args.port}/tts {{"text": ...}} -> 16 kHz mono WAV', flush=True)
    return run_until_stopped(
        serve_forever(
            make_tts_app(args.token),
            args.host,
            args.port,
            announce=lambda line: None,
            insecure_no_token=args.insecure_no_token,
        )
    )


def register(subparsers):
    from soulstack.commandline import add_insecure_no_token, add_secret

    parser = subparsers.add_parser(
        "tts",
        help="text-to-speech for devices: text in, 16 kHz mono WAV out (espeak-ng)",
        description='Serves POST /tts {"text", optional "voice"} and answers a 16 kHz mono 16-bit WAV made by espeak-ng.',
    )
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"port (default {DEFAULT_PORT})")
    add_secret(parser, "--token", "TTS_TOKEN", "bearer token callers must send")
    add_insecure_no_token(parser)
    parser.set_defaults(func=tts)
