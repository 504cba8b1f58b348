"""The soul's config table: every key of soul.config.json, its type, default, check and help.

A frozen dataclass per object of the file (soulstack.config_checks' tables), and the checks of
the values only the soul's config has (a time zone, a price table, shell commands, ...). Reading
a file with it is the package's (soulstack.soul.config.from_dict).
"""

import dataclasses
import json
import shlex
from typing import Any, TypeVar
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from soulstack.config_checks import (
    CheckOf,
    ConfigError,
    boolean,
    choice,
    number,
    option,
    port,
    secret,
    section,
    string,
    url,
)
from soulstack.llm.providers import PROVIDERS
from soulstack.soul.prompts import DEFAULT_HUMAN, LANGUAGES

T = TypeVar("T")

DEFAULT_PORT = 9202
# model.thinking -> room for thinking added on top of model.maxTokens (thinking counts against it).
# The level itself goes to the provider: "off" is the least thinking the model allows (Claude 5.5
# models cannot all turn it off), the others an effort on Claude 5 and later, a budget before.
THINKING_BUDGET = {"off": None, "low": 2048, "medium": 8192, "high": 16000}


# --- the checks of the soul's own kinds of value -----------------------------------------------


def timezone(path: str, value: Any) -> str | None:
    if value is None:
        return None  # the machine's local zone
    wrong = ConfigError(
        f"{path} must be an IANA time zone such as Europe/Berlin or Asia/Shanghai, not {json.dumps(value)}"
    )
    if not isinstance(value, str):  # what ZoneInfo refuses with a TypeError
        raise wrong
    try:
        ZoneInfo(value)
    except (ZoneInfoNotFoundError, ValueError, OSError):  # OSError: a folder of the zone database ("Europe")
        raise wrong from None
    return value


def header_map(path: str, value: Any) -> dict[str, str]:
    if not isinstance(value, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in value.items()):
        raise ConfigError(f"{path} must be an object of header names to string values, not {json.dumps(value)[:60]}")
    return dict(value)


def number_list(path: str, value: Any, most: int | None = None) -> list[float]:
    if (
        not isinstance(value, list)
        or not value
        or not all(isinstance(v, (int, float)) and not isinstance(v, bool) and v > 0 for v in value)
    ):
        raise ConfigError(f"{path} must be a list of positive numbers, not {json.dumps(value)}")
    if most is not None and len(value) > most:
        raise ConfigError(f"{path} must list at most {most} numbers (one per felt level), not {len(value)}")
    return value


def levels(most: int) -> CheckOf[list[float]]:
    return lambda path, value: number_list(path, value, most)


def prices(path: str, value: Any) -> dict[str, Any]:
    """The cost meter's own price table (host/soul/metabolism/costs.py); checked here so start-up names the key."""
    from soulstack.soul.metabolism.costs import prices_from_config

    if not isinstance(value, dict):
        raise ConfigError(f"{path} must be an object: model id -> USD per million tokens, not {json.dumps(value)[:40]}")
    try:
        prices_from_config(value)
    except ValueError as error:
        raise ConfigError(str(error)) from None
    return value


def command_list(path: str, value: Any) -> list[str]:
    """shell.allow: commands as a person types them ("df -h"); each must split into words (shlex)."""
    if not isinstance(value, list) or not all(isinstance(entry, str) for entry in value):
        raise ConfigError(
            f'{path} must be a list of commands such as ["uptime", "df -h"], not {json.dumps(value)[:60]}'
        )
    for index, entry in enumerate(value):
        try:
            words = shlex.split(entry)
        except ValueError as error:
            raise ConfigError(f"{path}[{index}] cannot be read as a command ({error}): {json.dumps(entry)}") from None
        if not words:  # an empty entry would start every command
            raise ConfigError(f"{path}[{index}] must name a command, not {json.dumps(entry)}")
    return list(value)  # a copy: the default list is shared


# --- the table: every key, its type, default, check and help ----------------------------------
# A frozen dataclass per object of the file (soulstack.config_checks' tables); an attribute's
# name is its key in snake_case (loop.maxSleepMinutes <-> cfg.loop.max_sleep_minutes).


@dataclasses.dataclass(frozen=True)
class Model:
    provider: str | None = option(None, choice(*PROVIDERS, optional=True), "None: chosen from the environment")
    id: str | None = option(None, string(optional=True), "None: the provider's default model")
    # A cheaper model of the same provider for wakings with no person, no nudge and nothing new
    # (loop.Soul.mind); None: the main model always.
    routine: str | None = option(None, string(optional=True), "the model of routine wakings")
    region: str | None = option(None, string(optional=True), "amazon-bedrock: None reads AWS_REGION")
    thinking: str = option("off", choice(*THINKING_BUDGET), "how much the model thinks")
    max_tokens: int = option(4096, number(256, integer=True), "the most a reply may write")
    cache_ttl: str = option("1h", choice("5m", "1h"), "how long the prompt cache keeps")
    keep_warm: bool = option(True, boolean, "refresh the 1 h cache during longer sleeps (host/soul/memory/keepwarm.py)")
    max_context_tokens: int = option(100000, number(1000, integer=True), "the ceiling of what is sent")
    keep_recent_tokens: int = option(20000, number(100, integer=True), "what a fold keeps word for word")
    retries: int = option(3, number(0, 10, integer=True), "tries after a failed model call")


@dataclasses.dataclass(frozen=True)
class Loop:
    default_sleep_minutes: float = option(20, number(0.05), "a sleep the soul did not choose")
    min_sleep_minutes: float = option(2, number(0.05), "the shortest sleep")
    max_sleep_minutes: float = option(60, number(1), "the longest sleep by day")
    error_sleep_minutes: float = option(10, number(0.05), "the sleep after a failed waking")
    night_start_hour: int = option(0, number(0, 23, integer=True), "the night's first local hour")
    night_end_hour: int = option(7, number(0, 23, integer=True), "the hour the night ends")
    night_max_sleep_minutes: float = option(120, number(1), "the longest sleep at night")
    max_steps_per_waking: int = option(40, number(1, integer=True), "model calls in one waking")
    # Once a night the soul keeps what matters in its life files and starts the day compact (host/soul/memory/consolidate.py).
    consolidate: bool = option(True, boolean, "the nightly consolidation")


@dataclasses.dataclass(frozen=True)
class Endpoints:  # the body's Body Protocol endpoints (soulstack.protocol.shapes.ENDPOINTS)
    status: str | None = option(None, url(optional=True), "POST /status")
    look: str | None = option(None, url(optional=True), "POST /look")
    speak: str | None = option(None, url(optional=True), "POST /speak")
    express: str | None = option(None, url(optional=True), "POST /express")

    def urls(self) -> dict[str, str]:
        """{endpoint: url} of the endpoints this body has."""
        return {name: url for name, url in dataclasses.asdict(self).items() if url}


@dataclasses.dataclass(frozen=True)
class Body:
    name: str = option("the terminal", string(), "what the soul calls its body")
    token: str | None = option(None, secret, "the body's bearer token (else $BODY_TOKEN)")
    endpoints: Endpoints = section(Endpoints)
    # Its microphone may hear its own speaker (a xiaozhi device in auto or realtime mode): only then
    # does the echo guard judge what it hears (host/soul/converse/echo.py). Our firmware never does.
    hears_itself: bool = option(False, boolean, "the body's microphone hears its own speaker")


@dataclasses.dataclass(frozen=True)
class Persona:
    name: str = option("Pip", string(nonempty=True), "the soul's name")
    human: str = option(DEFAULT_HUMAN, string(nonempty=True), "its person")
    notes: str = option("", string(), "who it is, in its owner's words")
    language: str = option("en", choice(*LANGUAGES), "the language it lives in (host/soul/prompts/)")
    shared_mood_path: str | None = option(None, string(optional=True), "a MOOD.md shared with a dialog agent")


@dataclasses.dataclass(frozen=True)
class Log:
    stream_thoughts: bool = option(False, boolean, "the model's words to the log as they form")


@dataclasses.dataclass(frozen=True)
class Nudge:
    port: int = option(
        DEFAULT_PORT,
        port(),
        "port of the soul's HTTP server, instead of the config's nudge.port (default 9202; 0: any free port)",
        flag="--port",
        metavar="PORT",
    )
    token: str | None = option(None, secret, "the bearer token of /nudge (else $NUDGE_TOKEN)")
    # After a waking that took nudges, later ones wait this long and wake it together
    # (a person's words: a few seconds); host/soul/nudges/inbox.py.
    min_interval_seconds: float = option(60, number(0), "the least time between two nudged wakings")


@dataclasses.dataclass(frozen=True)
class Converse:
    port: int | None = option(None, port(optional=True), "None: served on nudge.port")
    token: str | None = option(None, secret, "None: nudge.token (else $CONVERSE_TOKEN)")


@dataclasses.dataclass(frozen=True)
class Health:
    port: int | None = option(None, port(optional=True), "None: served on nudge.port")


@dataclasses.dataclass(frozen=True)
class Drives:
    boredom_thresholds: list[float] = option([6, 20, 40], levels(3), "hours without news at each felt level")
    missing_hours: list[float] = option([18, 48], levels(2), "hours without its person at each felt level")


def _optional(check: CheckOf[T]) -> CheckOf[T | None]:
    return lambda path, value: None if value is None else check(path, value)


@dataclasses.dataclass(frozen=True)
class Budget:
    max_wakes_per_day: int | None = option(60, _optional(number(1, integer=True)), "None: no daily limit")
    hungry_sleep_minutes: float = option(120, number(1), "the sleep once the budget is spent")
    max_usd_per_day: float | None = option(None, _optional(number(0)), "None: no limit in dollars")


@dataclasses.dataclass(frozen=True)
class Shell:
    enabled: bool = option(False, boolean, "the shell tool")
    timeout_seconds: float = option(30, number(1), "a command's longest run")
    max_output_chars: int = option(4000, number(100, integer=True), "what the soul reads of its output")
    cwd: str | None = option(None, string(optional=True), "where commands run (None: soulDir)")
    # The fence (host/soul/tools/shell.py): a call runs only when its words start with one entry's words;
    # empty refuses every command.
    allow: list[str] = option([], command_list, "the commands it may run, as typed")
    interpreter: bool = option(False, boolean, "true: through /bin/sh; the allow-list checks only the first words")


@dataclasses.dataclass(frozen=True)
class Flock:  # the person's flock (soulstack flock): with a url the soul grows its flock tools
    url: str | None = option(None, url(optional=True), "the flock's base URL")
    token: str | None = option(None, secret, "the flock's --token, when it is locked")


@dataclasses.dataclass(frozen=True)
class McpServer:  # one entry of mcp[] (check_mcp)
    name: str = option(None, string(nonempty=True), "what the soul calls the server")
    url: str = option(None, url(), "its Streamable HTTP endpoint")
    auth: str = option("none", choice("none", "bearer", "aws-sigv4"), "how it is asked")
    token: str | None = option(None, secret, "bearer: the token")
    region: str | None = option(None, string(optional=True), "aws-sigv4: the region")
    service: str | None = option(None, string(optional=True), "aws-sigv4: the service")
    max_output_chars: int = option(8000, number(100, integer=True), "what the soul reads of a result")
    headers: dict[str, str] = option({}, header_map, "extra HTTP headers sent with every request")
    timeout_seconds: float = option(30, number(1), "per request, a tool call included")


@dataclasses.dataclass(frozen=True)
class SoulConfig:
    compat: str | None = option(None, choice("stackchan-soul", optional=True), "a config written for stackchan-soul")
    soul_dir: str = option("soul", string(nonempty=True), "the folder of its life")
    timezone: str | None = option(None, timezone, "an IANA zone; None: the machine's")
    model: Model = section(Model)
    loop: Loop = section(Loop)
    body: Body = section(Body)
    persona: Persona = section(Persona)
    log: Log = section(Log)
    nudge: Nudge = section(Nudge)
    converse: Converse = section(Converse)
    health: Health = section(Health)
    drives: Drives = section(Drives)
    prices: dict[str, Any] = option(
        {}, prices, "model id prefix -> {input, output, cacheRead, cacheWrite5m, cacheWrite1h}"
    )
    budget: Budget = section(Budget)
    shell: Shell = section(Shell)
    mcp: list[McpServer] = option([], None, "MCP servers, each checked by check_mcp")
    flock: Flock = section(Flock)
