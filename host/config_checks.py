"""Config tables and their checks: each option declared once, for the soul, the flock, ears and tts.

A config is a frozen dataclass (a table) whose fields are `option(default, check, help, flag=...)`s
and `section(...)`s (the tables section below says how). From it come the spec that `fill` reads a
JSON file with, the typed object the program reads by attribute, and its argparse flags.

`fill` overlays what the file gives on the defaults and runs every leaf's check. A wrong value
raises ConfigError with one line naming the key path and what a valid value is
(`loop.maxSleepMinutes must be a number >= 1, not 0`); a key the spec does not know is a warning
(with "did you mean" for a close one), never an error, so an older or newer file still starts.

It sits on the ground floor so every feature can use it without importing another feature.
"""

import argparse
import copy
import dataclasses
import difflib
import json
import math
import typing
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, NoReturn, TypeAlias, TypeVar, overload
from urllib.parse import SplitResult, urlsplit

if TYPE_CHECKING:
    from _typeshed import DataclassInstance


class ConfigError(ValueError):
    """One line naming the key path and what a valid value is."""


# --- value checks: each returns the clean value or raises ConfigError(path ...) ---------
# A check is called with the key's path (for the message) and the file's value, which may be any
# JSON value: that is what it is there to find out.

T = TypeVar("T")
CheckOf: TypeAlias = Callable[[str, Any], T]  # a check whose clean value is a T
Check: TypeAlias = CheckOf[Any]  # any option's check, as a table holds it


@overload
def number(minimum: float | None = None, maximum: float | None = None, *, integer: Literal[True]) -> CheckOf[int]: ...
@overload
def number(
    minimum: float | None = None, maximum: float | None = None, integer: Literal[False] = False
) -> CheckOf[float]: ...
def number(minimum: float | None = None, maximum: float | None = None, integer: bool = False) -> CheckOf[float]:
    def check(path: str, value: Any) -> float:
        kind = "an integer" if integer else "a number"
        ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
        if ok and integer and value != int(value):
            ok = False
        if ok and minimum is not None and value < minimum:
            ok = False
        if ok and maximum is not None and value > maximum:
            ok = False
        if not ok:
            bounds = []
            if minimum is not None:
                bounds.append(f">= {minimum:g}")
            if maximum is not None:
                bounds.append(f"<= {maximum:g}")
            raise ConfigError(
                f"{path} must be {kind}{' ' + ' and '.join(bounds) if bounds else ''}, not {json.dumps(value)}"
            )
        return int(value) if integer else value

    return check


def string(optional: bool = False, nonempty: bool = False) -> CheckOf[str | None]:
    def check(path: str, value: Any) -> str | None:
        if value is None and optional:
            return None
        if not isinstance(value, str) or (nonempty and not value.strip()):
            raise ConfigError(f"{path} must be {'a non-empty' if nonempty else 'a'} string, not {json.dumps(value)}")
        return value

    return check


def secret(path: str, value: Any) -> str | None:
    """A token or key: None (not set) or one word. It goes out as "Authorization: Bearer VALUE", where
    a space or a line break would never match what the other side holds. The message never repeats it."""
    if value is None:
        return None
    if not isinstance(value, str):
        raise ConfigError(f"{path} must be a string (a token), not {json.dumps(value)[:20]}")
    if any(char.isspace() for char in value):
        raise ConfigError(f"{path} must be one word: this token has a space or a line break in it")
    return value


def boolean(path: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise ConfigError(f"{path} must be true or false, not {json.dumps(value)}")
    return value


def choice(*options: str, optional: bool = False) -> CheckOf[str | None]:
    def check(path: str, value: Any) -> str | None:
        if value is None and optional:
            return None
        if not (isinstance(value, str) and value in options):
            raise ConfigError(f"{path} must be one of {', '.join(options)}, not {json.dumps(value)}")
        return value

    return check


def split_url(text: str, schemes: tuple[str, ...] = ("http", "https")) -> SplitResult | None:
    """`text` split by urlsplit, or None when it is no URL one of `schemes` with a host can be: the one
    test of a URL a person gives (a flag, a config key). urlsplit raises on some (an unclosed IPv6
    bracket, http://[::1), reading .port on others (a port that is no number, or over 65535). A space
    or a control character is never part of one: urlsplit keeps it, and a robot's validator, a
    systemd ExecStart line or a shell would split the URL there."""
    if any(char.isspace() or ord(char) < 0x20 or ord(char) == 0x7F for char in text):
        return None
    try:
        parts = urlsplit(text)
        _ = parts.port
    except ValueError:
        return None
    if parts.scheme not in schemes or not parts.hostname:
        return None
    return parts


def url(optional: bool = False) -> CheckOf[str | None]:
    def check(path: str, value: Any) -> str | None:
        if value is None and optional:
            return None
        if not isinstance(value, str) or split_url(value) is None:
            raise ConfigError(f"{path} must be an http:// or https:// URL, not {json.dumps(value)}")
        return value

    return check


def port(optional: bool = False, minimum: int = 0) -> CheckOf[int | None]:
    inner = number(minimum, 65535, integer=True)

    def check(path: str, value: Any) -> int | None:
        if value is None and optional:
            return None
        return inner(path, value)

    return check


# --- a whole file ----------------------------------------------------------------------------


# What `fill` reads a file with: {key: (default, check) or a nested spec for a section}.
Spec: TypeAlias = dict[str, "tuple[Any, Check | None] | Spec"]
# A top-level key's own check: (the file's value, the warnings) -> the clean value.
Special: TypeAlias = Callable[[Any, list[str]], Any]


def fill(
    spec: Spec,
    given: object,
    path: str,
    warnings: list[str],
    who: str,
    special: Mapping[str, Special] | None = None,
    known_elsewhere: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """Defaults from `spec`, overlaid with `given`, every leaf checked.

    `who` names the program in the unknown-key warning ("the soul", "the flock").
    At the top level only: `special` maps a key to its own check (value, warnings) -> value
    (the soul's list of MCP servers); `known_elsewhere` maps a key we know but do not carry
    to the warning that says so (never the generic "not a key ... knows").
    """
    if given is None:
        given = {}
    if not isinstance(given, dict):
        raise ConfigError(f"{path or 'the config'} must be a JSON object, not {json.dumps(given)[:40]}")
    special = (special or {}) if not path else {}
    known_elsewhere = (known_elsewhere or {}) if not path else {}
    out: dict[str, Any] = {}
    for key, rule in spec.items():
        key_path = f"{path}.{key}" if path else key
        if isinstance(rule, dict):
            out[key] = fill(rule, given.get(key), key_path, warnings, who)
            continue
        default, check = rule
        value = given.get(key, default)
        if key in special:
            out[key] = special[key](value, warnings)
        else:
            out[key] = value if check is None or (key not in given and default is None) else check(key_path, value)
    for key in given:
        if key in known_elsewhere:
            warnings.append(known_elsewhere[key])
        elif key not in spec and not key.startswith("_"):
            warnings.append(
                f"{path + '.' if path else ''}{key} is not a key {who} knows{did_you_mean(key, spec, path)}; ignored"
            )
    return out


def did_you_mean(key: str, spec: Spec, path: str = "") -> str:
    """ " (did you mean loop.maxSleepMinutes?)" for a key close to one the spec knows (a typo, another case), else ""."""
    known = [name for name in spec if not name.startswith("_")]
    by_case = {name.lower(): name for name in known}
    close = [by_case[key.lower()]] if key.lower() in by_case else difflib.get_close_matches(key, known, n=1, cutoff=0.7)
    return f" (did you mean {path + '.' if path else ''}{close[0]}?)" if close else ""


def read_json_file(path: Path, missing_hint: str = "") -> Any:  # any JSON value: the reader checks its shape
    """The decoded JSON of `path`; ConfigError in one line when it is missing, unreadable or not JSON."""
    try:  # utf-8-sig: Windows' Notepad starts a saved file with a byte-order mark, which JSON refuses
        text = Path(path).read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        raise ConfigError(f"{path} does not exist{'; ' + missing_hint if missing_hint else ''}") from None
    except (OSError, UnicodeDecodeError) as error:
        raise ConfigError(f"{path} cannot be read: {error}") from None

    def not_json(constant: str) -> NoReturn:
        # Python's reader takes NaN and Infinity; no JSON has them, and no setting can be one.
        raise ConfigError(f"{path} is not valid JSON: {constant} is no number JSON knows; write one")

    try:
        return json.loads(text, parse_constant=not_json)
    except json.JSONDecodeError as error:
        raise ConfigError(
            f"{path} is not valid JSON: {error.msg} at line {error.lineno} column {error.colno}"
        ) from None


# --- tables: each option declared once ---------------------------------------------------
#
# A config is a frozen dataclass whose fields are `option(...)`s and `section(...)`s. One
# field holds everything about an option: its key in the file (the attribute's name in
# camelCase unless `key` says otherwise: max_sleep_minutes <-> loop.maxSleepMinutes), its
# flag, its type (the annotation), its default, its check and its help. From the class come
# the spec `fill` reads a file with (`spec_of`), the typed object (`read`, `build`), the
# argparse options (`add_flags`) and the flags laid over a config (`with_flags`). Python reads
# `cfg.loop.max_sleep_minutes`; only the files and their messages speak camelCase.

D = TypeVar("D", bound="DataclassInstance")  # a table: a config object's class

OPTION = "soulstack.option"
SECTION = "soulstack.section"


@dataclasses.dataclass(frozen=True)
class Option:
    default: Any  # the option's value when the file gives none: any of the values its type allows
    check: Check | None
    help: str | Callable[[], str]
    flag: str | None  # "--port"; None: the file only
    key: str | None  # the file's key; None: camelCase of the attribute; "" (in_file=False): no key
    env: str | None  # a secret: the flag also comes as FLAG-file and from $env (commandline.add_secret)
    metavar: str | None
    choices: tuple[str, ...] | None
    many: bool  # the flag may be given again and again (argparse "append")


def option(
    default: Any = None,
    check: Check | None = None,
    help: str | Callable[[], str] = "",
    *,
    flag: str | None = None,
    key: str | None = None,
    in_file: bool = True,
    env: str | None = None,
    metavar: str | None = None,
    choices: tuple[str, ...] | None = None,
    many: bool = False,
) -> Any:  # a dataclasses.field, which the dataclass reads as the attribute's default (as field() itself is)
    """One option of a config table (a frozen dataclass's field); see the section's comment."""
    meta = {OPTION: Option(default, check, help, flag, key if in_file else "", env, metavar, choices, many)}
    if isinstance(default, (list, dict)):  # each config gets its own copy of a list or dict default
        return dataclasses.field(default_factory=lambda: copy.deepcopy(default), metadata=meta)
    return dataclasses.field(default=default, metadata=meta)


def section(table: "type[DataclassInstance]", key: str | None = None) -> Any:  # a field, as option()'s
    """A nested object of the file (`loop`, `body.endpoints`), itself a table."""
    return dataclasses.field(default_factory=table, metadata={SECTION: key})


def camel(name: str) -> str:
    """max_sleep_minutes -> maxSleepMinutes: the file's spelling of an attribute."""
    first, *rest = name.split("_")
    return first + "".join(word[:1].upper() + word[1:] for word in rest)


def file_key(item: dataclasses.Field[Any]) -> str:
    meta = item.metadata.get(OPTION) or item.metadata
    given = meta.key if isinstance(meta, Option) else meta.get(SECTION)
    return camel(item.name) if given is None else given


def section_table(item: dataclasses.Field[Any]) -> "type[DataclassInstance]":
    """The table of a `section(...)` field: its default_factory is the table itself."""
    table = item.default_factory
    assert isinstance(table, type) and dataclasses.is_dataclass(table), item.name
    return table


def spec_of(table: "type[DataclassInstance]") -> Spec:
    """The spec `fill` reads a file with: {key: (default, check) or a nested spec}, in the table's order."""
    spec: Spec = {}
    for item in dataclasses.fields(table):
        if SECTION in item.metadata:
            spec[file_key(item)] = spec_of(section_table(item))
        elif (meta := item.metadata.get(OPTION)) and meta.key != "":
            spec[file_key(item)] = (copy.deepcopy(meta.default), meta.check)  # a list default is each config's own
    return spec


def build(table: type[D], values: Mapping[str, Any]) -> D:
    """The frozen config object from a filled dict in the file's keys (what `fill` returns)."""
    kwargs: dict[str, Any] = {}
    for item in dataclasses.fields(table):
        if SECTION in item.metadata:
            kwargs[item.name] = build(section_table(item), values[file_key(item)])
        elif item.metadata.get(OPTION) and item.metadata[OPTION].key != "":
            kwargs[item.name] = values[file_key(item)]
    return table(**kwargs)


def read(
    table: type[D],
    given: object,
    warnings: list[str],
    who: str,
    path: str = "",
    special: Mapping[str, Special] | None = None,
    known_elsewhere: Mapping[str, str] | None = None,
) -> D:
    """The config object from a file's decoded JSON: defaults filled, every value checked, warnings
    for unknown keys (with "did you mean"); ConfigError in one line for a wrong value."""
    return build(table, fill(spec_of(table), given, path, warnings, who, special, known_elsewhere))


AttributePath: TypeAlias = tuple[str, ...]  # ("loop", "max_sleep_minutes"): cfg.loop.max_sleep_minutes


def flag_options(
    table: "type[DataclassInstance]", prefix: AttributePath = ()
) -> Iterator[tuple[AttributePath, Option]]:
    """(attribute path, Option) for every option of `table` with a flag, sections included."""
    for item in dataclasses.fields(table):
        if SECTION in item.metadata:
            yield from flag_options(section_table(item), (*prefix, item.name))
        elif (meta := item.metadata.get(OPTION)) and meta.flag:
            yield (*prefix, item.name), meta


def flag_of(meta: Option) -> str:
    """The flag of an option `flag_options` gave (it gives only those with one)."""
    assert meta.flag is not None, "an option with no flag"
    return meta.flag


def dest(meta: Option) -> str:
    """The argparse attribute of a flagged option (--body-token -> body_token)."""
    return flag_of(meta).lstrip("-").replace("-", "_")


# Where a flag is added: the command's parser or one of its argument groups.
Flags: TypeAlias = "argparse.ArgumentParser | argparse._ArgumentGroup"
# soulstack.commandline.add_secret(where, flag, env, help): a secret's flag, its -file and its $env.
AddSecret: TypeAlias = Callable[[Flags, str, str, str], object]


def add_flags(
    parser: argparse.ArgumentParser,
    table: "type[DataclassInstance]",
    groups: Mapping[str, Flags] | None = None,
    add_secret: AddSecret | None = None,
) -> None:
    """The argparse options of every flagged option in `table`, in its order. Each is None unless
    given, so `with_flags` lays only what the command line said over the file and the defaults.
    `groups`: the first attribute of an option's path -> the argparse group it is listed under.
    `add_secret`: soulstack.commandline.add_secret, for the options with an `env` (passed in, since
    the ground floor's modules do not import each other)."""
    hints: dict[type, dict[str, Any]] = {}
    for path, meta in flag_options(table):
        flag = flag_of(meta)
        owner = table
        for name in path[:-1]:
            owner = section_table(next(f for f in dataclasses.fields(owner) if f.name == name))
        hints.setdefault(owner, typing.get_type_hints(owner))
        kind = hints[owner][path[-1]]
        target = (groups or {}).get(path[0], parser)
        shown = meta.help() if callable(meta.help) else meta.help  # a help that names where a path is now
        unsaid = meta.default is None or meta.default is False or meta.default in ([], {})  # nothing worth saying
        if not unsaid and "(default" not in shown and not meta.env:
            shown += f" (default {meta.default:g})" if isinstance(meta.default, float) else f" (default {meta.default})"
        if meta.env:
            assert add_secret is not None, f"{flag} is a secret: pass add_secret"
            add_secret(target, flag, meta.env, shown)
            continue
        extra: dict[str, Any] = {"metavar": meta.metavar} if meta.metavar else {}
        if meta.choices:
            extra["choices"] = meta.choices
        base = next((t for t in typing.get_args(kind) if t is not type(None)), kind)
        if base is bool:
            target.add_argument(flag, action="store_true", default=None, help=shown)
        elif meta.many:
            target.add_argument(flag, action="append", help=shown, **extra)
        else:
            target.add_argument(flag, type=base if base in (int, float) else str, help=shown, **extra)


def with_flags(config: D, args: argparse.Namespace) -> D:
    """`config` with every flag the command line gave (not None) in place of its value."""
    changes: dict[AttributePath, Any] = {}
    for path, meta in flag_options(type(config)):
        value = getattr(args, dest(meta), None)
        if value is not None:
            changes[path] = value
    return replaced(config, changes)


def replaced(config: D, changes: Mapping[AttributePath, Any]) -> D:
    """A copy of a frozen config with {attribute path tuple: value} changed, sections and all."""
    own = {path[0]: value for path, value in changes.items() if len(path) == 1}
    for name in {path[0] for path in changes if len(path) > 1}:
        inner = {path[1:]: value for path, value in changes.items() if len(path) > 1 and path[0] == name}
        own[name] = replaced(getattr(config, name), inner)
    return dataclasses.replace(config, **own)


def defaults_of(table: "type[DataclassInstance]") -> dict[AttributePath, Any]:
    """{attribute path: default} of every flagged option (a command with no file starts from these)."""
    return {path: meta.default for path, meta in flag_options(table)}
