"""`soulstack ears`: speech from bodies' microphones to the soul's words (docs/ears.md)."""

import asyncio
import os

from soulstack.errors import UsageError

DEFAULT_PORT = 9205
DEFAULT_SOUL = "http://127.0.0.1:9202"
HOW_TO_LOCK = "--token-file FILE (or $EARS_TOKEN)"


def parse_bodies(values) -> dict:
    """{name: url} from --body NAME=URL options; UsageError naming a wrong one."""
    from soulstack.ears.server import NAME
    from soulstack.protocol.commands import check_url

    bodies = {}
    for value in values or []:
        name, equals, url = value.partition("=")
        name = name.strip()
        if not equals or not NAME.match(name):
            raise UsageError(f"--body {value}: give NAME=URL, e.g. --body stackchan=http://192.168.1.20")
        bodies[name] = check_url(url, f"--body {name}", "http://192.168.1.20")
    return bodies


def make_recogniser(args, language: str):
    """The recogniser --recogniser names, for `language` (en, zh or auto); UsageError for a wrong option."""
    from soulstack.ears.recognise import RecogniserError

    if args.recogniser == "openai":
        from soulstack.ears.openai_asr import OpenAITranscriber

        base_url = args.openai_base_url or os.environ.get("OPENAI_BASE_URL")
        key = args.openai_key
        if not base_url and not key:
            raise UsageError(
                "--recogniser openai needs a server: --openai-base-url URL (or $OPENAI_BASE_URL) "
                "and, for OpenAI itself, $OPENAI_API_KEY"
            )
        return OpenAITranscriber(base_url, key, args.openai_model)
    if args.recogniser == "wyoming":
        from soulstack.ears.wyoming_asr import WyomingRecogniser

        if not args.wyoming_url:
            raise UsageError("--recogniser wyoming needs --wyoming-url tcp://HOST:10300 (e.g. wyoming-faster-whisper)")
        return WyomingRecogniser(check_wyoming_url(args.wyoming_url), language)
    if args.recogniser == "pocketsphinx":
        from soulstack.ears.sphinx import PocketSphinx

        if language != "en":
            raise UsageError(f"pocketsphinx hears English only; for --language {language} use --recogniser whisper")
        return PocketSphinx()
    from soulstack.ears.whisper import Whisper

    if not 1 <= args.threads <= 64:
        raise UsageError("--threads must be from 1 to 64")
    try:
        recogniser = Whisper(args.whisper_model, language, args.threads)
        recogniser.check()
    except RecogniserError as error:
        raise UsageError(str(error)) from None
    return recogniser


def check_wyoming_url(url: str) -> str:
    from soulstack.wyoming_link import uri_problem

    if uri_problem(url):
        raise UsageError(f"--wyoming-url {url}: give tcp://HOST:PORT (Home Assistant's ASR listens on 10300)")
    return url


async def soul_language(soul_url: str, token: str | None) -> str | None:
    """The language the soul lives in (its /health `language`), or None when it cannot be asked."""
    import aiohttp

    headers = {"Authorization": f"Bearer {token}"} if token else {}
    try:
        async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=5)) as session:
            async with session.get(soul_url.rstrip("/") + "/health", headers=headers) as response:
                if response.status == 200:
                    language = (await response.json()).get("language")
                    return language if language in ("en", "zh") else None
    except (aiohttp.ClientError, asyncio.TimeoutError, ValueError):
        pass
    return None


def ears(args) -> int:
    from soulstack.commandline import setup_logging
    from soulstack.ears.server import Ears, make_ears_app
    from soulstack.ears.recognise import RecogniserError
    from soulstack.ears.soul import Body, Soul
    from soulstack.protocol.commands import check_url
    from soulstack.serving import check_exposure, run_until_stopped, serve_forever

    if not 0 <= args.port <= 65535:
        raise UsageError("--port must be from 0 to 65535")
    if not 1 <= args.max_seconds <= 120:
        raise UsageError("--max-seconds must be from 1 to 120")
    soul_url = check_url(args.soul, "--soul", DEFAULT_SOUL)
    bodies = {name: Body(name, url, args.body_token) for name, url in parse_bodies(args.body).items()}
    if not bodies:
        raise UsageError('name at least one body: --body NAME=URL (the robot\'s config.json "name" and its address)')
    check_exposure(args.host, bool(args.token), args.insecure_no_token, HOW_TO_LOCK)
    language, why = args.language, "--language"
    if language is None:
        language = asyncio.run(soul_language(soul_url, args.soul_token))
        language, why = (language, "the soul's language") if language else ("en", "the soul did not say its language")
    recogniser = make_recogniser(args, language)
    setup_logging()  # what each utterance came to (heard, no words, failed) is a log line
    state = Ears(recogniser, Soul(soul_url, args.soul_token), bodies, args.max_seconds, language=language)

    async def main():
        try:
            await state.warm()  # the model loaded (or the server asked) before the first robot streams
        except RecogniserError as error:  # a model that is not here and cannot be fetched, say
            raise UsageError(str(error)) from None
        print(
            f"ears: POST http://{args.host}:{args.port}/utterance (audio/L16; rate=16000) -> "
            f"{recogniser.describe()} ({why}) -> the soul at {soul_url} -> {', '.join(sorted(bodies))}",
            flush=True,
        )
        await serve_forever(
            make_ears_app(state, args.token), args.host, args.port, insecure_no_token=args.insecure_no_token
        )

    return run_until_stopped(main())


def register(subparsers):
    from soulstack.commandline import add_insecure_no_token, add_listen_options, add_secret

    parser = subparsers.add_parser(
        "ears",
        help="speech to the soul's words for bodies that stream a microphone",
        description="Receives utterance streams from bodies (POST /utterance, 16 kHz PCM), recognises them "
        "(Whisper offline by default; or a Wyoming server, pocketsphinx, an OpenAI-compatible server), hands the words to the soul "
        "through converse and sends each sentence of its answer to that body's /speak.",
    )
    add_listen_options(parser, DEFAULT_PORT)
    add_secret(parser, "--token", "EARS_TOKEN", "bearer token bodies must send (config.json ears_token)")
    parser.add_argument("--soul", default=DEFAULT_SOUL, help=f"the soul's URL (default {DEFAULT_SOUL})")
    add_secret(parser, "--soul-token", "NUDGE_TOKEN", "the soul's token (its converse.token, or nudge.token)")
    parser.add_argument(
        "--body",
        action="append",
        metavar="NAME=URL",
        help="a body that may stream to these ears and where its Body Protocol is (repeat for more)",
    )
    add_secret(parser, "--body-token", "BODY_TOKEN", "bearer token the bodies' /speak needs")
    parser.add_argument(
        "--recogniser",
        choices=("whisper", "wyoming", "pocketsphinx", "openai"),
        default="whisper",
        help="whisper: Whisper in this process, offline (default); wyoming: a Wyoming server such as Home "
        "Assistant's wyoming-faster-whisper; pocketsphinx: offline, English, no model to load; openai: an "
        "OpenAI-compatible transcription server",
    )
    parser.add_argument(
        "--whisper-model",
        default="tiny.en",
        metavar="NAME|DIR",
        help="tiny.en (bundled, default), a CTranslate2 Whisper folder, or a name such as base or small "
        "(fetched once, with progress, only when asked for)",
    )
    parser.add_argument(
        "--language",
        choices=("en", "zh", "auto"),
        help="the language people speak (default: the soul's, from its /health; en when it cannot be asked)",
    )
    parser.add_argument("--threads", type=int, default=2, help="CPU threads Whisper uses (default 2)")
    parser.add_argument("--wyoming-url", metavar="tcp://HOST:PORT", help="the Wyoming speech-to-text server")
    parser.add_argument("--openai-base-url", help="the transcription server, e.g. http://127.0.0.1:8080/v1")
    add_secret(parser, "--openai-key", "OPENAI_API_KEY", "the transcription server's API key")
    parser.add_argument("--openai-model", default="whisper-1", help="the transcription model (default whisper-1)")
    parser.add_argument(
        "--max-seconds", type=int, default=30, help="the longest utterance taken, in seconds (default 30)"
    )
    add_insecure_no_token(parser)
    parser.set_defaults(func=ears)
