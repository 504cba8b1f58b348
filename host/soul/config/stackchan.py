"""A config written for stackchan-soul: how it is recognised, the defaults it keeps, the keys it
has that the soul does not carry.

soulstack.soul.config.from_dict asks `from_stackchan_soul` first; a yes fills in
STACKCHAN_SOUL_DEFAULTS where the file says nothing, and every key of NOT_SUPPORTED it has is
named once in a warning.
"""

from typing import Any, TypeGuard

# stackchan-soul keys we know and do not carry over: named once at start, never silently dropped.
NOT_SUPPORTED: dict[str, str] = {
    "worldSearch": "worldSearch (stackchan-soul's single search tool) is not supported; list the search server under mcp instead",
    "weixin": "weixin (stackchan-soul's WeChat tool) is not supported; it is ignored",
}

# Where stackchan-soul's documented defaults differ from ours (its src/config.ts), a config
# written for it keeps them: short sleeps, no night window unless it names one, thoughts
# streamed to the log, no daily wake budget, soulDir relative to the working directory.
STACKCHAN_SOUL_DEFAULTS: dict[str, dict[str, Any]] = {
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


def from_stackchan_soul(raw: object) -> TypeGuard[dict[str, Any]]:
    """Whether `raw` is a config written for stackchan-soul: said so, or only it uses these keys
    (only an object can be one)."""
    if not isinstance(raw, dict):
        return False
    model = raw.get("model")
    model = model if isinstance(model, dict) else {}
    return (
        raw.get("compat") == "stackchan-soul"
        or model.get("provider") == "amazon-bedrock"
        or bool(set(raw) & set(NOT_SUPPORTED))
    )


def with_stackchan_soul_defaults(raw: dict[str, Any]) -> dict[str, Any]:
    """`raw` with stackchan-soul's defaults filled in where it says nothing, and `compat` said."""
    merged = _with_defaults(raw, STACKCHAN_SOUL_DEFAULTS)
    merged.setdefault("compat", "stackchan-soul")
    return merged


def _with_defaults(raw: dict[str, Any], defaults: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """`raw` with `defaults` filled in where it says nothing (one level of sections)."""
    merged = dict(raw)
    for name, values in defaults.items():
        given = raw.get(name)
        given = given if isinstance(given, dict) else {}
        merged[name] = {**values, **given} if isinstance(raw.get(name, {}), dict) else raw[name]
    return merged
