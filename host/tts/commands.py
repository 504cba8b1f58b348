"""`soulstack tts`: host text-to-speech for devices."""

import dataclasses
from pathlib import Path

from soulstack.config_checks import option
from soulstack.errors import UsageError
from soulstack.tts import DEFAULT_VOICE, VOICE_KINDS

DEFAULT_PORT = 9204


def _voice_dir_help() -> str:  # names the folder of this machine's account, so it is asked when --help runs
    from soulstack.tts.piper import default_voice_dir

    return f"where piper:NAME finds NAME.onnx and NAME.onnx.json, and a Chinese voice (default: {default_voice_dir()})"


@dataclasses.dataclass(frozen=True)
class TtsSettings:
    """Every option of `soulstack tts`, declared once (no config file: soulstack.config_checks' tables
    make the flags and this object from it)."""

    host: str = option("127.0.0.1", None, "address to listen on", flag="--host")
    port: int = option(
        DEFAULT_PORT,
        None,
        f"port to listen on (default {DEFAULT_PORT}; 0: any free one)",
        flag="--port",
        metavar="PORT",
    )
    voice: str = option(
        DEFAULT_VOICE,
        None,
        f"{VOICE_KINDS} (default: {DEFAULT_VOICE}, installed with soulstack)",
        flag="--voice",
        metavar="KIND[:WHICH]",
    )
    voice_dir: str | None = option(None, None, _voice_dir_help, flag="--voice-dir", metavar="DIR")
    token: str | None = option(None, None, "bearer token callers must send", flag="--token", env="TTS_TOKEN")


def tts(parsed) -> int:
    from soulstack.commandline import setup_logging
    from soulstack.config_checks import with_flags
    from soulstack.serving import check_exposure, run_until_stopped

    settings = with_flags(TtsSettings(), parsed)  # the defaults, and what the command line said
    if not 0 <= settings.port <= 65535:
        raise UsageError("--port must be from 0 to 65535")
    check_exposure(settings.host, bool(settings.token), parsed.insecure_no_token, "--token-file FILE (or $TTS_TOKEN)")
    setup_logging()  # the one log format of every long-running command
    return run_until_stopped(serve(settings, parsed.insecure_no_token))


async def serve(settings: TtsSettings, insecure_no_token: bool = False):
    import asyncio

    from soulstack.serving import listening
    from soulstack.tts.piper import VoiceProblem
    from soulstack.tts.server import make_tts_app
    from soulstack.tts.voices import open_voices

    try:
        # Loaded and warmed before the first request, so that one is as quick as the rest.
        folder = Path(settings.voice_dir).expanduser() if settings.voice_dir else None  # noqa: ASYNC240 - at start
        voices = await open_voices(settings.voice, folder)
    except VoiceProblem as problem:
        raise UsageError(str(problem)) from None

    app = make_tts_app(settings.token, voices)
    async with listening(app, settings.host, settings.port, insecure_no_token=insecure_no_token) as port:
        # Once it listens, on the port it got (--port 0: a free one): a caller who read this may send at once.
        print(f'tts: POST http://{settings.host}:{port}/tts {{"text": ...}} -> 16 kHz mono WAV', flush=True)
        print(f"tts: {voices.describe()}", flush=True)
        await asyncio.Event().wait()


def register(subparsers):
    from soulstack.commandline import add_insecure_no_token, add_secret
    from soulstack.config_checks import add_flags

    parser = subparsers.add_parser(
        "tts",
        help="text-to-speech for devices: text in, 16 kHz mono WAV out (a Piper neural voice by default)",
        description='Serves POST /tts {"text", optional "voice"/"lang"} and answers a 16 kHz mono 16-bit WAV, '
        "streamed sentence by sentence. Nothing is downloaded: see docs/voice.md.",
    )
    add_flags(parser, TtsSettings, add_secret=add_secret)
    add_insecure_no_token(parser)
    parser.set_defaults(func=tts)
