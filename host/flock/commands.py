"""`soulstack flock`: the flock server and its web page; `soulstack flock jev-report`."""

import os
import sys

from soulstack.errors import UsageError
from soulstack.commandline import add_insecure_no_token, add_secret, setup_logging
from soulstack.flock.lists.flow import FlockConfig
from soulstack.flock.nests.harness import NestConfig


def register(subparsers) -> None:
    defaults = FlockConfig()
    parser = subparsers.add_parser(
        "flock", help="run the flock server and its web page", description="Run the flock server and its web page."
    )
    parser.add_argument(
        "--config",
        metavar="FILE",
        help="the flock's options in a JSON file (flock.config.json; docs/flock-and-soul.md); "
        "flags given here win over it (default: $FLOCK_CONFIG, else none)",
    )
    parser.add_argument("--host", help="address to listen on (default 127.0.0.1)")
    parser.add_argument("--port", type=int, help="port (default 8470)")
    parser.add_argument("--data", help="data directory (default .crows)")
    add_secret(
        parser,
        "--token",
        "FLOCK_TOKEN",
        "lock the flock: every /api/ route and the event stream need this bearer token; the page asks for it once",
    )
    add_insecure_no_token(parser)
    parser.add_argument(
        "--provider",
        choices=["anthropic", "openai", "brainstem"],
        help="model provider (default: anthropic if ANTHROPIC_API_KEY is set, "
        "openai if OPENAI_BASE_URL is set, else brainstem)",
    )
    parser.add_argument("--model", help="model id (default: the provider's default)")
    parser.add_argument(
        "--demo",
        action="store_true",
        default=None,
        help="no model: a scripted flock brain answers every call, paced so you can watch "
        "(the page says it is a demo; docs/try-the-flock-offline.md)",
    )
    parser.add_argument(
        "--demo-pace",
        type=float,
        metavar="SECONDS",
        help="with --demo: about how long each scripted answer takes (default 1.5; 0 answers at once)",
    )
    parser.add_argument("--token-budget", type=int, help=f"tokens per list (default {defaults.token_budget})")
    parser.add_argument(
        "--concurrency", type=int, help=f"items of one list worked at once (default {defaults.concurrency})"
    )
    parser.add_argument(
        "--lists-per-minute",
        type=int,
        help=f"lists one requester may send per minute (default {defaults.lists_per_minute})",
    )
    parser.add_argument(
        "--heartbeat", type=float, help=f"seconds between SSE heartbeat comments (default {defaults.heartbeat_s:g})"
    )
    parser.add_argument(
        "--rive",
        metavar="FILE",
        help="your own .riv file to draw the crows on the page (docs/ui-inputs.md); "
        "without it the flock's built-in crows are drawn (docs/rive-crows.md); "
        "a file the page cannot use stops the flock at start; without the npm runtime the page draws SVG",
    )
    parser.add_argument(
        "--verbose", action="store_true", help="also log every HTTP request (access lines, model calls)"
    )
    parser.add_argument(
        "--jev-band",
        type=float,
        help=f"Jev's high band: at or above it Jev's kind stands (default {NestConfig().band:g})",
    )
    parser.add_argument(
        "--jev-base-url",
        help="tag with an OpenAI-compatible server's logprobs instead of the "
        "local classifier (e.g. http://127.0.0.1:8080/v1)",
    )
    parser.add_argument("--jev-model", default="default", help="the model id for --jev-base-url (default 'default')")
    robot = parser.add_argument_group("the robot", "tell a person on the desk robot what needs them")
    robot.add_argument("--body", help="a Body Protocol body's URL: the flock speaks approvals and shows its mood there")
    add_secret(robot, "--body-token", "BODY_TOKEN", "bearer token for --body")
    robot.add_argument(
        "--body-min-interval", type=float, help="seconds between two utterances; news meanwhile is merged (default 30)"
    )
    robot.add_argument("--quiet-hours", help="local hours with no speech, e.g. 22-7 (news waits for the morning)")
    robot.add_argument(
        "--soul",
        help="the soul living in that body (its base URL, e.g. http://127.0.0.1:9202): "
        "the flock tells the soul with nudges instead of talking over it",
    )
    add_secret(robot, "--soul-token", "NUDGE_TOKEN", "the soul's nudge token")
    robot.add_argument(
        "--soul-min-interval",
        type=float,
        help="seconds between two nudges to the soul; news meanwhile is merged (default 10)",
    )
    parser.set_defaults(func=run)
    commands = parser.add_subparsers(dest="flock_command", metavar="{jev-report,export-rive}")
    report = commands.add_parser(
        "jev-report",
        help="Jev's calibration: reliability table, ECE, accuracy, PNG diagram",
        description="Measure Jev on the held-out examples and on the decisions logged in <data>/jev.jsonl "
        "against the owner's corrections; write a reliability diagram.",
    )
    report.add_argument("--data", default=".crows", help="the flock's data directory (default .crows)")
    report.add_argument("--png", help="where to write the diagram (default <data>/jev-reliability.png)")
    report.set_defaults(func=run_report)
    export = commands.add_parser(
        "export-rive",
        help="write the flock's built-in crows as a .riv file",
        description="Write the page's built-in crows (ten artboards with the crow state machine, "
        "docs/rive-crows.md) to FILE, for a Rive-capable viewer or as the start of your own.",
    )
    export.add_argument("file", metavar="FILE", help="where to write it (e.g. crows.riv)")
    export.set_defaults(func=run_export_rive)


def run_export_rive(args) -> int:
    from soulstack.flock.rive.builtin import built_in

    data = built_in()
    try:
        with open(args.file, "wb") as handle:
            handle.write(data)
    except OSError as error:
        raise UsageError(f"cannot write {args.file}: {error.strerror or error}") from None
    print(f"wrote {args.file} ({len(data):,} bytes: {', '.join(built_in_names())})")
    return 0


def built_in_names() -> list:
    from soulstack.flock.rive.builtin import built_in
    from soulstack.flock.rive.check import read

    return [board.name for board in read(built_in())]


def check_rive(path: str) -> list:
    """An owner's --rive FILE, checked before the flock serves: a file the page cannot draw the crows
    with (missing, unreadable, not a Rive file, or an artboard the page draws without the crow machine
    and its inputs, the built-in file's, which the tests hold to docs/ui-inputs.md) is a UsageError
    naming the first problem; the rest the checker finds comes back as warning lines ([] when sound),
    since the runtime may well draw parts this checker does not know (an editor's file)."""
    from soulstack.flock.personas import BY_NAME
    from soulstack.flock.rive.builtin import built_in
    from soulstack.flock.rive.check import MACHINE, FormatError, check_contract, problems, read

    try:
        with open(path, "rb") as handle:
            data = handle.read()
    except FileNotFoundError:
        raise UsageError(
            f"--rive {path}: no such file; give a .riv file, or leave --rive out for the built-in crows"
        ) from None
    except OSError as error:
        raise UsageError(f"--rive {path}: cannot read it ({error.strerror or error})") from None
    try:
        boards = read(data)
    except (FormatError, IndexError) as error:
        raise UsageError(f"--rive {path}: not a Rive file the page can draw ({error})") from None
    if not boards:
        raise UsageError(f"--rive {path}: the file has no artboard")
    # The page draws a crow with the artboard of its name, any other crow with the first (web/rive.js).
    drawn = [boards[0], *(board for board in boards[1:] if board.name in BY_NAME)]
    contract = read(built_in())[0].machines[0].inputs
    refused = [problem for board in drawn for problem in check_contract(board, MACHINE, contract)]
    if refused:
        more = f" (and {len(refused) - 1} more like it)" if len(refused) > 1 else ""
        raise UsageError(f"--rive {path}: {refused[0]}{more}; docs/ui-inputs.md says what the page needs")
    found = problems(data)  # without the contract: the parts, animations and machines
    shown = [f"--rive {path}: {problem}" for problem in found[:5]]
    if len(found) > 5:
        shown.append(f"--rive {path}: and {len(found) - 5} more problems")
    return shown


def run_report(args) -> int:
    from pathlib import Path

    from soulstack.flock.jev.report import report

    data = Path(args.data)
    if not data.is_dir():
        raise UsageError(f"--data {args.data}: no such directory (run the flock first, or point at its data)")
    png = Path(args.png) if args.png else data / "jev-reliability.png"
    try:
        print(report(data, png))
    except OSError as error:
        raise UsageError(f"cannot write {png}: {error.strerror or error}")
    return 0


def read_config(args) -> list:
    """The config file's values for every flag left unset (flags win); the warnings to print."""
    from soulstack.config_checks import ConfigError
    from soulstack.flock.config import apply

    try:
        return apply(args)
    except ConfigError as error:
        raise UsageError(str(error)) from None


def build_robot(args):
    """The flock's voice on the robot from the flags, or None, and a line saying where it goes.
    Every voice flag is checked, also one that the other voice makes unused."""
    from soulstack.flock.config import parse_quiet_hours
    from soulstack.flock.voice.robot import BodyVoice, SoulVoice

    for flag in ("body", "soul"):
        url = getattr(args, flag)
        if url and not url.startswith(("http://", "https://")):
            raise UsageError(f"--{flag} must be an http(s) URL such as http://127.0.0.1:9310, not {url!r}")
    for flag in ("soul_min_interval", "body_min_interval"):
        if getattr(args, flag) < 0:
            raise UsageError(f"--{flag.replace('_', '-')} must be 0 or more seconds")
    quiet = None
    if args.quiet_hours:
        try:
            quiet = parse_quiet_hours(args.quiet_hours)
        except ValueError:
            raise UsageError(f"--quiet-hours takes START-END hours such as 22-7, not {args.quiet_hours!r}") from None
    if args.soul:
        unused = f"; the body {args.body} is not spoken to (one voice per body: the soul's)" if args.body else ""
        voice = SoulVoice(
            args.soul.rstrip("/") + "/nudge", token=args.soul_token or None, min_interval_s=args.soul_min_interval
        )
        return voice, f"tells the soul at {args.soul} what needs a person (nudges){unused}"
    if args.body:
        voice = BodyVoice(
            args.body, token=args.body_token or None, min_interval_s=args.body_min_interval, quiet_hours=quiet
        )
        return voice, f"speaks on the body at {args.body}" + (f", quiet {args.quiet_hours}" if quiet else "")
    return None, "no robot to tell a person (--body URL or --soul URL)"


def hold_data(data: str):
    """One flock per data folder: two would both work every list and both write its store. The lock
    is the kernel's (soulstack.folder_lock), so a flock killed -9 leaves none behind. Returns the
    open lock file (keep it)."""
    from soulstack.folder_lock import FolderBusy, hold_folder
    from soulstack.storage import storage_problem

    try:
        return hold_folder(data, "flock.lock")
    except FolderBusy:
        raise UsageError(
            f"--data {data}: another flock is running on this folder; stop it, or give this one another --data"
        ) from None
    except OSError as error:
        raise UsageError(f"--data {data}: cannot take its lock ({storage_problem(error) or error})") from None


def build_model(provider_flag, model_id, demo=False, demo_pace=None):
    """The flock's model, or None for the brainstem (no model: items are skipped honestly).
    `demo`: the scripted brain (soulstack.flock.demo), whatever key the environment holds."""
    from soulstack.llm.providers import choose_provider, make_model

    if demo:
        from soulstack.flock.demo.model import PACE_S, DemoModel

        if provider_flag or model_id:
            raise UsageError("--demo runs the scripted brain, no model: drop --provider and --model, or --demo")
        pace = PACE_S if demo_pace is None else demo_pace
        if not 0 <= pace <= 60:
            raise UsageError("--demo-pace must be 0-60 seconds")
        return DemoModel(pace)
    try:
        provider = choose_provider(provider_flag, os.environ)
        return None if provider == "brainstem" else make_model(provider, model_id)
    except ValueError as error:
        raise UsageError(str(error))


def describe(model) -> str:
    """The start line's word on the flock's mind."""
    if model is None:
        return "brainstem (no model: items are skipped; --demo for the scripted flock)"
    if model.provider == "demo":
        return f"demo (scripted: no model thinks, the answers are canned; about {model.pace_s:g} s a call)"
    return f"{model.provider} {model.model_id}"


def build_jev(args):
    """Jev's backend: None for the local classifier, or the logprobs backend."""
    if not args.jev_base_url:
        return None
    from soulstack.flock.jev.llm import LlmJev

    return LlmJev(args.jev_model, args.jev_base_url, os.environ.get("JEV_API_KEY", "none"))


def run(args) -> int:
    from soulstack.flock.app import make_flock_app
    from soulstack.serving import check_exposure, run_until_stopped, serve_forever

    warnings = read_config(args)
    if not 1 <= args.port <= 65535:
        raise UsageError("--port must be 1-65535")
    for name in ("token_budget", "concurrency", "lists_per_minute"):
        if getattr(args, name) < 1:
            raise UsageError(f"--{name.replace('_', '-')} must be at least 1")
    if args.heartbeat <= 0:
        raise UsageError("--heartbeat must be more than 0 seconds")
    if not 0 < args.jev_band <= 1:
        raise UsageError("--jev-band must be more than 0 and at most 1")
    check_exposure(args.host, bool(args.token), args.insecure_no_token, "--token-file FILE (or $FLOCK_TOKEN)")
    rive_warnings = check_rive(args.rive) if args.rive is not None else []  # a file it cannot use stops here
    model = build_model(args.provider, args.model, args.demo, args.demo_pace)
    config = FlockConfig(
        token_budget=args.token_budget,
        concurrency=args.concurrency,
        lists_per_minute=args.lists_per_minute,
        heartbeat_s=args.heartbeat,
    )
    try:
        os.makedirs(args.data, exist_ok=True)
    except OSError as error:
        raise UsageError(f"--data {args.data}: {error.strerror}")
    lock = hold_data(args.data)  # noqa: F841 (held until the process ends)
    setup_logging(verbose=args.verbose)
    for warning in warnings:
        print(f"flock: {warning}", file=sys.stderr, flush=True)
    robot, voice = build_robot(args)
    brain = describe(model)
    print(f"flock: http://{args.host}:{args.port}/  data {args.data}  model {brain}", flush=True)
    print(f"flock: {voice}", flush=True)
    for line in rive_warnings:
        print(f"flock: {line}", flush=True)
    app = make_flock_app(
        args.data,
        model,
        config=config,
        token=args.token or None,
        robot=robot,
        rive=args.rive,
        nest_config=NestConfig(band=args.jev_band),
        jev=build_jev(args),
    )
    return run_until_stopped(
        serve_forever(app, args.host, args.port, announce=lambda line: None, insecure_no_token=args.insecure_no_token)
    )
