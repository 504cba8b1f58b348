"""`soulstack tts`: host text-to-speech for devices."""

from pathlib import Path

from soulstack.errors import UsageError

DEFAULT_PORT = 9204


def tts(args) -> int:
    from soulstack.commandline import setup_logging
    from soulstack.serving import check_exposure, run_until_stopped

    if not 1 <= args.port <= 65535:
        raise UsageError("--port must be from 1 to 65535")
    check_exposure(args.host, bool(args.token), args.insecure_no_token, "--token-file FILE (or $TTS_TOKEN)")
    setup_logging()  # the one log format of every long-running command
    return run_until_stopped(serve(args))


async def serve(args):
    from soulstack.serving import serve_forever
    from soulstack.tts.piper import VoiceProblem
    from soulstack.tts.server import make_tts_app
    from soulstack.tts.voices import open_voices

    try:
        # Loaded and warmed before the first request, so that one is as quick as the rest.
        voices = await open_voices(args.voice, Path(args.voice_dir).expanduser() if args.voice_dir else None)
    except VoiceProblem as problem:
        raise UsageError(str(problem)) from None

    def announce(line):  # once it listens: a caller who read the start line may send at once
        print(f'tts: POST http://{args.host}:{args.port}/tts {{"text": ...}} -> 16 kHz mono WAV', flush=True)
        print(f"tts: {voices.describe()}", flush=True)

    await serve_forever(
        make_tts_app(args.token, voices),
        args.host,
        args.port,
        announce=announce,
        insecure_no_token=args.insecure_no_token,
    )


def register(subparsers):
    from soulstack.commandline import add_insecure_no_token, add_secret
    from soulstack.tts.piper import default_voice_dir
    from soulstack.tts.voices import DEFAULT_VOICE, VOICE_KINDS

    parser = subparsers.add_parser(
        "tts",
        help="text-to-speech for devices: text in, 16 kHz mono WAV out (a Piper neural voice by default)",
        description='Serves POST /tts {"text", optional "voice"/"lang"} and answers a 16 kHz mono 16-bit WAV, '
        "streamed sentence by sentence. Nothing is downloaded: see docs/voice.md.",
    )
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"port (default {DEFAULT_PORT})")
    parser.add_argument(
        "--voice",
        default=DEFAULT_VOICE,
        metavar="KIND[:WHICH]",
        help=f"{VOICE_KINDS} (default: {DEFAULT_VOICE}, installed with soulstack)",
    )
    parser.add_argument(
        "--voice-dir",
        metavar="DIR",
        help=f"where piper:NAME finds NAME.onnx and NAME.onnx.json, and a Chinese voice (default: {default_voice_dir()})",
    )
    add_secret(parser, "--token", "TTS_TOKEN", "bearer token callers must send")
    add_insecure_no_token(parser)
    parser.set_defaults(func=tts)
