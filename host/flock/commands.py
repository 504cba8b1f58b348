"""`soulstack flock`: the flock server and its web page; `soulstack flock jev-report`."""

import os
import re
import sys

from soulstack.errors import UsageError
from soulstack.commandline import add_insecure_no_token, add_secret, setup_logging
from soulstack.flock.lists.flow import FlockConfig
from soulstack.flock.nests.harness import NestConfig


def register(subparsers) -> None:
    from soulstack.config_checks import add_flags
    from soulstack.flock.config import FlockSettings

    parser = subparsers.add_parser(
        "flock", help="run the flock server and its web page", description="Run the flock server and its web page."
    )
    parser.add_argument(
        "--config",
        metavar="FILE",
        help="the flock's options in a JSON file (flock.config.json; docs/flock-and-soul.md); "
        "flags given here win over it (default: $FLOCK_CONFIG, else none)",
    )
    add_insecure_no_token(parser)
    parser.add_argument(
        "--verbose", action="store_true", help="also log every HTTP request (access lines, model calls)"
    )
    robot = parser.add_argument_group("the robot", "tell a person on the desk robot what needs them")
    # Every other option is one field of the flock's table (soulstack.flock.config), its flag included.
    add_flags(parser, FlockSettings, groups={"body": robot, "soul": robot}, add_secret=add_secret)
    parser.set_defaults(func=run)
    commands = parser.add_subparsers(dest="flock_command", metavar="{jev-report,export-rive}")
    report = commands.add_parser(
        "jev-report",
        help="Jev's calibration: reliability table, ECE, accuracy, PNG diagram",
        description="Measure Jev on the held-out examples and on the decisions logged in <data>/jev.jsonl "
        "against the owner's corrections; write a reliability diagram.",
    )
    data = FlockSettings().data_dir  # the flock's own default folder, from its table
    report.add_argument("--data", default=data, help=f"the flock's data directory (default {data})")
    report.add_argument("--png", help="where to write the diagram (default <data>/jev-reliability.png)")
    report.add_argument(
        "--judge",
        action="store_true",
        help="also fit the flock's LLM backend on training messages and measure it on the separate set: "
        "the logprobs Jev where --jev-base-url is given before jev-report (one call a message, about 500 "
        "in all; the fit goes to <data>/jev-logprobs.json), else the judge through the flock's model (the "
        "key in the environment, or 'soulstack flock --model M jev-report --judge'; three calls a message, "
        "about 1,500; <data>/jev-judge.json)",
    )
    report.add_argument(
        "--judge-messages",
        type=int,
        default=240,
        metavar="COUNT",
        help="training messages the judge is fitted on (default: 240)",
    )
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
    import asyncio
    from pathlib import Path

    from soulstack.flock.jev.report import format_judge, report

    data = Path(args.data)
    if data.exists() and not data.is_dir():
        raise UsageError(f"--data {args.data} is a file, not a folder; point at the flock's data folder")
    if not data.is_dir():
        raise UsageError(f"--data {args.data}: no such directory (run the flock first, or point at its data)")
    png = Path(args.png) if args.png else data / "jev-reliability.png"
    if png.is_dir() or png.suffix.lower() != ".png":  # matplotlib would add ".png" and write elsewhere
        example = png / "jev-reliability.png" if png.is_dir() else png.with_suffix(".png")
        raise UsageError(f"--png {png}: name a file ending .png, such as {example}")
    if args.judge:
        from soulstack.flock.jev.judge_fit import NoAnswers, fit_and_measure

        if args.judge_messages < 10:
            raise UsageError("--judge-messages must be at least 10")
        settings, _ = read_config(args)
        try:
            judged = asyncio.run(fit_and_measure(llm_backend(settings), data, args.judge_messages, say=print))
        except NoAnswers as error:
            raise UsageError(f"--judge: {error}") from None
        print(format_judge(judged))
    try:
        print(report(data, png))
    except OSError as error:
        raise UsageError(f"cannot write {png}: {error.strerror or error}") from None
    return 0


def llm_backend(settings):
    """What jev-report --judge fits: the logprobs Jev where --jev-base-url names its server, else
    the judge through the flock's own model (judge_fit's Logprobs or Agreement)."""
    from soulstack.flock.jev.judge_fit import Agreement, Logprobs

    if settings.jev_base_url:
        from soulstack.flock.jev.llm import LlmJev

        check_jev_url(settings.jev_base_url)
        return Logprobs(LlmJev(settings.jev_model, settings.jev_base_url, os.environ.get("JEV_API_KEY", "none"), 60.0))
    model = build_model(settings.provider, settings.model)
    if model is None:
        raise UsageError(
            "--judge asks the flock's model, and none is configured: set ANTHROPIC_API_KEY or OPENAI_BASE_URL "
            "(or --provider and --model before jev-report), or give --jev-base-url URL for a logprobs server"
        )
    return Agreement(model)


def check_jev_url(url: str) -> None:
    from soulstack.protocol.commands import check_url

    check_url(url, "--jev-base-url", "http://127.0.0.1:8080/v1")


def read_config(args):
    """The flock's settings: the config file's values, the flags laid over them; the warnings to print."""
    from soulstack.config_checks import ConfigError
    from soulstack.flock.config import apply

    try:
        return apply(args)
    except ConfigError as error:
        raise UsageError(str(error)) from None


def build_robot(settings):
    """The flock's voice on the robot from the settings, or None, and a line saying where it goes.
    Every voice option is checked, also one that the other voice makes unused."""
    from soulstack.flock.config import parse_quiet_hours
    from soulstack.flock.voice.robot import BodyVoice, SoulVoice
    from soulstack.protocol.commands import check_url

    body, soul = settings.body, settings.soul
    for flag, url, example in (
        ("--body", body.url, "http://127.0.0.1:9310"),
        ("--soul", soul.url, "http://127.0.0.1:9202"),
    ):
        if url:
            check_url(url, flag, example)
    for flag, seconds in (
        ("soul-min-interval", soul.min_interval_seconds),
        ("body-min-interval", body.min_interval_seconds),
    ):
        if seconds < 0:
            raise UsageError(f"--{flag} must be 0 or more seconds")
    quiet = None
    if body.quiet_hours:
        try:
            quiet = parse_quiet_hours(body.quiet_hours)
        except ValueError:
            raise UsageError(f"--quiet-hours takes START-END hours such as 22-7, not {body.quiet_hours!r}") from None
    if soul.url:
        unused = f"; the body {body.url} is not spoken to (one voice per body: the soul's)" if body.url else ""
        voice = SoulVoice(
            soul.url.rstrip("/") + "/nudge", token=soul.token or None, min_interval_s=soul.min_interval_seconds
        )
        return voice, f"tells the soul at {soul.url} what needs a person (nudges){unused}"
    if body.url:
        voice = BodyVoice(
            body.url, token=body.token or None, min_interval_s=body.min_interval_seconds, quiet_hours=quiet
        )
        return voice, f"speaks on the body at {body.url}" + (f", quiet {body.quiet_hours}" if quiet else "")
    return None, "no robot to tell a person (--body URL or --soul URL)"


def hold_data(data: str):
    """One flock per data folder: two would both work every list and both write its store. The lock
    is the kernel's (soulstack.disk.folder_lock), so a flock killed -9 leaves none behind. Returns the
    open lock file (keep it)."""
    from soulstack.disk.folder_lock import FolderBusy, hold_folder
    from soulstack.disk.storage import storage_problem

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
        raise UsageError(str(error)) from None


def describe(model) -> str:
    """The start line's word on the flock's mind."""
    if model is None:
        return "brainstem (no model: items are skipped; --demo for the scripted flock)"
    if model.provider == "demo":
        return f"demo (scripted: no model thinks, the answers are canned; about {model.pace_s:g} s a call)"
    return f"{model.provider} {model.model_id}"


def build_jev(settings, model=None, say=None):
    """Jev's backend: None for the local classifier; the logprobs backend (--jev-base-url), or the
    judge through the flock's own model (--jev-judge), each with the local Jev as its fallback. Each
    takes its fit for its model from the data folder (jev-report --judge writes it); `say` gets the
    line that says whether there was one."""
    from soulstack.flock.jev.judge import JudgeJev, WithFallback
    from soulstack.flock.jev.judge_fit import LogprobsFit, read_fit
    from soulstack.flock.jev.local import StartingJev

    if settings.jev_base_url:
        from soulstack.flock.jev.llm import LlmJev

        check_jev_url(settings.jev_base_url)
        llm = LlmJev(settings.jev_model, settings.jev_base_url, os.environ.get("JEV_API_KEY", "none"))
        llm.fit, line = read_fit(settings.data_dir, llm.fit_id, LogprobsFit)
        if say:
            say(line)
        return WithFallback(llm, StartingJev())
    if not settings.jev_judge:
        return None
    if model is None or model.provider == "demo":  # no model to ask (the demo's answers are canned)
        if say:
            say(f"Jev's judge: {'the demo has' if model else 'there is'} no model to ask; the local Jev tags")
        return None
    from soulstack.llm.providers import complete_with_retry

    async def complete(system, messages, max_tokens):
        return await complete_with_retry(model, system, messages, attempts=2, max_tokens=max_tokens)

    fit, line = read_fit(settings.data_dir, model.model_id)
    if say:
        say(line)
    return JudgeJev(complete, StartingJev(), budget_tokens=settings.token_budget, model=model.model_id, fit=fit)


PAGE_TOKEN = re.compile(r"[A-Za-z0-9._~+/=-]+")  # a plain cookie value: what the page's unlock form takes


def run(args) -> int:
    from soulstack.flock.app import make_flock_app
    from soulstack.serving import check_exposure, run_until_stopped, serve_forever

    settings, warnings = read_config(args)
    if not 1 <= settings.port <= 65535:
        raise UsageError("--port must be 1-65535")
    for name in ("token_budget", "concurrency", "lists_per_minute"):
        if getattr(settings, name) < 1:
            raise UsageError(f"--{name.replace('_', '-')} must be at least 1")
    if settings.heartbeat_seconds <= 0:
        raise UsageError("--heartbeat must be more than 0 seconds")
    if not 0 < settings.jev_band <= 1:
        raise UsageError("--jev-band must be more than 0 and at most 1")
    check_exposure(settings.host, bool(settings.token), args.insecure_no_token, "--token-file FILE (or $FLOCK_TOKEN)")
    if settings.token and not PAGE_TOKEN.fullmatch(settings.token):
        # The page keeps the token in a cookie, as it is (web/unlock.js holds it to the same rule).
        raise UsageError(
            "the flock's token may hold only letters, digits and . _ ~ + / = - (the page keeps it in a cookie, "
            "as it is); make one with: python3 -c 'import secrets; print(secrets.token_urlsafe(24))'"
        )
    rive_warnings = check_rive(settings.rive) if settings.rive is not None else []  # a file it cannot use stops here
    model = build_model(settings.provider, settings.model, settings.demo, settings.demo_pace_seconds)
    config = FlockConfig(
        token_budget=settings.token_budget,
        concurrency=settings.concurrency,
        lists_per_minute=settings.lists_per_minute,
        heartbeat_s=settings.heartbeat_seconds,
    )
    data = settings.data_dir
    if os.path.exists(data) and not os.path.isdir(data):
        raise UsageError(f"--data {data} is a file, not a folder; give the folder the flock keeps its state in")
    try:
        os.makedirs(data, exist_ok=True)
    except OSError as error:
        raise UsageError(f"--data {data}: {error.strerror}") from None
    lock = hold_data(data)  # noqa: F841 (held until the process ends)
    setup_logging(verbose=args.verbose)
    for warning in warnings:
        print(f"flock: {warning}", file=sys.stderr, flush=True)
    robot, voice = build_robot(settings)
    brain = describe(model)
    locked = "  locked: requests need its bearer token" if settings.token else ""

    def announce(listening_line: str) -> None:  # once the port is bound: a taken one is an error, not a start
        print(f"flock: http://{settings.host}:{settings.port}/  data {data}  model {brain}{locked}", flush=True)
        print(f"flock: {voice}", flush=True)
        for line in rive_warnings:
            print(f"flock: {line}", flush=True)

    app = make_flock_app(
        data,
        model,
        config=config,
        token=settings.token or None,
        robot=robot,
        rive=settings.rive,
        nest_config=NestConfig(band=settings.jev_band),
        jev=build_jev(settings, model, say=lambda line: print(f"flock: {line}", flush=True)),
    )
    return run_until_stopped(
        serve_forever(app, settings.host, settings.port, announce=announce, insecure_no_token=args.insecure_no_token)
    )
