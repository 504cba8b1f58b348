"""Putting a soul together from its config, and running it until Ctrl+C.

`build_soul(cfg, ...)` makes the soul from its parts (model, body client, life
files, session, tools) and, in `attach_parts`, every part the loop asks
(metabolism, ceiling, nightly, keep-warm, converse) with every hook they hang:
the one place a soul is wired. Tests call it with a StepClock. `serve_and_live`
serves its HTTP routes and lives; `run_soul` is what `soulstack soul` runs.
"""

from __future__ import annotations


import logging
import os
import sqlite3
from pathlib import Path

from soulstack.protocol.client import BodyClient
from soulstack.llm import providers
from soulstack.llm.prices import price_for
from soulstack.soul.metabolism.metabolism import Metabolism
from soulstack.clocks import Clock
from soulstack.soul.hooks import Hooks
from soulstack.soul.life import Life
from soulstack.soul.loop import Soul
from soulstack.exposure import exposure_problem
from soulstack.serving import check_free_to_listen, listening
from soulstack.soul.metabolism import health
from soulstack.soul.converse import endpoint as converse
from soulstack.soul.converse.listener import SoulListener
from soulstack.soul.server import make_soul_app, ports, soul_exposure
from soulstack.soul.memory import diary, heard
from soulstack.soul.memory.ceiling import Ceiling
from soulstack.soul.memory.consolidate import Nightly
from soulstack.soul.memory.keepwarm import KeepWarm
from soulstack.soul.memory.session import Session
from soulstack.soul.reminders.delivery import Reminders
from soulstack.soul.tools import refresh_tools
from soulstack.soul.tools.builtin import make_toolbox
from soulstack.soul.tools.mcp import McpTools
from soulstack.soul.tools.shell import shell_exposure_problem
from soulstack.disk.storage import storage_problem

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from soulstack.soul.config import SoulConfig

log = logging.getLogger(__name__)

LOCK_FILE = "soul.lock"  # in soulDir: held while a soul lives there (hold_soul_dir)


class StartError(Exception):
    """The soul cannot start as configured; one line saying what to change."""


def make_model(cfg: SoulConfig, env=None, model_id: str | None = None):
    """The configured model (or `model_id` on the same provider), or None for the brainstem."""
    env = os.environ if env is None else env
    provider = providers.choose_provider(cfg.model.provider, env)
    if provider == "brainstem":
        return None
    options = {"env": env}
    if provider in ("anthropic", "amazon-bedrock"):
        options["cache_ttl"] = cfg.model.cache_ttl
        options["thinking"] = cfg.model.thinking  # a level: an effort on Claude 5 and later, a budget before
    if provider == "amazon-bedrock":
        options["region"] = cfg.model.region
    try:
        return providers.make_model(provider, model_id or cfg.model.id, **options)
    except ValueError as error:
        raise StartError(f"model.provider {provider}: {error}") from None


def build_soul(cfg: SoulConfig, *, clock=None, model="auto", env=None, extra_tools=(), hooks=None, rng=None) -> Soul:
    soul_dir = Path(cfg.soul_dir)
    life = Life(soul_dir, cfg.persona.shared_mood_path)
    session = Session(soul_dir / "session.jsonl").load()
    diary.keep_light(life, session.archive)  # DIARY.md's old lines into the archive (a long one's first start)
    for warning in session.warnings:
        log.warning(warning)
    if session.messages:
        log.info("resuming: %d messages in %s", len(session.messages), session.path)
    endpoints = cfg.body.endpoints.urls()
    body = BodyClient(endpoints, token=cfg.body.token) if endpoints else None
    sources = [McpTools(cfg.mcp)] if cfg.mcp else []  # MCP servers' tools (host/soul/tools/mcp.py)
    chosen = make_model(cfg, env) if model == "auto" else model
    routine = cfg.model.routine
    routine_model = make_model(cfg, env, routine) if routine and chosen is not None else None
    toolbox = make_toolbox(cfg, extra_tools, sources)  # host/soul/tools/builtin.py
    soul = Soul(
        cfg,
        model=chosen,
        routine_model=routine_model,
        life=life,
        session=session,
        toolbox=toolbox,
        body=body,
        clock=clock or Clock(),
        hooks=hooks or Hooks(),
        rng=rng,
    )
    attach_parts(soul, tool_sources=bool(sources))
    return soul


def attach_parts(soul: Soul, *, tool_sources: bool = False) -> None:
    """Every part of a soul (the attributes Soul declares) and every hook it hangs (host/soul/hooks.py).

    Within a hook the functions run in the order appended here (after any the caller's `hooks` held)."""
    hooks = soul.hooks
    soul.nightly = Nightly(soul)  # the night's consolidation (host/soul/memory/consolidate.py)
    soul.keep_warm = keep_warm = KeepWarm(soul)  # asked by the sleep when the prompt cache needs a refresh
    soul.metabolism = metabolism = Metabolism(soul)  # drives, vitals, costs (host/soul/metabolism/)
    soul.ceiling = ceiling = Ceiling(soul, book=metabolism.vitals.on_model_call)  # its summary's call is a cost too
    soul.converse = listener = SoulListener(soul)  # the voice stack's words in, the soul's answer out
    soul.reminders = reminders = Reminders(soul)  # promises of a time: due wakings, delivery, retries

    hooks.on_waking.append(metabolism.on_waking)  # count the waking (vitals), boredom grows (drives)
    hooks.on_waking.append(reminders.on_waking)  # a reminder due on a spent budget: the brainstem says it
    hooks.felt.append(metabolism.felt)  # drives and hunger, as sensations in the snapshot
    if tool_sources:
        hooks.before_turn.append(refresh_tools)  # MCP servers not listed yet are asked at every waking
    hooks.before_turn.append(ceiling.before_turn)  # fold when the history is too big (after the tools: they count)
    hooks.on_usage.append(keep_warm.on_usage)  # the cache was read or written now
    hooks.on_usage.append(metabolism.on_usage)  # price the call
    hooks.on_usage.append(ceiling.on_usage)  # the provider's count rescales the ceiling
    hooks.on_stream.append(listener.on_stream)  # an answer's sentences as the model writes them
    hooks.on_assistant.append(listener.on_assistant)
    hooks.before_tool.append(listener.before_tool)  # a speak the voice stack says is answered here, not by the body
    hooks.on_tool_result.append(listener.on_tool_result)  # what the body said aloud: the echo guard's to know
    hooks.on_tool_result.append(metabolism.on_tool_result)  # a real act discharges boredom; a speak is contact
    hooks.on_tool_result.append(reminders.on_tool_result)  # a speak that worked delivers its waking's reminders
    hooks.on_nudge.append(metabolism.on_nudge)  # a person's words in a nudge are contact
    hooks.on_nudge.append(heard.on_nudge)  # ... and kept word for word for recall (host/soul/memory/heard.py)
    hooks.on_tool_result.append(heard.on_tool_result)  # what it said aloud, kept for recall
    hooks.on_waking_end.append(diary.on_waking_end)  # DIARY.md keeps a bounded recent part (memory/diary.py)
    hooks.on_contact.append(metabolism.on_contact)  # converse words are contact
    hooks.adjust_sleep.append(metabolism.adjust_sleep)  # a starving soul sleeps longer
    hooks.on_waking_end.append(metabolism.on_waking_end)  # whether it fell back to the brainstem (/health)
    hooks.on_waking_end.append(listener.on_waking_end)  # every answer caught in the waking is settled
    hooks.on_waking_end.append(reminders.on_waking_end)  # a reminder it did not say: the body is asked asleep


PORT_HINT = (
    "give the soul another port: --port P (0: any free one), or nudge.port, converse.port or health.port in the config"
)

# The routes the soul's server carries besides /nudge (soulstack.soul.server).
SOUL_ROUTES = (health.add_routes, converse.add_routes)


async def serve_and_live(soul: Soul, host: str = "127.0.0.1", announce=None, insecure_no_token: bool = False):
    """Serve the soul's HTTP routes and live; returns when cancelled."""
    problem = shell_exposure_problem(soul.cfg, host)  # run_soul said so already; this holds for every other caller
    if problem:
        raise StartError(problem)
    app = make_soul_app(soul, routes=SOUL_ROUTES)
    async with listening(app, host, ports(soul.cfg), PORT_HINT, insecure_no_token=insecure_no_token) as bound:
        (announce or log.info)(f"listening on {', '.join(f'http://{host}:{p}' for p in bound)} (POST /nudge)")
        try:
            await soul.live()
        finally:
            await close_soul(soul)


async def close_soul(soul: Soul):
    if soul.body is not None:
        await soul.body.close()
    soul.session.close()
    await soul.toolbox.close()
    await close_model(soul.model)
    if soul.routine_model is not None:
        await close_model(soul.routine_model)


async def close_model(model):
    client = getattr(model, "client", None)
    closer = getattr(client, "close", None)
    if closer is not None:
        try:
            await closer()
        except Exception:
            pass


def hold_soul_dir(soul_dir: str):
    """One soul per soulDir: two would each rewrite the other's inbox and lose a nudge one of them
    acknowledged. The kernel's lock (soulstack.disk.folder_lock): a soul killed -9 leaves none behind."""
    from soulstack.errors import UsageError
    from soulstack.disk.folder_lock import FolderBusy, hold_folder
    from soulstack.private_files import make_private_dir

    try:
        make_private_dir(soul_dir)
        return hold_folder(soul_dir, LOCK_FILE)
    except FolderBusy:
        raise UsageError(
            f"soulDir {soul_dir}: another soul is living in this folder; stop it, or give this one another soulDir"
        ) from None
    except OSError as error:
        raise UsageError(f"soulDir {soul_dir}: cannot take its lock ({storage_problem(error) or error})") from None


def run_soul(cfg: SoulConfig, host: str = "127.0.0.1", insecure_no_token: bool = False) -> int:
    from soulstack.serving import run_until_stopped
    from soulstack.errors import UsageError

    # Before anything starts, and whatever else allowed the address (--insecure-no-token included):
    # an open door to a soul with a shell is a shell for whoever finds the door.
    problem = shell_exposure_problem(cfg, host) or exposure_problem(host, soul_exposure(cfg), insecure_no_token)
    if problem:  # before it wakes: a refusal is one line, and no folder is made for a soul that never lives
        raise UsageError(problem)
    if cfg.shell.enabled and not cfg.shell.allow:
        log.warning(
            "shell.enabled is true but shell.allow is empty: every command will be refused; list the "
            "commands the soul may run in shell.allow"
        )
    # A soul living in this folder already is the first thing to say (it holds the port too, most
    # likely); else a taken port is refused before a new soulDir, or a soul's first files, are made.
    lock = hold_soul_dir(cfg.soul_dir) if Path(cfg.soul_dir).is_dir() else None
    check_free_to_listen(host, ports(cfg), PORT_HINT)
    lock = lock or hold_soul_dir(cfg.soul_dir)  # noqa: F841 (held until the process ends)
    try:
        soul = build_soul(cfg)
    except StartError as error:
        raise UsageError(str(error)) from None
    except (OSError, sqlite3.Error) as error:  # a full or read-only disk while its files are opened and counted
        problem = storage_problem(error, cfg.soul_dir)
        if problem is None and not isinstance(error, OSError):
            raise
        raise UsageError(f"soulDir {cfg.soul_dir}: cannot start: {problem or error}") from None
    provider = (
        "brainstem (no model)" if soul.model is soul.brainstem else f"{soul.model.provider} {soul.model.model_id}"
    )
    if soul.routine_model is not None:
        provider += f" (routine wakings: {soul.routine_model.model_id})"
    if soul.model is not soul.brainstem and price_for(soul.model.model_id, soul.metabolism.vitals.prices) is None:
        log.warning(
            "no price is known for the model %r: /health shows its cost as unknown and budget.maxUsdPerDay "
            'cannot be kept; add it under "prices" in the config',
            soul.model.model_id,
        )
    routine = soul.routine_model
    if routine is not None and price_for(routine.model_id, soul.metabolism.vitals.prices) is None:
        log.warning(
            "no price is known for the routine model %r (model.routine): is it a model of the %s provider? Its cost shows "
            'as unknown; add it under "prices" if it is right',
            routine.model_id,
            routine.provider,
        )

    def announce(listening_line: str) -> None:  # once its ports are bound: a taken one is an error, not a waking
        log.info("%s wakes in %s, mind: %s", cfg.persona.name, cfg.soul_dir, provider)
        log.info(listening_line)

    code = run_until_stopped(serve_and_live(soul, host, announce, insecure_no_token=insecure_no_token))
    log.info("stopped; its life is kept in %s", cfg.soul_dir)
    return code
