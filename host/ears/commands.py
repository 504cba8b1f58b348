"""`soulstack ears`: speech from bodies' microphones to the soul's words (docs/ears.md)."""

import asyncio
import dataclasses
import os

from soulstack.config_checks import option
from soulstack.errors import UsageError, connection_failure

DEFAULT_PORT = 9205
DEFAULT_SOUL = "http://127.0.0.1:9202"
HOW_TO_LOCK = "--token-file FILE (or $EARS_TOKEN)"
RECOGNISERS = ("moonshine", "whisper", "wyoming", "pocketsphinx", "openai")


@dataclasses.dataclass(frozen=True)
class EarsSettings:
    """Every option of `soulstack ears`, declared once: its flag, type, default and help (ears has
    no config file; soulstack.config_checks' tables make the flags and this object from it)."""

    host: str = option("127.0.0.1", None, "address to listen on", flag="--host")
    port: int = option(
        DEFAULT_PORT,
        None,
        f"port to listen on (default {DEFAULT_PORT}; 0: any free one)",
        flag="--port",
        metavar="PORT",
    )
    token: str | None = option(
        None, None, "bearer token bodies must send (config.json ears_token)", flag="--token", env="EARS_TOKEN"
    )
    soul: str = option(DEFAULT_SOUL, None, "the soul's URL", flag="--soul")
    soul_token: str | None = option(
        None,
        None,
        "the soul's nudge.token (for its /nudge and /health, and for converse too unless --converse-token)",
        flag="--soul-token",
        env="NUDGE_TOKEN",
    )
    converse_token: str | None = option(
        None,
        None,
        "the soul's converse.token, when it has one of its own (default: --soul-token)",
        flag="--converse-token",
        env="CONVERSE_TOKEN",
    )
    body: list = option(
        [],
        None,
        "a body that may stream to these ears and where its Body Protocol is (repeat for more)",
        flag="--body",
        metavar="NAME=URL",
        many=True,
    )
    body_token: str | None = option(
        None, None, "bearer token the bodies' /speak needs", flag="--body-token", env="BODY_TOKEN"
    )
    recogniser: str | None = option(
        None,
        None,
        "moonshine: Moonshine base in this process, offline, English (the default for English, where its wheel "
        "has a build: x86-64 Linux, Apple silicon); whisper: Whisper in this process, offline (the default "
        "elsewhere, and for Chinese and auto); wyoming: a Wyoming server such "
        "as Home Assistant's wyoming-faster-whisper; pocketsphinx: offline, English, no model to load; openai: "
        "an OpenAI-compatible transcription server",
        flag="--recogniser",
        choices=RECOGNISERS,
    )
    whisper_model: str | None = option(
        None,
        None,
        "Whisper's model (giving one chooses --recogniser whisper): default tiny.en (bundled) for English, base "
        "for Chinese when soulstack[zh] is installed; or a CTranslate2 Whisper folder, or a name such as base or small (fetched once, with progress, only when asked for)",
        flag="--whisper-model",
        metavar="NAME|DIR",
    )
    language: str | None = option(
        None,
        None,
        "the language people speak (default: the soul's, from its /health; en when it cannot be asked)",
        flag="--language",
        choices=("en", "zh", "auto"),
    )
    threads: int = option(2, None, "CPU threads Moonshine or Whisper uses", flag="--threads")
    wyoming_url: str | None = option(
        None, None, "the Wyoming speech-to-text server", flag="--wyoming-url", metavar="tcp://HOST:PORT"
    )
    openai_base_url: str | None = option(
        None, None, "the transcription server, e.g. http://127.0.0.1:8080/v1", flag="--openai-base-url"
    )
    openai_key: str | None = option(
        None, None, "the transcription server's API key", flag="--openai-key", env="OPENAI_API_KEY"
    )
    openai_model: str = option("whisper-1", None, "the transcription model", flag="--openai-model")
    max_seconds: int = option(30, None, "the longest utterance taken, in seconds", flag="--max-seconds")


def parse_bodies(values) -> dict:
    """{name: url} from --body NAME=URL options; UsageError naming a wrong one."""
    from soulstack.ears.server import NAME
    from soulstack.protocol.commands import check_url

    bodies: dict[str, str] = {}
    for value in values or []:
        name, equals, url = value.partition("=")
        name = name.strip()
        if not equals or not NAME.match(name):
            raise UsageError(f"--body {value}: give NAME=URL, e.g. --body stackchan=http://192.168.1.20")
        if name in bodies:  # one of the two would be dropped without a word: which robot answers is unclear
            raise UsageError(
                f"--body {value}: body {name} is named twice (first as {bodies[name]}); give each body one --body"
            )
        bodies[name] = check_url(url, f"--body {name}", "http://192.168.1.20")
    return bodies


def default_recogniser(language: str) -> str:
    """Moonshine for English (fewer words missed in a noisy room than Whisper's tiny.en: docs/ears.md)
    where its wheel is installed; Whisper for other languages, and where Moonshine's wheel has no build
    (a Raspberry Pi: there tiny.en is also the quicker one)."""
    from soulstack.ears.moonshine import model_dir

    return "moonshine" if language == "en" and model_dir() is not None else "whisper"


def make_recogniser(settings: EarsSettings, language: str):
    """The recogniser --recogniser names, for `language` (en, zh or auto); UsageError for a wrong option."""
    from soulstack.ears.recognise import RecogniserError

    # Naming a Whisper model is asking for Whisper.
    chosen = settings.recogniser or ("whisper" if settings.whisper_model else default_recogniser(language))
    if chosen == "openai":
        from soulstack.ears.openai_asr import OpenAITranscriber

        base_url = settings.openai_base_url or os.environ.get("OPENAI_BASE_URL")
        key = settings.openai_key
        if not base_url and not key:
            raise UsageError(
                "--recogniser openai needs a server: --openai-base-url URL (or $OPENAI_BASE_URL) "
                "and, for OpenAI itself, $OPENAI_API_KEY"
            )
        from soulstack.protocol.commands import check_url

        if base_url:
            base_url = check_url(base_url, "--openai-base-url", "http://127.0.0.1:8080/v1")
        return OpenAITranscriber(base_url, key, settings.openai_model)
    if chosen == "wyoming":
        from soulstack.ears.wyoming_asr import WyomingRecogniser

        if not settings.wyoming_url:
            raise UsageError("--recogniser wyoming needs --wyoming-url tcp://HOST:10300 (e.g. wyoming-faster-whisper)")
        return WyomingRecogniser(check_wyoming_url(settings.wyoming_url), language)
    if chosen == "pocketsphinx":
        from soulstack.ears.sphinx import PocketSphinx

        if language != "en":
            raise UsageError(f"pocketsphinx hears English only; for --language {language} use --recogniser whisper")
        return PocketSphinx()
    if not 1 <= settings.threads <= 64:
        raise UsageError("--threads must be from 1 to 64")
    if chosen == "moonshine":
        return local_moonshine(settings, language)
    from soulstack.ears.whisper import Whisper

    try:
        recogniser = Whisper(settings.whisper_model, language, settings.threads)
        recogniser.check()
    except RecogniserError as error:
        raise UsageError(str(error)) from None
    return recogniser


def local_moonshine(settings: EarsSettings, language: str):
    from soulstack.ears.moonshine import Moonshine
    from soulstack.ears.recognise import RecogniserError

    if language != "en":
        raise UsageError(f"Moonshine's model hears English only; for --language {language} use --recogniser whisper")
    if settings.whisper_model:
        raise UsageError("--whisper-model is for --recogniser whisper (Moonshine has its one bundled model)")
    try:
        return Moonshine(settings.threads)
    except RecogniserError as error:
        raise UsageError(str(error)) from None


def check_wyoming_url(url: str) -> str:
    from soulstack.wyoming_link import uri_problem

    if uri_problem(url):
        raise UsageError(f"--wyoming-url {url}: give tcp://HOST:PORT (Home Assistant's ASR listens on 10300)")
    return url


async def soul_language(soul_url: str, token: str | None) -> tuple[str | None, str]:
    """(the language the soul lives in, from its /health `language`, and how that was learnt), or
    (None, why it could not be asked): a soul that refused the token is not a soul that is down."""
    import aiohttp

    headers = {"Authorization": f"Bearer {token}"} if token else {}
    url = soul_url.rstrip("/") + "/health"
    try:
        async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=5)) as session:
            async with session.get(url, headers=headers) as response:
                if response.status == 401:
                    return None, f"the soul refused the token at {url} (401): give --soul-token, its nudge.token"
                if response.status != 200:
                    return None, f"the soul answered {response.status} at {url}"
                language = (await response.json()).get("language")
    except (TimeoutError, aiohttp.ClientError, ValueError) as error:
        why = "its answer was no JSON" if isinstance(error, ValueError) else connection_failure(error)
        return None, f"the soul could not be asked at {url}: {why}"
    if language not in ("en", "zh"):
        return None, "the soul did not say its language"
    return language, "the soul's language"


def ears(parsed) -> int:
    from soulstack.commandline import setup_logging
    from soulstack.config_checks import with_flags
    from soulstack.ears.server import Ears, make_ears_app
    from soulstack.ears.recognise import RecogniserError
    from soulstack.ears.soul import Body, Soul
    from soulstack.protocol.commands import check_url
    from soulstack.serving import check_exposure, run_until_stopped, serve_forever

    settings = with_flags(EarsSettings(), parsed)  # the defaults, and what the command line said
    if not 0 <= settings.port <= 65535:
        raise UsageError("--port must be from 0 to 65535")
    if not 1 <= settings.max_seconds <= 120:
        raise UsageError("--max-seconds must be from 1 to 120")
    soul_url = check_url(settings.soul, "--soul", DEFAULT_SOUL)
    bodies = {name: Body(name, url, settings.body_token) for name, url in parse_bodies(settings.body).items()}
    if not bodies:
        raise UsageError('name at least one body: --body NAME=URL (the robot\'s config.json "name" and its address)')
    check_exposure(settings.host, bool(settings.token), parsed.insecure_no_token, HOW_TO_LOCK)
    language, why = settings.language, "--language"
    if language is None:
        language, why = asyncio.run(soul_language(soul_url, settings.soul_token))
        if language is None:  # said in the start line: English ears for a Chinese soul would mishear it all
            language, why = "en", f"en: {why}; --language says it"
    recogniser = make_recogniser(settings, language)
    setup_logging()  # what each utterance came to (heard, no words, failed) is a log line
    soul = Soul(soul_url, settings.soul_token, converse_token=settings.converse_token)
    state = Ears(recogniser, soul, bodies, settings.max_seconds, language=language)

    async def main():
        try:
            await state.warm()  # the model loaded (or the server asked) before the first robot streams
        except RecogniserError as error:  # a model that is not here and cannot be fetched, say
            raise UsageError(str(error)) from None

        def announce(line: str) -> None:  # once the port is bound: a taken one is an error, never a banner
            print(
                f"ears: POST http://{settings.host}:{settings.port}/utterance (audio/L16; rate=16000) -> "
                f"{recogniser.describe()} ({why}) -> the soul at {soul_url} -> {', '.join(sorted(bodies))}",
                flush=True,
            )
            print(line, flush=True)

        app = make_ears_app(state, settings.token)
        await serve_forever(app, settings.host, settings.port, announce, insecure_no_token=parsed.insecure_no_token)

    return run_until_stopped(main())


def register(subparsers):
    from soulstack.commandline import add_insecure_no_token, add_secret
    from soulstack.config_checks import add_flags

    parser = subparsers.add_parser(
        "ears",
        help="speech to the soul's words for bodies that stream a microphone",
        description="Receives utterance streams from bodies (POST /utterance, 16 kHz PCM), recognises them "
        "(offline by default: Moonshine for English where its wheel has a build, else Whisper; or a Wyoming "
        "server, pocketsphinx, an OpenAI-compatible server), hands the words to the soul through converse and "
        "sends each sentence of its answer to that body's /speak.",
    )
    add_flags(parser, EarsSettings, add_secret=add_secret)
    add_insecure_no_token(parser)
    parser.set_defaults(func=ears)
