"""What a model call costs, in US dollars.

Default prices per million tokens, checked 2026-10 against Anthropic's
pricing and model pages (platform.claude.com/docs/en/about-claude/pricing
and /docs/en/models/*/overview). Claude Sonnet 5.5's cache reads were cut
from $0.20 to $0.10 on 2026-10-07. Claude Haiku 5.5 charges more for a
whole request once its prompt passes 100k tokens. Cache writes cost 1.25x
input for a 5 minute TTL and 2x for 1 hour; reads 0.1x (0.05x on the 5.5
models). Prices change: the soul's config may pass its own table.
"""

import re
from dataclasses import dataclass

from soulstack.llm.types import Usage


@dataclass(frozen=True)
class Price:
    """USD per million tokens."""

    input: float
    output: float
    cache_read: float
    cache_write_5m: float
    cache_write_1h: float
    long_prompt_tokens: int = 0  # above this many prompt tokens, `long` applies (0: never)
    long: "Price | None" = None


SONNET_5_5 = Price(2.00, 10.00, 0.10, 2.50, 4.00)
SONNET_5 = Price(2.00, 10.00, 0.20, 2.50, 4.00)
SONNET_4 = Price(3.00, 15.00, 0.30, 3.75, 6.00)
OPUS_5_5 = Price(4.00, 20.00, 0.20, 5.00, 8.00)
OPUS_4_5 = Price(5.00, 25.00, 0.50, 6.25, 10.00)
HAIKU_5_5 = Price(0.10, 0.50, 0.01, 0.125, 0.20, 100_000, Price(0.50, 2.50, 0.05, 0.625, 1.00))
HAIKU_4_5 = Price(1.00, 5.00, 0.10, 1.25, 2.00)

# Keys are model id prefixes; the longest matching prefix wins, so dated
# snapshots (claude-haiku-4-5-20251001) find their family.
DEFAULT_PRICES = {
    "claude-sonnet-5-5": SONNET_5_5,
    "claude-sonnet-5": SONNET_5,
    "claude-sonnet-4": SONNET_4,
    "claude-opus-5-5": OPUS_5_5,
    "claude-opus-5": OPUS_4_5,
    "claude-opus-4-8": OPUS_4_5,
    "claude-opus-4-7": OPUS_4_5,
    "claude-opus-4-6": OPUS_4_5,
    "claude-opus-4-5": OPUS_4_5,
    "claude-haiku-5-5": HAIKU_5_5,
    "claude-haiku-4-5": HAIKU_4_5,
}
# An unlisted Claude id is priced as the newest model of its family.
FAMILY_FALLBACK = {"sonnet": SONNET_5_5, "opus": OPUS_5_5, "haiku": HAIKU_5_5}


# Cloud catalogues name the same models differently: Bedrock
# `global.anthropic.claude-sonnet-5-v1:0` (a region or "global" prefix, a version
# suffix), Vertex `claude-sonnet-5@20260101`. The price is the family's.
_CLOUD_ID = re.compile(r"^(?:[a-z]{2,6}\.)?anthropic\.")
_VERSION_SUFFIX = re.compile(r"(?:-v\d+(?::\d+)?|@[\w.-]+|:\d+)$")


def catalogue_id(model_id: str) -> str:
    """The Anthropic API's name for a Bedrock or Vertex model id (others unchanged)."""
    lowered = model_id.strip().lower()
    bare = _CLOUD_ID.sub("", lowered)
    if bare == lowered and "@" not in bare:
        return bare  # not a cloud catalogue's id ("llama3.1:8b" keeps its tag)
    return _VERSION_SUFFIX.sub("", bare)


def price_for(model_id: str, prices: dict | None = None) -> Price | None:
    """The price of `model_id`, or None for a model with no known price (a local one)."""
    table = DEFAULT_PRICES if prices is None else prices
    for candidate in dict.fromkeys((model_id, catalogue_id(model_id))):
        matches = [key for key in table if candidate == key or candidate.startswith(key + "-")]
        if matches:
            return table[max(matches, key=len)]
    bare = catalogue_id(model_id)
    if bare.startswith("claude"):
        for family, price in FAMILY_FALLBACK.items():
            if family in bare:
                return price
    return None


def cost_usd(model_id: str, usage: Usage, cache_ttl: str = "1h", prices: dict | None = None) -> float | None:
    """USD for one call's usage, cache writes priced at `cache_ttl`'s rate; None when
    the model has no known price (a local model, an unknown id) or its server reported
    no usage: unknown, never $0."""
    price = price_for(model_id, prices)
    if price is None or not usage.reported:
        return None
    prompt = usage.input_tokens + usage.cache_read_tokens + usage.cache_write_tokens
    if price.long and prompt > price.long_prompt_tokens:
        price = price.long
    write_rate = price.cache_write_1h if cache_ttl == "1h" else price.cache_write_5m
    dollars = (
        usage.input_tokens * price.input
        + usage.output_tokens * price.output
        + usage.cache_read_tokens * price.cache_read
        + usage.cache_write_tokens * write_rate
    )
    return dollars / 1_000_000
