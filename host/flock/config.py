"""flock.config.json and the `soulstack flock` flags: one table, `FlockSettings`.

Each option is declared once, as a field of the frozen dataclasses below (soulstack.config_checks'
tables): its key in the file (camelCase, like soul.config.json: `body.minIntervalSeconds`), its
flag (`--body-min-interval`), its type, default, check and help. From them come the flags, the
file's reader and the object the flock runs on (`settings.body.min_interval_seconds`).

A flag given on the command line (or its environment variable: FLOCK_TOKEN, BODY_TOKEN,
NUDGE_TOKEN) wins over the file; the file wins over the built-in defaults. A wrong value in
the file stops start-up with one line naming the key; an unknown key is a warning.

To add an option: one field here, a line in docs/flock-and-soul.md.
"""

import argparse
import dataclasses
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from soulstack.config_checks import (
    AttributePath,
    ConfigError,
    boolean,
    choice,
    number,
    option,
    port,
    read,
    read_json_file,
    replaced,
    secret,
    section,
    string,
    url,
    with_flags,
)
from soulstack.flock.jev.tagging import DEFAULT_BAND
from soulstack.flock.lists.flow import FlockConfig

ENV = "FLOCK_CONFIG"
# The flock's minds: the model seam's providers but Bedrock, which only the soul's config reaches.
PROVIDERS = ("anthropic", "openai", "brainstem")


def parse_quiet_hours(text: str) -> tuple[int, int]:
    """ "22-7" -> (22, 7): local hours with no speech; ValueError for anything else."""
    start, sep, end = text.partition("-")
    if not (sep and start.isdigit() and end.isdigit() and int(start) < 24 and int(end) < 24):
        raise ValueError(text)
    return int(start), int(end)


def quiet_hours(path: str, value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, str):
        try:
            parse_quiet_hours(value)
            return value
        except ValueError:
            pass
    raise ConfigError(f'{path} must be "START-END" hours such as "22-7", not {json.dumps(value)}')


def positive(path: str, value: Any) -> float:
    seconds = number(0)(path, value)
    if seconds == 0:
        raise ConfigError(f"{path} must be a number > 0, not 0")
    return seconds


DEFAULTS = FlockConfig()  # the numbers' defaults live with the flow that uses them


@dataclasses.dataclass(frozen=True)
class BodyVoiceSettings:
    url: str | None = option(
        None,
        url(optional=True),
        "a Body Protocol body's URL: the flock speaks approvals and shows its mood there",
        flag="--body",
    )
    token: str | None = option(None, secret, "bearer token for --body", flag="--body-token", env="BODY_TOKEN")
    min_interval_seconds: float = option(
        30.0, number(0), "seconds between two utterances; news meanwhile is merged", flag="--body-min-interval"
    )
    quiet_hours: str | None = option(
        None, quiet_hours, "local hours with no speech, e.g. 22-7 (news waits for the morning)", flag="--quiet-hours"
    )


@dataclasses.dataclass(frozen=True)
class SoulVoiceSettings:
    url: str | None = option(
        None,
        url(optional=True),
        "the soul living in that body (its base URL, e.g. http://127.0.0.1:9202): "
        "the flock tells the soul with nudges instead of talking over it",
        flag="--soul",
    )
    token: str | None = option(None, secret, "the soul's nudge token", flag="--soul-token", env="NUDGE_TOKEN")
    min_interval_seconds: float = option(  # the nudge contract's sender: at most one nudge per this
        10.0, number(0), "seconds between two nudges to the soul; news meanwhile is merged", flag="--soul-min-interval"
    )


@dataclasses.dataclass(frozen=True)
class FlockSettings:
    host: str = option("127.0.0.1", string(nonempty=True), "address to listen on", flag="--host")
    port: int = option(8470, port(minimum=1), "port", flag="--port")
    data_dir: str = option(".crows", string(nonempty=True), "data directory", flag="--data")
    token: str | None = option(
        None,
        secret,
        "lock the flock: every /api/ route and the event stream need this bearer token; the page asks for it once",
        flag="--token",
        env="FLOCK_TOKEN",
    )
    provider: str | None = option(
        None,
        choice(*PROVIDERS, optional=True),
        "model provider (default: anthropic if ANTHROPIC_API_KEY is set, openai if OPENAI_BASE_URL is set, else brainstem)",
        flag="--provider",
        choices=PROVIDERS,
    )
    model: str | None = option(
        None, string(optional=True), "model id (default: the provider's default)", flag="--model"
    )
    demo: bool = option(
        False,
        boolean,
        "no model: a scripted flock brain answers every call, paced so you can watch "
        "(the page says it is a demo; docs/try-the-flock-offline.md)",
        flag="--demo",
    )
    demo_pace_seconds: float = option(  # soulstack.flock.demo.model.PACE_S
        1.5,
        number(0, 60),
        "with --demo: about how long each scripted answer takes (default 1.5; 0 answers at once)",
        flag="--demo-pace",
        metavar="SECONDS",
    )
    token_budget: int = option(DEFAULTS.token_budget, number(1, integer=True), "tokens per list", flag="--token-budget")
    concurrency: int = option(
        DEFAULTS.concurrency, number(1, integer=True), "items of one list worked at once", flag="--concurrency"
    )
    lists_per_minute: int = option(
        DEFAULTS.lists_per_minute,
        number(1, integer=True),
        "lists one requester may send per minute",
        flag="--lists-per-minute",
    )
    heartbeat_seconds: float = option(
        DEFAULTS.heartbeat_s, positive, "seconds between SSE heartbeat comments", flag="--heartbeat"
    )
    rive: str | None = option(
        None,
        string(optional=True),
        "your own .riv file to draw the crows on the page (docs/ui-inputs.md); "
        "without it the flock's built-in crows are drawn (docs/rive-crows.md); "
        "a file the page cannot use stops the flock at start; without the npm runtime the page draws SVG",
        flag="--rive",
        metavar="FILE",
    )
    jev_band: float = option(  # chosen on Jev's calibration set (jev/evaluate.py)
        DEFAULT_BAND,
        number(0.01, 1),
        "the local Jev's high band: at or above it Jev's kind stands (the LLM judge has its own)",
        flag="--jev-band",
    )
    jev_judge: bool = option(
        False,
        boolean,
        "Jev asks the flock's model for each message's kind (three samples; the local Jev when it "
        "fails or the nest's token budget for it is spent; jev/judge.py)",
        flag="--jev-judge",
    )
    # Jev's other backend is for a person trying a model by hand: flags only, not in the file.
    jev_base_url: str | None = option(
        None,
        None,
        "tag with an OpenAI-compatible server's logprobs instead of the local classifier (e.g. http://127.0.0.1:8080/v1)",
        flag="--jev-base-url",
        in_file=False,
    )
    jev_model: str = option(
        "default", None, "the model id for --jev-base-url (default 'default')", flag="--jev-model", in_file=False
    )
    body: BodyVoiceSettings = section(BodyVoiceSettings)
    soul: SoulVoiceSettings = section(SoulVoiceSettings)


def from_dict(raw: object) -> tuple[FlockSettings, list[str]]:
    """(settings with every default filled, warnings). Raises ConfigError."""
    warnings: list[str] = []
    return read(FlockSettings, raw, warnings, "the flock"), warnings


def load(path: Path) -> tuple[FlockSettings, list[str]]:
    settings, warnings = from_dict(read_json_file(path, f"write one (docs/flock-and-soul.md) or drop --config/${ENV}"))
    folder = Path(path).resolve().parent
    relative: dict[AttributePath, str] = {}  # relative to the file, as the soul's soulDir is
    for name in ("data_dir", "rive"):
        given = getattr(settings, name)
        if given is not None and not os.path.isabs(os.path.expanduser(given)):
            relative[(name,)] = str(folder / given)
    return replaced(settings, relative), warnings


def apply(args: argparse.Namespace, env: Mapping[str, str] = os.environ) -> tuple[FlockSettings, list[str]]:
    """The settings: the config file (or the defaults) with every flag the command line gave laid
    over it; the warnings. Raises ConfigError naming the file and the key."""
    path = args.config or env.get(ENV)
    if path:
        try:
            settings, warnings = load(Path(path))
        except ConfigError as error:
            raise ConfigError(str(error) if str(error).startswith(str(path)) else f"{path}: {error}") from None
    else:
        settings, warnings = from_dict({})
    return with_flags(settings, args), [f"{path}: {warning}" for warning in warnings]
