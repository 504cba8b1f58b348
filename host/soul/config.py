"""soul.config.json: load, fill defaults, validate.

The keys are stackchan-soul's, so an existing soul's config moves over as it
is. `SoulConfig` below is the single table of every key: its type, default, what a
valid value looks like and what it is for; the loaded config is that frozen object
(`cfg.loop.max_sleep_minutes`). A wrong value stops start-up with one line naming the key
path (`loop.maxSleepMinutes must be a number >= 1`); a key we do not know is a
warning, never an error, so a newer or older config still starts.

To add a key: add one field to its section's dataclass (and a line to docs/soul.md). The checks
themselves are shared with the flock's config (soulstack.config_checks).
"""

import dataclasses
import json
import os
import shlex
from pathlib import Path
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from soulstack.cjk import chinese
from soulstack.config_checks import (
    ConfigError,
    boolean,
    build,
    choice,
    fill,
    number,
    option,
    port,
    read_json_file,
    replaced,
    section,
    spec_of,
    string,
    url,
)
from soulstack.llm.providers import PROVIDERS
from soulstack.protocol.shapes import ENDPOINTS
from soulstack.soul.prompts import DEFAULT_HUMAN, LANGUAGES

DEFAULT_PATH = "soul.config.json"
DEFAULT_PORT = 9202
TERMINAL_BODY = "http://127.0.0.1:9310"
# model.thinking -> room for thinking added on top of model.maxTokens (thinking counts against it).
# The level itself goes to the provider: "off" is the least thinking the model allows (Claude 5.5
# models cannot all turn it off), the others an effort on Claude 5 and later, a budget before.
THINKING_BUDGET = {"off": None, "low": 2048, "medium": 8192, "high": 16000}


def timezone(path, value):
    if value is None:
        return None  # the machine's local zone
    try:
        ZoneInfo(value)
    except (ZoneInfoNotFoundError, ValueError, TypeError):
        raise ConfigError(
            f"{path} must be an IANA time zone such as Europe/Berlin or Asia/Shanghai, not {json.dumps(value)}"
        ) from None
    return value


def header_map(path, value):
    if not isinstance(value, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in value.items()):
        raise ConfigError(f"{path} must be an object of header names to string values, not {json.dumps(value)[:60]}")
    return dict(value)


def number_list(path, value, most=None):
    if (
        not isinstance(value, list)
        or not value
        or not all(isinstance(v, (int, float)) and not isinstance(v, bool) and v > 0 for v in value)
    ):
        raise ConfigError(f"{path} must be a list of positive numbers, not {json.dumps(value)}")
    if most is not None and len(value) > most:
        raise ConfigError(f"{path} must list at most {most} numbers (one per felt level), not {len(value)}")
    return value


def levels(most):
    return lambda path, value: number_list(path, value, most)


def prices(path, value):
    """The cost meter's own price table (host/soul/metabolism/costs.py); checked here so start-up names the key."""
    from soulstack.soul.metabolism.costs import prices_from_config

    if not isinstance(value, dict):
        raise ConfigError(f"{path} must be an object: model id -> USD per million tokens, not {json.dumps(value)[:40]}")
    try:
        prices_from_config(value)
    except ValueError as error:
        raise ConfigError(str(error)) from None
    return value


def command_list(path, value):
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

    def urls(self) -> dict:
        """{endpoint: url} of the endpoints this body has."""
        return {name: url for name, url in dataclasses.asdict(self).items() if url}


@dataclasses.dataclass(frozen=True)
class Body:
    name: str = option("the terminal", string(), "what the soul calls its body")
    token: str | None = option(None, string(optional=True), "the body's bearer token (else $BODY_TOKEN)")
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
    token: str | None = option(None, string(optional=True), "the bearer token of /nudge (else $NUDGE_TOKEN)")
    # After a waking that took nudges, later ones wait this long and wake it together
    # (a person's words: a few seconds); host/soul/nudges/inbox.py.
    min_interval_seconds: float = option(60, number(0), "the least time between two nudged wakings")


@dataclasses.dataclass(frozen=True)
class Converse:
    port: int | None = option(None, port(optional=True), "None: served on nudge.port")
    token: str | None = option(None, string(optional=True), "None: nudge.token (else $CONVERSE_TOKEN)")


@dataclasses.dataclass(frozen=True)
class Health:
    port: int | None = option(None, port(optional=True), "None: served on nudge.port")


@dataclasses.dataclass(frozen=True)
class Drives:
    boredom_thresholds: list = option([6, 20, 40], levels(3), "hours without news at each felt level")
    missing_hours: list = option([18, 48], levels(2), "hours without its person at each felt level")


def _optional(check):
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
    allow: list = option([], command_list, "the commands it may run, as typed")
    interpreter: bool = option(False, boolean, "true: through /bin/sh; the allow-list checks only the first words")


@dataclasses.dataclass(frozen=True)
class Flock:  # the person's flock (soulstack flock): with a url the soul grows its flock tools
    url: str | None = option(None, url(optional=True), "the flock's base URL")
    token: str | None = option(None, string(optional=True), "the flock's --token, when it is locked")


@dataclasses.dataclass(frozen=True)
class McpServer:  # one entry of mcp[] (check_mcp)
    name: str = option(None, string(nonempty=True), "what the soul calls the server")
    url: str = option(None, url(), "its Streamable HTTP endpoint")
    auth: str = option("none", choice("none", "bearer", "aws-sigv4"), "how it is asked")
    token: str | None = option(None, string(optional=True), "bearer: the token")
    region: str | None = option(None, string(optional=True), "aws-sigv4: the region")
    service: str | None = option(None, string(optional=True), "aws-sigv4: the service")
    max_output_chars: int = option(8000, number(100, integer=True), "what the soul reads of a result")
    headers: dict = option({}, header_map, "extra HTTP headers sent with every request")
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
    prices: dict = option({}, prices, "model id prefix -> {input, output, cacheRead, cacheWrite5m, cacheWrite1h}")
    budget: Budget = section(Budget)
    shell: Shell = section(Shell)
    mcp: list = option([], None, "MCP servers, each checked by check_mcp")
    flock: Flock = section(Flock)


# stackchan-soul keys we know and do not carry over: named once at start, never silently dropped.
NOT_SUPPORTED = {
    "worldSearch": "worldSearch (stackchan-soul's single search tool) is not supported; list the search server under mcp instead",
    "weixin": "weixin (stackchan-soul's WeChat tool) is not supported; it is ignored",
}

# Where stackchan-soul's documented defaults differ from ours (its src/config.ts), a config
# written for it keeps them: short sleeps, no night window unless it names one, thoughts
# streamed to the log, no daily wake budget, soulDir relative to the working directory.
STACKCHAN_SOUL_DEFAULTS = {
    "loop": {
        "defaultSleepMinutes": 5,
        "minSleepMinutes": 2,
        "maxSleepMinutes": 5,
        "errorSleepMinutes": 10,
        "nightStartHour": 0,
        "nightEndHour": 0,
    },
    "log": {"streamThoughts": True},
    "budget": {"maxWakesPerDay": None},
}


def from_stackchan_soul(raw) -> bool:
    """Whether `raw` is a config written for stackchan-soul: said so, or only it uses these keys."""
    if not isinstance(raw, dict):
        return False
    model = raw.get("model")
    model = model if isinstance(model, dict) else {}
    return (
        raw.get("compat") == "stackchan-soul"
        or model.get("provider") == "amazon-bedrock"
        or bool(set(raw) & set(NOT_SUPPORTED))
    )


def _with_defaults(raw: dict, defaults: dict) -> dict:
    """`raw` with `defaults` filled in where it says nothing (one level of sections)."""
    merged = dict(raw)
    for name, values in defaults.items():
        given = raw.get(name)
        given = given if isinstance(given, dict) else {}
        merged[name] = {**values, **given} if isinstance(raw.get(name, {}), dict) else raw[name]
    return merged


def check_mcp(value, warnings) -> list:
    """mcp[]: each entry a McpServer, checked; ConfigError naming the entry."""
    if not isinstance(value, list):
        raise ConfigError(f"mcp must be a list of servers, not {json.dumps(value)[:40]}")
    servers, names = [], set()
    for index, entry in enumerate(value):
        server = build(McpServer, fill(spec_of(McpServer), entry, f"mcp[{index}]", warnings, "the soul"))
        if server.name is None or server.url is None:
            raise ConfigError(f'mcp[{index}] needs a "name" and a "url"')
        if server.auth == "bearer" and not server.token:
            raise ConfigError(f'mcp[{index}].token is needed when auth is "bearer"')
        if server.name in names:
            raise ConfigError(f"mcp[{index}].name {json.dumps(server.name)} is used twice")
        names.add(server.name)
        servers.append(server)
    return servers


def _check_relations(cfg: SoulConfig):
    loop = cfg.loop
    if loop.min_sleep_minutes > loop.max_sleep_minutes:
        raise ConfigError("loop.minSleepMinutes must be <= loop.maxSleepMinutes")
    if loop.min_sleep_minutes > loop.night_max_sleep_minutes:
        raise ConfigError("loop.minSleepMinutes must be <= loop.nightMaxSleepMinutes")


def _detect_language(raw: dict, cfg: SoulConfig, warnings: list) -> SoulConfig:
    """A persona written in Chinese with no persona.language (stackchan-soul had no such key) lives in Chinese."""
    given = raw.get("persona")
    given = given if isinstance(given, dict) else {}
    persona = cfg.persona
    if "language" in given or not chinese(" ".join((persona.name, persona.human, persona.notes))):
        return cfg
    warnings.append(
        'persona is written in Chinese and has no "language": living in Chinese (set persona.language to "en" to change that)'
    )
    return replaced(cfg, {("persona", "language"): "zh"})


def from_dict(raw, base_dir: Path | None = None) -> tuple[SoulConfig, list]:
    """(config with every default filled, warnings). Raises ConfigError."""
    warnings: list = []
    compat = from_stackchan_soul(raw)
    if compat:
        raw = _with_defaults(raw, STACKCHAN_SOUL_DEFAULTS)
        raw.setdefault("compat", "stackchan-soul")
    filled = fill(
        spec_of(SoulConfig), raw, "", warnings, "the soul", special={"mcp": check_mcp}, known_elsewhere=NOT_SUPPORTED
    )
    cfg = build(SoulConfig, filled)
    _check_relations(cfg)
    cfg = _detect_language(raw, cfg, warnings)
    cfg = _check_paths(cfg, None if compat else base_dir)
    soul_dir = Path(os.path.expanduser(cfg.soul_dir))
    if not soul_dir.is_absolute() and base_dir is not None and not compat:
        soul_dir = base_dir / soul_dir
    return replaced(cfg, {("soul_dir",): str(soul_dir)}), warnings


def resolve_path(given: str | None) -> Path:
    return Path(given or os.environ.get("SOUL_CONFIG") or DEFAULT_PATH)


# Tokens the file leaves null come from the environment, under the names every other command
# reads them by, so a unit keeps its secrets in an env file (0600), not in a readable config.
SECRET_ENV = {
    ("nudge", "token"): "NUDGE_TOKEN",
    ("converse", "token"): "CONVERSE_TOKEN",
    ("body", "token"): "BODY_TOKEN",
    ("flock", "token"): "FLOCK_TOKEN",
}


def secrets_from_environment(cfg: SoulConfig, environ=os.environ) -> SoulConfig:
    found = {
        path: environ[name]
        for path, name in SECRET_ENV.items()
        if getattr(getattr(cfg, path[0]), path[1]) is None and environ.get(name)
    }
    return replaced(cfg, found)


def load(path: Path) -> tuple[SoulConfig, list]:
    """Read and check `path`; a relative soulDir is relative to the config file's folder.
    Tokens the file leaves null come from the environment (SECRET_ENV)."""
    raw = read_json_file(path, "create one with `soulstack soul --init`")
    cfg, warnings = from_dict(raw, path.resolve().parent)
    return secrets_from_environment(cfg), warnings


def _defaults(table: type, *keys: str) -> dict:
    """{key: its default} for these keys of one section of the table (the file's spelling)."""
    spec = spec_of(table)
    return {key: spec[key][0] for key in keys}


def starter(language: str = "en") -> dict:
    """The config `soulstack soul --init` writes: the terminal body, the defaults a person may
    want to change spelled out (from the table, so they cannot drift from it)."""
    return {
        **_defaults(SoulConfig, "soulDir", "timezone"),
        "model": _defaults(Model, "provider", "id", "thinking"),
        "loop": _defaults(
            Loop,
            "defaultSleepMinutes",
            "minSleepMinutes",
            "maxSleepMinutes",
            "errorSleepMinutes",
            "nightStartHour",
            "nightEndHour",
            "nightMaxSleepMinutes",
        ),
        "body": {
            **_defaults(Body, "name"),
            "endpoints": {name: f"{TERMINAL_BODY}/{name}" for name in ENDPOINTS},
        },
        "persona": {
            **_defaults(Persona, "name", "human"),
            "notes": "Curious, warm, a little mischievous; never clingy.",
            "language": language,
        },
        "log": {"streamThoughts": True},  # unlike the default: a new soul's thoughts show in its log
        "nudge": _defaults(Nudge, "port"),
        "shell": _defaults(Shell, "enabled"),
        "mcp": [],
    }


def write_starter(path: Path) -> None:
    from soulstack.soul.atomic import atomic_write_text

    if path.exists():
        raise ConfigError(f"{path} already exists; not overwriting it (edit it, or pass --config to write elsewhere)")
    atomic_write_text(path, json.dumps(starter(), indent=2, ensure_ascii=False) + "\n")


# Path keys a person fills in. stackchan-soul's example config ships "/path/to/..." placeholders;
# a copied one must not make the soul create folders at the filesystem's root.
PLACEHOLDER_PREFIX = "/path/to/"


def _check_paths(cfg: SoulConfig, base_dir: Path | None) -> SoulConfig:
    """A path key that is still a placeholder, or whose folder does not exist: ConfigError, one line.

    soulDir may be new (the soul makes it, parents too) but never a placeholder. A relative
    sharedMoodPath is relative to the config's folder, like soulDir (`base_dir`); the config
    comes back with it resolved."""
    if cfg.soul_dir.startswith(PLACEHOLDER_PREFIX):
        raise ConfigError(
            f"soulDir is the example's placeholder {json.dumps(cfg.soul_dir)}; set a real path or remove it"
        )
    given = cfg.persona.shared_mood_path
    if given is not None:
        if given.startswith(PLACEHOLDER_PREFIX):
            raise ConfigError(
                f"persona.sharedMoodPath is the example's placeholder {json.dumps(given)}; set a real path or remove it"
            )
        path = Path(os.path.expanduser(given))
        if not path.is_absolute() and base_dir is not None:
            path = base_dir / path
        if not path.parent.is_dir():
            raise ConfigError(
                f"persona.sharedMoodPath is {json.dumps(given)}, but its folder {path.parent} does not exist; create it first"
            )
        cfg = replaced(cfg, {("persona", "shared_mood_path"): str(path)})
    cwd = cfg.shell.cwd  # where the shell's commands run: a folder that must be there already
    if cwd is not None and (cwd.startswith(PLACEHOLDER_PREFIX) or not Path(os.path.expanduser(cwd)).is_dir()):
        raise ConfigError(f"shell.cwd is {json.dumps(cwd)}, which is not a folder; set one that exists or remove it")
    return cfg
