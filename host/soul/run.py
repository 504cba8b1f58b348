"""Putting a soul together from its config, and running it until Ctrl+C.

`build_soul(cfg, ...)` wires the parts (model, body client, life files,
session, tools, hooks); tests call it with a ScaledClock. `run_soul` is what
`soulstack soul` runs.
"""

import logging
import os
from pathlib import Path

from soulstack.protocol.client import BodyClient
from soulstack.llm import providers
from soulstack.llm.prices import price_for
from soulstack.soul.metabolism import metabolism
from soulstack.clocks import Clock
from soulstack.soul.hooks import Hooks
from soulstack.soul.life import Life
from soulstack.soul.loop import Soul
from soulstack.exposure import exposure_problem
from soulstack.serving import listening
from soulstack.soul.metabolism import health
from soulstack.soul.converse import endpoint as converse
from soulstack.soul.converse.listener import SoulListener
from soulstack.soul.server import make_soul_app, ports, soul_exposure
from soulstack.soul.memory.ceiling import Ceiling
from soulstack.soul.memory.consolidate import Nightly
from soulstack.soul.memory.keepwarm import KeepWarm
from soulstack.soul.memory.session import Session
from soulstack.soul.tools import Toolbox, refresh_tools
from soulstack.soul.tools.body import body_tools
from soulstack.soul.tools.flock import flock_tools
from soulstack.soul.tools.inner import inner_tools
from soulstack.soul.tools.mcp import McpTools
from soulstack.soul.tools.mind import mind_tools
from soulstack.soul.tools.rhythm import rhythm_tools
from soulstack.soul.tools.shell import shell_exposure_problem, shell_tools

log = logging.getLogger("soul")



class StartError(Exception):
    """The soul cannot start as configured; one line saying what to change."""


def make_model(cfg: dict, env=None, model_id: str | None = None):
    """The configured model (or `model_id` on the same provider), or None for the brainstem."""
    env = os.environ if env is None else env
    provider = providers.choose_provider(cfg["model"]["provider"], env)
    if provider == "brainstem":
        return None
    options = {"env": env}
    if provider in ("anthropic", "amazon-bedrock"):
        options["cache_ttl"] = cfg["model"]["cacheTtl"]
        options["thinking"] = cfg["model"]["thinking"]  # a level: an effort on Claude 5 and later, a budget before
    if provider == "amazon-bedrock":
        options["region"] = cfg["model"]["region"]
    try:
        return providers.make_model(provider, model_id or cfg["model"]["id"], **options)
    except ValueError as error:
        raise StartError(f"model.provider {provider}: {error}") from None


def make_tools(cfg: dict) -> list:
    tools = rhythm_tools() + body_tools(cfg["body"]["endpoints"]) + inner_tools() + mind_tools()
    if cfg["shell"]["enabled"]:
        tools += shell_tools(cfg)  # fenced by shell.allow
    return tools + flock_tools(cfg)  # none unless the config names the flock


def build_soul(cfg: dict, *, clock=None, model="auto", env=None, extra_tools=(), hooks=None, rng=None) -> Soul:
    soul_dir = Path(cfg["soulDir"])
    life = Life(soul_dir, cfg["persona"]["sharedMoodPath"])
    session = Session(soul_dir / "session.jsonl").load()
    for warning in session.warnings:
        log.warning(warning)
    if session.messages:
        log.info("resuming: %d messages in %s", len(session.messages), session.path)
    endpoints = {name: url for name, url in cfg["body"]["endpoints"].items() if url}
    body = BodyClient(endpoints, token=cfg["body"]["token"]) if endpoints else None
    sources = [McpTools(cfg["mcp"])] if cfg["mcp"] else []  # MCP servers' tools (host/soul/tools/mcp.py)
    chosen = make_model(cfg, env) if model == "auto" else model
    routine = cfg["model"]["routine"]
    routine_model = make_model(cfg, env, routine) if routine and chosen is not None else None
    toolbox = Toolbox(make_tools(cfg) + list(extra_tools), sources)
    soul = Soul(cfg, model=chosen, routine_model=routine_model, life=life, session=session, toolbox=toolbox,
                body=body, clock=clock or Clock(), hooks=hooks or Hooks(), rng=rng)
    soul.nightly = Nightly(soul)  # the night's consolidation (host/soul/memory/consolidate.py)
    soul.keep_warm = KeepWarm(soul)  # asked by the sleep when the prompt cache needs a refresh
    soul.hooks.on_usage.append(soul.keep_warm.on_usage)
    if sources:
        soul.hooks.before_turn.append(refresh_tools)  # servers not listed yet are asked at every waking
    metabolism.attach(soul)  # drives, hunger, cost meter, /health (host/soul/metabolism/metabolism.py)
    soul.ceiling = ceiling = Ceiling(soul, book=soul.metabolism.vitals.on_model_call)  # the fold
    soul.hooks.before_turn.append(ceiling.before_turn)
    soul.hooks.on_usage.append(ceiling.on_usage)
    soul.converse = listener = SoulListener(soul)  # the voice stack's words in, the soul's answer out
    soul.hooks.on_stream.append(listener.on_stream)
    soul.hooks.on_assistant.append(listener.on_assistant)
    soul.hooks.before_tool.append(listener.before_tool)  # a speak the voice stack says is answered here
    soul.hooks.on_waking_end.append(listener.on_waking_end)
    return soul


# The routes the soul's server carries besides /nudge (soulstack.soul.server).
SOUL_ROUTES = (health.add_routes, converse.add_routes)


async def serve_and_live(soul: Soul, host: str = "127.0.0.1", announce=None, insecure_no_token: bool = False):
    """Serve the soul's HTTP routes and live; returns when cancelled."""
    problem = shell_exposure_problem(soul.cfg, host)  # run_soul said so already; this holds for every other caller
    if problem:
        raise StartError(problem)
    app = make_soul_app(soul, routes=SOUL_ROUTES)
    hint = "change that port in the config (nudge.port, converse.port or health.port) or --host"
    async with listening(app, host, ports(soul.cfg), hint, insecure_no_token=insecure_no_token) as bound:
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


def run_soul(cfg: dict, host: str = "127.0.0.1", insecure_no_token: bool = False) -> int:
    from soulstack.serving import run_until_stopped
    from soulstack.errors import UsageError

    # Before anything starts, and whatever else allowed the address (--insecure-no-token included):
    # an open door to a soul with a shell is a shell for whoever finds the door.
    problem = shell_exposure_problem(cfg, host) or exposure_problem(host, soul_exposure(cfg), insecure_no_token)
    if problem:  # before it wakes: a refusal is one line, and no folder is made for a soul that never lives
        raise UsageError(problem)
    if cfg["shell"]["enabled"] and not cfg["shell"]["allow"]:
        log.warning("shell.enabled is true but shell.allow is empty: every command will be refused; list the "
                    "commands the soul may run in shell.allow")
    try:
        soul = build_soul(cfg)
    except StartError as error:
        raise UsageError(str(error)) from None
    provider = "brainstem (no model)" if soul.model is soul.brainstem else f"{soul.model.provider} {soul.model.model_id}"
    if soul.routine_model is not None:
        provider += f" (routine wakings: {soul.routine_model.model_id})"
    log.info("%s wakes in %s, mind: %s", cfg["persona"]["name"], cfg["soulDir"], provider)
    if soul.model is not soul.brainstem and price_for(soul.model.model_id, soul.metabolism.vitals.prices) is None:
        log.warning("no price is known for the model %r: /health shows its cost as unknown and budget.maxUsdPerDay "
                    "cannot be kept; add it under \"prices\" in the config", soul.model.model_id)
    routine = soul.routine_model
    if routine is not None and price_for(routine.model_id, soul.metabolism.vitals.prices) is None:
        log.warning("no price is known for the routine model %r (model.routine): is it a model of the %s provider? Its cost shows "
                    "as unknown; add it under \"prices\" if it is right", routine.model_id, routine.provider)
    code = run_until_stopped(serve_and_live(soul, host, insecure_no_token=insecure_no_token))
    log.info("stopped; its life is kept in %s", cfg["soulDir"])
    return code
