"""The cost meter: tokens and dollars added up per waking and per day.

Prices come from `host/llm/prices.py` (defaults for the current Claude
Sonnet, Haiku and Opus). The soul's config may override them per model id
under a top-level `prices` key, in US dollars per million tokens:

    "prices": {"claude-sonnet-4": {"input": 3, "output": 15, "cacheRead": 0.3,
                                   "cacheWrite5m": 3.75, "cacheWrite1h": 6}}

A partial entry keeps the default for the fields it leaves out; an id with
no default needs all five fields. Keys are id prefixes, like the defaults.
"""

import json
from dataclasses import dataclass, field, replace
from typing import Any

from soulstack.llm.prices import DEFAULT_PRICES, Price, price_for
from soulstack.llm.types import Usage

_FIELDS = {
    "input": "input",
    "output": "output",
    "cacheRead": "cache_read",
    "cacheWrite5m": "cache_write_5m",
    "cacheWrite1h": "cache_write_1h",
}


def prices_from_config(overrides: dict | None) -> dict:
    """The price table: the defaults with the config's `prices` entries laid over them.

    Raises ValueError naming the key path (`prices.<id>.<field>`) on a bad value.
    """
    table = dict(DEFAULT_PRICES)
    for model_id, entry in (overrides or {}).items():
        if not isinstance(entry, dict):
            raise ValueError(f"prices.{model_id} must be an object of USD per million tokens")
        unknown = set(entry) - set(_FIELDS)
        if unknown:
            raise ValueError(f"prices.{model_id}.{sorted(unknown)[0]} is not a price field ({', '.join(_FIELDS)})")
        for key, value in entry.items():
            if not isinstance(value, (int, float)) or isinstance(value, bool) or value < 0:
                raise ValueError(f"prices.{model_id}.{key} must be a number >= 0, not {json.dumps(value)}")
        base = price_for(model_id, table)
        values: dict[str, Any] = {_FIELDS[key]: float(value) for key, value in entry.items()}
        if base is None:
            missing = [key for key, name in _FIELDS.items() if name not in values]
            if missing:
                raise ValueError(f"prices.{model_id}.{missing[0]} is needed: {model_id} has no default price")
            table[model_id] = Price(**values)
        else:
            # An override is exact: it does not inherit a long-prompt surcharge it did not state.
            table[model_id] = replace(base, long=None, long_prompt_tokens=0, **values)
    return table


@dataclass
class Meter:
    """Usage and dollars added up over some stretch (a waking, a day)."""

    usage: Usage = field(default_factory=Usage)
    usd: float = 0.0  # what the priced calls cost
    calls: int = 0
    unpriced: list = field(default_factory=list)  # model ids called that have no price

    def add(self, usage: Usage, usd: float | None, model_id: str = "") -> None:
        """Count one call; `usd` None means its model has no price, so the total is unknown."""
        self.usage = self.usage + usage
        if usd is None:
            if model_id not in self.unpriced:
                self.unpriced.append(model_id)
        else:
            self.usd += usd
        self.calls += 1

    @property
    def known_usd(self) -> float | None:
        """The dollars spent, or None when any call had no price (never a made-up $0)."""
        return None if self.unpriced else self.usd

    def cache_ratio(self) -> float | None:
        """Cache-read tokens per cache-written token; None before anything was written."""
        if not self.usage.cache_write_tokens:
            return None
        return self.usage.cache_read_tokens / self.usage.cache_write_tokens

    def to_json(self) -> dict:
        kept = {"usage": self.usage.to_json(), "usd": round(self.usd, 6), "calls": self.calls}
        if self.unpriced:
            kept["unpriced"] = list(self.unpriced)
        return kept

    @classmethod
    def from_json(cls, data: dict | None) -> "Meter":
        data = data or {}
        counts: dict[str, Any] = {
            key: int(value) for key, value in (data.get("usage") or {}).items() if key in Usage.__dataclass_fields__
        }
        usage = Usage(**counts)
        unpriced = [str(model) for model in data.get("unpriced") or [] if isinstance(model, str)]
        return cls(usage, float(data.get("usd", 0.0)), int(data.get("calls", 0)), unpriced)
