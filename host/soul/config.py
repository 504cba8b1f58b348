"""soul.config.json: load, fill defaults, validate.

The keys are stackchan-soul's, so an existing soul's config moves over as it
is. `SPEC` below is the single list of every key: its default and what a valid
value looks like. A wrong value stops start-up with one line naming the key
path (`loop.maxSleepMinutes must be a number >= 1`); a key we do not know is a
warning, never an error, so a newer or older config still starts.

To add a key: add one entry to `SPEC` (and a line to docs/soul.md). The checks
themselves are shared with the flock's config (soulstack.config_checks).
"""

import json
import os
import shlex
from pathlib import Path
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from soulstack.cjk import chinese
from soulstack.config_checks import ConfigError, boolean, choice, fill, number, port, read_json_file, string, url
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


# --- the spec: every key, its default, its check ------------------------------------------
# A dict is a nested object; a (default, check) tuple is a leaf.

SPEC = {
    "compat": (None, choice("stackchan-soul", optional=True)),  # a config written for stackchan-soul
    "soulDir": ("soul", string(nonempty=True)),
    "timezone": (None, timezone),
    "model": {
        "provider": (None, choice(*PROVIDERS, optional=True)),  # None: chosen from the environment
        "id": (None, string(optional=True)),  # None: the provider's default model
        # A cheaper model of the same provider for wakings with no person, no nudge and nothing new
        # (loop.Soul.mind); None: the main model always.
        "routine": (None, string(optional=True)),
        "region": (None, string(optional=True)),  # amazon-bedrock: None reads AWS_REGION
        "thinking": ("off", choice("off", "low", "medium", "high")),
        "maxTokens": (4096, number(256, integer=True)),
        "cacheTtl": ("1h", choice("5m", "1h")),
        "keepWarm": (True, boolean),  # refresh the 1 h cache during longer sleeps (host/soul/memory/keepwarm.py)
        "maxContextTokens": (100000, number(1000, integer=True)),
        "keepRecentTokens": (20000, number(100, integer=True)),
        "retries": (3, number(0, 10, integer=True)),
    },
    "loop": {
        "defaultSleepMinutes": (20, number(0.05)),
        "minSleepMinutes": (2, number(0.05)),
        "maxSleepMinutes": (60, number(1)),
        "errorSleepMinutes": (10, number(0.05)),
        "nightStartHour": (0, number(0, 23, integer=True)),
        "nightEndHour": (7, number(0, 23, integer=True)),
        "nightMaxSleepMinutes": (120, number(1)),
        "maxStepsPerWaking": (40, number(1, integer=True)),
        # Once a night the soul keeps what matters in its life files and starts the day compact (host/soul/memory/consolidate.py).
        "consolidate": (True, boolean),
    },
    "body": {
        "name": ("the terminal", string()),
        "token": (None, string(optional=True)),
        "endpoints": {name: (None, url(optional=True)) for name in ENDPOINTS},
        # Its microphone may hear its own speaker (a xiaozhi device in auto or realtime mode): only then
        # does the echo guard judge what it hears (host/soul/converse/echo.py). Our firmware never does.
        "hearsItself": (False, boolean),
    },
    "persona": {
        "name": ("Pip", string(nonempty=True)),
        "human": (DEFAULT_HUMAN, string(nonempty=True)),
        "notes": ("", string()),
        "language": ("en", choice(*LANGUAGES)),  # the languages host/soul/prompts/ holds
        "sharedMoodPath": (None, string(optional=True)),
    },
    "log": {
        "streamThoughts": (False, boolean),
    },
    "nudge": {
        "port": (DEFAULT_PORT, port()),
        "token": (None, string(optional=True)),
        # After a waking that took nudges, later ones wait this long and wake it together
        # (a person's words: a few seconds); host/soul/inbox.py.
        "minIntervalSeconds": (60, number(0)),
    },
    "converse": {
        "port": (None, port(optional=True)),  # None: served on nudge.port
        "token": (None, string(optional=True)),  # None: nudge.token
    },
    "health": {
        "port": (None, port(optional=True)),  # None: served on nudge.port
    },
    "drives": {
        "boredomThresholds": ([6, 20, 40], levels(3)),
        "missingHours": ([18, 48], levels(2)),
    },
    "prices": ({}, prices),  # model id prefix -> {input, output, cacheRead, cacheWrite5m, cacheWrite1h}
    "budget": {
        "maxWakesPerDay": (60, lambda path, v: None if v is None else number(1, integer=True)(path, v)),
        "hungrySleepMinutes": (120, number(1)),
        "maxUsdPerDay": (None, lambda path, v: None if v is None else number(0)(path, v)),
    },
    "shell": {
        "enabled": (False, boolean),
        "timeoutSeconds": (30, number(1)),
        "maxOutputChars": (4000, number(100, integer=True)),
        "cwd": (None, string(optional=True)),
        # The fence (host/soul/tools/shell.py): a call runs only when its words start with one
        # entry's words; empty refuses every command.
        "allow": ([], command_list),
        "interpreter": (False, boolean),  # true: through /bin/sh, and the allow-list checks only the first words
    },
    "mcp": ([], None),  # a list; each entry checked by check_mcp
    "flock": {  # the person's flock (soulstack flock): with a url the soul grows its flock tools
        "url": (None, url(optional=True)),
        "token": (None, string(optional=True)),  # the flock's --token, when it is locked
    },
}

MCP_ENTRY = {
    "name": (None, string(nonempty=True)),
    "url": (None, url()),
    "auth": ("none", choice("none", "bearer", "aws-sigv4")),
    "token": (None, string(optional=True)),
    "region": (None, string(optional=True)),
    "service": (None, string(optional=True)),
    "maxOutputChars": (8000, number(100, integer=True)),
    "headers": ({}, header_map),  # extra HTTP headers sent with every request
    "timeoutSeconds": (30, number(1)),  # per request, a tool call included
}


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
    model = raw.get("model") if isinstance(raw.get("model"), dict) else {}
    return (
        raw.get("compat") == "stackchan-soul"
        or model.get("provider") == "amazon-bedrock"
        or bool(set(raw) & set(NOT_SUPPORTED))
    )


def _with_defaults(raw: dict, defaults: dict) -> dict:
    """`raw` with `defaults` filled in where it says nothing (one level of sections)."""
    merged = dict(raw)
    for section, values in defaults.items():
        given = raw.get(section) if isinstance(raw.get(section), dict) else {}
        merged[section] = {**values, **given} if isinstance(raw.get(section, {}), dict) else raw[section]
    return merged


def _fill(spec: dict, given, path: str, warnings: list) -> dict:
    """Defaults from `spec`, overlaid with `given`, every leaf checked (soulstack.config_checks.fill)."""
    return fill(spec, given, path, warnings, "the soul", special={"mcp": check_mcp}, known_elsewhere=NOT_SUPPORTED)


def check_mcp(value, warnings):
    if not isinstance(value, list):
        raise ConfigError(f"mcp must be a list of servers, not {json.dumps(value)[:40]}")
    servers, names = [], set()
    for index, entry in enumerate(value):
        server = _fill(MCP_ENTRY, entry, f"mcp[{index}]", warnings)
        if server["name"] is None or server["url"] is None:
            raise ConfigError(f'mcp[{index}] needs a "name" and a "url"')
        if server["auth"] == "bearer" and not server["token"]:
            raise ConfigError(f'mcp[{index}].token is needed when auth is "bearer"')
        if server["name"] in names:
            raise ConfigError(f"mcp[{index}].name {json.dumps(server['name'])} is used twice")
        names.add(server["name"])
        servers.append(server)
    return servers


def _check_relations(cfg: dict):
    loop = cfg["loop"]
    if loop["minSleepMinutes"] > loop["maxSleepMinutes"]:
        raise ConfigError("loop.minSleepMinutes must be <= loop.maxSleepMinutes")
    if loop["minSleepMinutes"] > loop["nightMaxSleepMinutes"]:
        raise ConfigError("loop.minSleepMinutes must be <= loop.nightMaxSleepMinutes")


def _detect_language(raw: dict, cfg: dict, warnings: list):
    """A persona written in Chinese with no persona.language (stackchan-soul had no such key) lives in Chinese."""
    given = raw.get("persona") if isinstance(raw.get("persona"), dict) else {}
    persona = cfg["persona"]
    if "language" in given or not chinese(" ".join((persona["name"], persona["human"], persona["notes"]))):
        return
    persona["language"] = "zh"
    warnings.append(
        'persona is written in Chinese and has no "language": living in Chinese (set persona.language to "en" to change that)'
    )


def from_dict(raw, base_dir: Path | None = None) -> tuple[dict, list]:
    """(config with every default filled, warnings). Raises ConfigError."""
    warnings: list = []
    compat = from_stackchan_soul(raw)
    if compat:
        raw = _with_defaults(raw, STACKCHAN_SOUL_DEFAULTS)
        raw.setdefault("compat", "stackchan-soul")
    cfg = _fill(SPEC, raw, "", warnings)
    _check_relations(cfg)
    _detect_language(raw, cfg, warnings)
    _check_paths(cfg, None if compat else base_dir)
    soul_dir = Path(os.path.expanduser(cfg["soulDir"]))
    if not soul_dir.is_absolute() and base_dir is not None and not compat:
        soul_dir = base_dir / soul_dir
    cfg["soulDir"] = str(soul_dir)
    return cfg, warnings


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


def secrets_from_environment(cfg: dict, environ=os.environ) -> dict:
    for (section, key), name in SECRET_ENV.items():
        if cfg[section][key] is None and environ.get(name):
            cfg[section][key] = environ[name]
    return cfg


def load(path: Path) -> tuple[dict, list]:
    """Read and check `path`; a relative soulDir is relative to the config file's folder.
    Tokens the file leaves null come from the environment (SECRET_ENV)."""
    raw = read_json_file(path, "create one with `soulstack soul --init`")
    cfg, warnings = from_dict(raw, path.resolve().parent)
    return secrets_from_environment(cfg), warnings


def starter(language: str = "en") -> dict:
    """The config `soulstack soul --init` writes: the terminal body, defaults spelled out."""
    return {
        "soulDir": "soul",
        "timezone": None,
        "model": {"provider": None, "id": None, "thinking": "off"},
        "loop": {
            "defaultSleepMinutes": 20,
            "minSleepMinutes": 2,
            "maxSleepMinutes": 60,
            "errorSleepMinutes": 10,
            "nightStartHour": 0,
            "nightEndHour": 7,
            "nightMaxSleepMinutes": 120,
        },
        "body": {
            "name": "the terminal",
            "endpoints": {name: f"{TERMINAL_BODY}/{name}" for name in ENDPOINTS},
        },
        "persona": {
            "name": "Pip",
            "human": DEFAULT_HUMAN,
            "notes": "Curious, warm, a little mischievous; never clingy.",
            "language": language,
        },
        "log": {"streamThoughts": True},
        "nudge": {"port": DEFAULT_PORT},
        "shell": {"enabled": False},
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


def _check_paths(cfg: dict, base_dir: Path | None):
    """A path key that is still a placeholder, or whose folder does not exist: ConfigError, one line.

    soulDir may be new (the soul makes it, parents too) but never a placeholder. A relative
    sharedMoodPath is relative to the config's folder, like soulDir (`base_dir`)."""
    for key_path, section, key in (
        ("soulDir", None, "soulDir"),
        ("persona.sharedMoodPath", "persona", "sharedMoodPath"),
    ):
        given = cfg[key] if section is None else cfg[section][key]
        if given is None:
            continue
        if given.startswith(PLACEHOLDER_PREFIX):
            raise ConfigError(
                f"{key_path} is the example's placeholder {json.dumps(given)}; set a real path or remove it"
            )
        if section is None:
            continue
        path = Path(os.path.expanduser(given))
        if not path.is_absolute() and base_dir is not None:
            path = base_dir / path
        if not path.parent.is_dir():
            raise ConfigError(
                f"{key_path} is {json.dumps(given)}, but its folder {path.parent} does not exist; create it first"
            )
        cfg[section][key] = str(path)
    cwd = cfg["shell"]["cwd"]  # where the shell's commands run: a folder that must be there already
    if cwd is not None and (cwd.startswith(PLACEHOLDER_PREFIX) or not Path(os.path.expanduser(cwd)).is_dir()):
        raise ConfigError(f"shell.cwd is {json.dumps(cwd)}, which is not a folder; set one that exists or remove it")
