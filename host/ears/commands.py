"""`soulstack ears`: speech from bodies' microphones to the soul's words (docs/ears.md)."""

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


def make_recogniser(args):
    from soulstack.ears.recognise import OpenAITranscriber, PocketSphinx

    if args.recogniser == "openai":
        base_url = args.openai_base_url or os.environ.get("OPENAI_BASE_URL")
        key = args.openai_key
        if not base_url and not key:
            raise UsageError(
                "--recogniser openai needs a server: --openai-base-url URL (or $OPENAI_BASE_URL) "
                "and, for OpenAI itself, $OPENAI_API_KEY"
            )
        return OpenAITranscriber(base_url, key, args.openai_model)
    return PocketSphinx()


def ears(args) -> int:
    from soulstack.commandline import setup_logging
    from soulstack.ears.server import Ears, make_ears_app
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
    recogniser = make_recogniser(args)
    setup_logging()  # what each utterance came to (heard, no words, failed) is a log line
    state = Ears(recogniser, Soul(soul_url, args.soul_token), bodies, args.max_seconds)
    print(
        f"ears: POST http://{args.host}:{args.port}/utterance (audio/L16; rate=16000) -> {recogniser.name} -> "
        f"the soul at {soul_url} -> {', '.join(sorted(bodies))}",
        flush=True,
    )
    return run_until_stopped(
        serve_forever(make_ears_app(state, args.token), args.host, args.port, insecure_no_token=args.insecure_no_token)
    )


def register(subparsers):
    from soulstack.commandline import add_insecure_no_token, add_listen_options, add_secret

    parser = subparsers.add_parser(
        "ears",
        help="speech to the soul's words for bodies that stream a microphone",
        description="Receives utterance streams from bodies (POST /utterance, 16 kHz PCM), recognises them "
        "(pocketsphinx offline, or an OpenAI-compatible transcription server), hands the words to the soul "
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
        choices=("pocketsphinx", "openai"),
        default="pocketsphinx",
        help="pocketsphinx: offline, English (default); openai: an OpenAI-compatible transcription server",
    )
    parser.add_argument("--openai-base-url", help="the transcription server, e.g. http://127.0.0.1:8080/v1")
    add_secret(parser, "--openai-key", "OPENAI_API_KEY", "the transcription server's API key")
    parser.add_argument("--openai-model", default="whisper-1", help="the transcription model (default whisper-1)")
    parser.add_argument(
        "--max-seconds", type=int, default=30, help="the longest utterance taken, in seconds (default 30)"
    )
    add_insecure_no_token(parser)
    parser.set_defaults(func=ears)
