"""soul.config.json: load, fill defaults, validate.

The keys are stackchan-soul's, so an existing soul's config moves over as it
is. `SoulConfig` is the single table of every key: its type, default, what a
valid value looks like and what it is for; the loaded config is that frozen object
(`cfg.loop.max_sleep_minutes`). A wrong value stops start-up with one line naming the key
path (`loop.maxSleepMinutes must be a number >= 1`); a key we do not know is a
warning, never an error, so a newer or older config still starts.

What lives where:

  table.py      the table: a frozen dataclass per object of the file, and the checks of the
                values only the soul has (a time zone, a price table, shell commands)
  stackchan.py  a config written for stackchan-soul: how it is told, the defaults it keeps,
                the keys it has that the soul does not carry (NOT_SUPPORTED)
  starter.py    the starter file `soulstack soul --init` writes
  here          reading a file: from_dict, load, the checks across keys and of the paths,
                the tokens the environment gives

Every name callers use is importable from here (`from soulstack.soul.config import SoulConfig`).

To add a key: add one field to its section's dataclass in table.py (and a line to docs/soul.md).
The checks themselves are shared with the flock's config (soulstack.config_checks).
"""

import json
import os
from collections.abc import Mapping
from pathlib import Path

from soulstack.cjk import chinese
from soulstack.config_checks import AttributePath, ConfigError, build, fill, read_json_file, replaced, spec_of
from soulstack.soul.config.stackchan import (
    NOT_SUPPORTED,
    STACKCHAN_SOUL_DEFAULTS,
    from_stackchan_soul,
    with_stackchan_soul_defaults,
)
from soulstack.soul.config.table import (
    DEFAULT_PORT,
    THINKING_BUDGET,
    Body,
    Budget,
    Converse,
    Drives,
    Endpoints,
    Flock,
    Health,
    Log,
    Loop,
    McpServer,
    Model,
    Nudge,
    Persona,
    Shell,
    SoulConfig,
)
from soulstack.soul.config.starter import TERMINAL_BODY, starter, write_starter

__all__ = [
    "DEFAULT_PATH",
    "DEFAULT_PORT",
    "NOT_SUPPORTED",
    "PLACEHOLDER_PREFIX",
    "SECRET_ENV",
    "STACKCHAN_SOUL_DEFAULTS",
    "TERMINAL_BODY",
    "THINKING_BUDGET",
    "Body",
    "Budget",
    "Converse",
    "Drives",
    "Endpoints",
    "Flock",
    "Health",
    "Log",
    "Loop",
    "McpServer",
    "Model",
    "Nudge",
    "Persona",
    "Shell",
    "SoulConfig",
    "check_mcp",
    "from_dict",
    "from_stackchan_soul",
    "load",
    "resolve_path",
    "secrets_from_environment",
    "starter",
    "write_starter",
]

DEFAULT_PATH = "soul.config.json"


def check_mcp(value: object, warnings: list[str]) -> list[McpServer]:
    """mcp[]: each entry a McpServer, checked; ConfigError naming the entry."""
    if not isinstance(value, list):
        raise ConfigError(f"mcp must be a list of servers, not {json.dumps(value)[:40]}")
    servers: list[McpServer] = []
    names: set[str] = set()
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


def _check_relations(cfg: SoulConfig) -> None:
    loop = cfg.loop
    if loop.min_sleep_minutes > loop.max_sleep_minutes:
        raise ConfigError("loop.minSleepMinutes must be <= loop.maxSleepMinutes")
    if loop.min_sleep_minutes > loop.night_max_sleep_minutes:
        raise ConfigError("loop.minSleepMinutes must be <= loop.nightMaxSleepMinutes")


def _detect_language(raw: object, cfg: SoulConfig, warnings: list[str]) -> SoulConfig:
    """A persona written in Chinese with no persona.language (stackchan-soul had no such key) lives in Chinese.
    `raw` is the file's object, or None (a file of `null`: every default, as `fill` reads it)."""
    given = raw.get("persona") if isinstance(raw, dict) else None
    given = given if isinstance(given, dict) else {}
    persona = cfg.persona
    if "language" in given or not chinese(" ".join((persona.name, persona.human, persona.notes))):
        return cfg
    warnings.append(
        'persona is written in Chinese and has no "language": living in Chinese (set persona.language to "en" to change that)'
    )
    return replaced(cfg, {("persona", "language"): "zh"})


def from_dict(raw: object, base_dir: Path | None = None) -> tuple[SoulConfig, list[str]]:
    """(config with every default filled, warnings). Raises ConfigError."""
    warnings: list[str] = []
    compat = False
    if from_stackchan_soul(raw):
        compat = True
        raw = with_stackchan_soul_defaults(raw)
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
SECRET_ENV: dict[AttributePath, str] = {
    ("nudge", "token"): "NUDGE_TOKEN",
    ("converse", "token"): "CONVERSE_TOKEN",
    ("body", "token"): "BODY_TOKEN",
    ("flock", "token"): "FLOCK_TOKEN",
}


def secrets_from_environment(cfg: SoulConfig, environ: Mapping[str, str] = os.environ) -> SoulConfig:
    found = {
        path: environ[name]
        for path, name in SECRET_ENV.items()
        if getattr(getattr(cfg, path[0]), path[1]) is None and environ.get(name)
    }
    return replaced(cfg, found)


def load(path: Path) -> tuple[SoulConfig, list[str]]:
    """Read and check `path`; a relative soulDir is relative to the config file's folder.
    Tokens the file leaves null come from the environment (SECRET_ENV)."""
    raw = read_json_file(path, "create one with `soulstack soul --init`")
    cfg, warnings = from_dict(raw, path.resolve().parent)
    return secrets_from_environment(cfg), warnings


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
