"""Checking a JSON config file: the one style for the soul's and the flock's.

A config is described by a spec: a dict whose leaves are `(default, check)`
tuples and whose dicts are nested objects. `fill` overlays what the file gives
on the defaults and runs every leaf's check. A wrong value raises ConfigError
with one line naming the key path and what a valid value is
(`loop.maxSleepMinutes must be a number >= 1, not 0`); a key the spec does not
know is a warning, never an error, so an older or newer file still starts.

It sits on the ground floor so every feature can use it without importing
another feature (the soul's config and the flock's config both do).
"""

import difflib
import json
from pathlib import Path


class ConfigError(ValueError):
    """One line naming the key path and what a valid value is."""


# --- value checks: each returns the clean value or raises ConfigError(path ...) ---------


def number(minimum=None, maximum=None, integer=False):
    def check(path, value):
        kind = "an integer" if integer else "a number"
        ok = isinstance(value, (int, float)) and not isinstance(value, bool)
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


def string(optional=False, nonempty=False):
    def check(path, value):
        if value is None and optional:
            return None
        if not isinstance(value, str) or (nonempty and not value.strip()):
            raise ConfigError(f"{path} must be {'a non-empty' if nonempty else 'a'} string, not {json.dumps(value)}")
        return value

    return check


def boolean(path, value):
    if not isinstance(value, bool):
        raise ConfigError(f"{path} must be true or false, not {json.dumps(value)}")
    return value


def choice(*options, optional=False):
    def check(path, value):
        if value is None and optional:
            return None
        if value not in options:
            raise ConfigError(f"{path} must be one of {', '.join(options)}, not {json.dumps(value)}")
        return value

    return check


def url(optional=False):
    def check(path, value):
        if value is None and optional:
            return None
        if not isinstance(value, str) or not value.startswith(("http://", "https://")):
            raise ConfigError(f"{path} must be an http:// or https:// URL, not {json.dumps(value)}")
        return value

    return check


def port(optional=False, minimum=0):
    inner = number(minimum, 65535, integer=True)

    def check(path, value):
        if value is None and optional:
            return None
        return inner(path, value)

    return check


# --- a whole file ----------------------------------------------------------------------------


def fill(spec: dict, given, path: str, warnings: list, who: str, special=None, known_elsewhere=None) -> dict:
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
    out = {}
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


def did_you_mean(key: str, spec: dict, path: str = "") -> str:
    """ " (did you mean loop.maxSleepMinutes?)" for a key close to one the spec knows (a typo, another case), else ""."""
    known = [name for name in spec if not name.startswith("_")]
    by_case = {name.lower(): name for name in known}
    close = [by_case[key.lower()]] if key.lower() in by_case else difflib.get_close_matches(key, known, n=1, cutoff=0.7)
    return f" (did you mean {path + '.' if path else ''}{close[0]}?)" if close else ""


def read_json_file(path: Path, missing_hint: str = ""):
    """The decoded JSON of `path`; ConfigError in one line when it is missing, unreadable or not JSON."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"{path} does not exist{'; ' + missing_hint if missing_hint else ''}") from None
    except (OSError, UnicodeDecodeError) as error:
        raise ConfigError(f"{path} cannot be read: {error}") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        raise ConfigError(
            f"{path} is not valid JSON: {error.msg} at line {error.lineno} column {error.colno}"
        ) from None
