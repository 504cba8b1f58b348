"""flock.config.json: the flock's options in a file (`soulstack flock --config FILE`, or $FLOCK_CONFIG).

The keys mirror the flags, in camelCase like soul.config.json. A flag given on
the command line (or its environment variable: FLOCK_TOKEN, BODY_TOKEN,
NUDGE_TOKEN) wins over the file; the file wins over the built-in defaults.
The checks are the soul's (soulstack.config_checks): a wrong value stops
start-up with one line naming the key; an unknown key is a warning.

To add a key: one entry in SPEC, one in FLAGS, a line in docs/flock-and-soul.md.
"""

import json
import os
from pathlib import Path

from soulstack.config_checks import ConfigError, boolean, choice, fill, number, port, read_json_file, string, url
from soulstack.flock.jev.tagging import DEFAULT_BAND
from soulstack.flock.lists.flow import FlockConfig

ENV = "FLOCK_CONFIG"


def parse_quiet_hours(text: str) -> tuple:
    """ "22-7" -> (22, 7): local hours with no speech; ValueError for anything else."""
    start, sep, end = text.partition("-")
    if not (sep and start.isdigit() and end.isdigit() and int(start) < 24 and int(end) < 24):
        raise ValueError(text)
    return int(start), int(end)


def quiet_hours(path, value):
    if value is None:
        return None
    try:
        parse_quiet_hours(value if isinstance(value, str) else "")
    except ValueError:
        raise ConfigError(f'{path} must be "START-END" hours such as "22-7", not {json.dumps(value)}') from None
    return value


def positive(path, value):
    number(0)(path, value)
    if value == 0:
        raise ConfigError(f"{path} must be a number > 0, not 0")
    return value


DEFAULTS = FlockConfig()  # the numbers' defaults live with the flow that uses them

SPEC = {
    "host": ("127.0.0.1", string(nonempty=True)),
    "port": (8470, port(minimum=1)),
    "dataDir": (".crows", string(nonempty=True)),
    "token": (None, string(optional=True)),
    "provider": (None, choice("anthropic", "openai", "brainstem", optional=True)),
    "model": (None, string(optional=True)),
    "demo": (False, boolean),
    "demoPaceSeconds": (1.5, number(0, 60)),  # soulstack.flock.demo.model.PACE_S
    "tokenBudget": (DEFAULTS.token_budget, number(1, integer=True)),
    "concurrency": (DEFAULTS.concurrency, number(1, integer=True)),
    "listsPerMinute": (DEFAULTS.lists_per_minute, number(1, integer=True)),
    "heartbeatSeconds": (DEFAULTS.heartbeat_s, positive),
    "rive": (None, string(optional=True)),
    "jevBand": (DEFAULT_BAND, number(0.01, 1)),  # chosen from Jev's separate set (jev/evaluate.py)
    "body": {
        "url": (None, url(optional=True)),
        "token": (None, string(optional=True)),
        "minIntervalSeconds": (30.0, number(0)),
        "quietHours": (None, quiet_hours),
    },
    "soul": {
        "url": (None, url(optional=True)),
        "token": (None, string(optional=True)),
        "minIntervalSeconds": (10.0, number(0)),  # the nudge contract's sender: at most one nudge per this
    },
}

# key path in the file -> the flag's attribute on the parsed arguments
FLAGS = {
    "host": "host",
    "port": "port",
    "dataDir": "data",
    "token": "token",
    "provider": "provider",
    "model": "model",
    "demo": "demo",
    "demoPaceSeconds": "demo_pace",
    "tokenBudget": "token_budget",
    "concurrency": "concurrency",
    "listsPerMinute": "lists_per_minute",
    "heartbeatSeconds": "heartbeat",
    "rive": "rive",
    "jevBand": "jev_band",
    "body.url": "body",
    "body.token": "body_token",
    "body.minIntervalSeconds": "body_min_interval",
    "body.quietHours": "quiet_hours",
    "soul.url": "soul",
    "soul.token": "soul_token",
    "soul.minIntervalSeconds": "soul_min_interval",
}


def from_dict(raw) -> tuple[dict, list]:
    """(config with every default filled, warnings). Raises ConfigError."""
    warnings: list = []
    return fill(SPEC, raw, "", warnings, "the flock"), warnings


def load(path: Path) -> tuple[dict, list]:
    cfg, warnings = from_dict(read_json_file(path, f"write one (docs/flock-and-soul.md) or drop --config/${ENV}"))
    folder = Path(path).resolve().parent
    for key in ("dataDir", "rive"):  # relative to the file, as the soul's soulDir is
        if cfg[key] is not None and not os.path.isabs(os.path.expanduser(cfg[key])):
            cfg[key] = str(folder / cfg[key])
    return cfg, warnings


def value_at(cfg: dict, key_path: str):
    for part in key_path.split("."):
        cfg = cfg[part]
    return cfg


def apply(args, env=os.environ) -> list:
    """Fill every flag the command line left unset from the config file (or the defaults); the warnings.

    Raises ConfigError naming the file and the key."""
    path = args.config or env.get(ENV)
    if path:
        try:
            cfg, warnings = load(Path(path))
        except ConfigError as error:
            raise ConfigError(str(error) if str(error).startswith(str(path)) else f"{path}: {error}") from None
    else:
        cfg, warnings = from_dict({})
    for key_path, attr in FLAGS.items():
        if getattr(args, attr) is None:
            setattr(args, attr, value_at(cfg, key_path))
    return [f"{path}: {warning}" for warning in warnings]
