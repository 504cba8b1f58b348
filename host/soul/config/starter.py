"""The starter soul.config.json `soulstack soul --init` (and `home init`) writes: the terminal body,
and the defaults a person may want to change spelled out, taken from the table so they cannot
drift from it."""

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from soulstack.config_checks import ConfigError, spec_of
from soulstack.protocol.shapes import ENDPOINTS
from soulstack.soul.config.table import Body, Loop, Model, Nudge, Persona, Shell, SoulConfig

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

TERMINAL_BODY = "http://127.0.0.1:9310"


def _defaults(table: "type[DataclassInstance]", *keys: str) -> dict[str, Any]:
    """{key: its default} for these keys of one section of the table (the file's spelling)."""
    spec = spec_of(table)
    defaults = {}
    for key in keys:
        rule = spec[key]
        assert isinstance(rule, tuple), f"{key} is a section, not an option"
        defaults[key] = rule[0]
    return defaults


def starter(language: str = "en") -> dict[str, Any]:
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


def write_starter(path: Path, nudge_port: int | None = None) -> None:
    """`nudge_port`: the soul's --port, kept in the file (else the next start would listen on the default)."""
    from soulstack.soul.atomic import atomic_write_text

    if path.exists():
        raise ConfigError(f"{path} already exists; not overwriting it (edit it, or pass --config to write elsewhere)")
    if not path.parent.is_dir():  # a typo in --config must not make folders nobody meant
        raise ConfigError(f"{path.parent} is not a folder: make it first, or pass --config a path in one")
    written = starter()
    if nudge_port is not None:
        written["nudge"]["port"] = nudge_port
    atomic_write_text(path, json.dumps(written, indent=2, ensure_ascii=False) + "\n")
