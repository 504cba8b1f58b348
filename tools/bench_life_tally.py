"""The accounting of tools/bench-life: every answered call, per day, priced; and where the tokens go.

Every day is counted: the bench's fake (Recording, a FakeAnthropic) notes each
call it answers -- its virtual time, the model id the request named, the usage
it reported, what it was (a waking's step, a keep-warm refresh, a fold's
summary, a consolidation) -- and prices it with host/llm/prices.py by that
model's own id (a routine mind mixes two models), its 1 h and 5 m cache writes
each at their own rate. A call counts in the day its virtual time falls in
(keep-warm refreshes too; the tail of a waking begun before the end, past it,
in the last day), a waking in the day it begins (an on_waking hook). So a
30-day run reports 30 days: VITALS.json (14 days of history) only feeds
--per-waking now. per_day gives the day rows, totals and last_line the N days
together.

Where the tokens go: every request the soul sent is cut into its blocks, in
the order the cache sees them, and each block is put in a category (tools,
system prompt, the snapshot's inner-life block, its volatile block, thoughts,
tool calls, tool results, settled calls, the fold's summary, the
consolidation's words); the usage the fake reported says which blocks were
read from the cache, written to it or sent uncached, so each category gets
its share of the dollars
(spending). The session's messages give what each waking adds to the history,
per category (added_per_waking); fixed_tokens, what every call sends before
its messages.
"""

from dataclasses import dataclass
from datetime import date, datetime, timedelta

from soulstack.fakes.anthropic_api import FakeAnthropic, cacheable_blocks, estimate_tokens
from soulstack.llm.anthropic import to_api_message
from soulstack.llm.prices import cost_usd, price_for
from soulstack.llm.types import Usage
from soulstack.soul.prompts import texts
from tools.bench_life_player import CONSOLIDATION, request_kind

EN = texts("en").TEXT  # the English words (host/soul/prompts/en.py)


# --- every call, every day ------------------------------------------------------------------


@dataclass(frozen=True)
class Call:
    """One answered model call: its virtual time (in the soul's zone), the model id it named,
    the usage the fake reported for it, and what it was (request_kind)."""

    at: datetime
    model: str
    usage: dict
    kind: str = "waking"

    @property
    def context(self) -> int:
        """The request's size in tokens: uncached input, cache read and cache write."""
        u = self.usage
        return u["input_tokens"] + u["cache_read_input_tokens"] + u["cache_creation_input_tokens"]


class Recording(FakeAnthropic):
    """The fake API, noting every request it answers (build_message runs once per answered request)."""

    def __init__(self, *args, now, **kwargs):
        super().__init__(*args, **kwargs)
        self.now = now
        self.calls: list[Call] = []

    def build_message(self, body, spec):
        reply = super().build_message(body, spec)
        self.calls.append(Call(self.now(), body["model"], reply["usage"], request_kind(body)))
        return reply


def call_usd(model: str, usage: dict) -> float:
    """One call's $ at host/llm/prices.py's prices for its own model, 1 h and 5 m cache writes at their rates."""
    written = usage["cache_creation_input_tokens"]
    one_hour = (usage.get("cache_creation") or {}).get("ephemeral_1h_input_tokens", 0)
    tokens = Usage(usage["input_tokens"], usage["output_tokens"], usage["cache_read_input_tokens"], written)
    at_1h, at_5m = cost_usd(model, tokens, "1h"), cost_usd(model, tokens, "5m")
    if at_1h is None:
        raise SystemExit(f"bench-life: no price for model {model!r} in host/llm/prices.py")
    # The cost is linear in the write rate: the 1 h writes' share at the 1 h rate, the rest at the 5 m rate.
    return at_5m + (at_1h - at_5m) * (one_hour / written if written else 0.0)


DAY_FIELDS = (
    "wakings",
    "calls",
    "keepWarm",
    "routine",
    "folds",
    "consolidations",
    "input",
    "output",
    "cacheRead",
    "cacheWrite",
    "lastContext",
    "peakContext",
    "leastContext",
    "usd",
    "keepWarmUsd",
)


def per_day(calls, wakings, first: date, days: int, main_model: str) -> list[dict]:
    """One row per simulated day, `first` and the `days` - 1 after it, every day counted.

    `calls`: Call records; `wakings`: the local date each waking began on. A call counts in the day
    of its time (so does a keep-warm refresh); one after the last day (the tail of a waking begun
    before the end) in the last day. A row: wakings, calls, of them keep-warm, on a model other than
    `main_model` (the routine mind), fold summaries and consolidation requests (one a turn), the four token counts,
    the context size of the day's last and of its largest request, of its smallest waking call (the morning
    after a consolidation), and its $ (keep-warm's apart too)."""
    rows = [
        dict({name: 0 for name in DAY_FIELDS}, day=first + timedelta(days=i), usd=0.0, keepWarmUsd=0.0)
        for i in range(days)
    ]

    def row_of(day: date) -> dict:
        index = (day - first).days
        if index < 0:
            raise ValueError(f"a call or waking on {day}, before the first simulated day {first}")
        return rows[min(index, days - 1)]

    for day in wakings:
        row_of(day)["wakings"] += 1
    for call in sorted(calls, key=lambda c: c.at):  # stable: calls at the same instant keep their order
        row, usage, usd = row_of(call.at.date()), call.usage, call_usd(call.model, call.usage)
        row["calls"] += 1
        row["keepWarm"] += call.kind == "keep-warm"
        row["keepWarmUsd"] += usd if call.kind == "keep-warm" else 0.0
        row["routine"] += call.model != main_model
        row["folds"] += call.kind == "fold"
        row["consolidations"] += call.kind == "consolidation"
        row["input"] += usage["input_tokens"]
        row["output"] += usage["output_tokens"]
        row["cacheRead"] += usage["cache_read_input_tokens"]
        row["cacheWrite"] += usage["cache_creation_input_tokens"]
        row["lastContext"] = call.context
        row["peakContext"] = max(row["peakContext"], call.context)
        if call.kind == "waking":
            row["leastContext"] = min(row["leastContext"] or call.context, call.context)
        row["usd"] += usd
    return rows


def totals(rows: list[dict]) -> dict:
    """The N days together: usd_per_day (sum / N), max_day_usd, cache read:write over all days."""
    read, write = sum(r["cacheRead"] for r in rows), sum(r["cacheWrite"] for r in rows)
    return {
        "usd_per_day": sum(r["usd"] for r in rows) / len(rows),
        "max_day_usd": max(r["usd"] for r in rows),
        "cache_read_write_ratio": read / write if write else 0.0,
    }


def last_line(rows: list[dict]) -> str:
    t = totals(rows)
    return (
        f"usd_per_day_{len(rows)}={t['usd_per_day']:.4f} max_day_usd={t['max_day_usd']:.4f} "
        f"cache_read_write_ratio={t['cache_read_write_ratio']:.2f}"
    )


# --- where the tokens go ------------------------------------------------------------------

CATEGORIES = (
    "tools",
    "system prompt",
    "inner life (snapshot)",
    "volatile (snapshot)",
    "thoughts",
    "tool calls",
    "tool results",
    "settled calls",
    "fold summary",
    "fold request",
    "consolidation words",
    "keep-warm line",
)
HISTORY = CATEGORIES[2:8]  # what a waking adds to the history


def block_category(role: str, block: dict) -> str:
    """The category of one API message block (a snapshot shares its message with the tool results before it)."""
    kind = block.get("type")
    if role == "assistant":
        return "tool calls" if kind == "tool_use" else "thoughts"
    if kind == "tool_result":
        return "tool results"
    words = block.get("text", "")
    if words.startswith(EN["summary_header"]):
        return "fold summary"
    if words.startswith(EN["summary_instruction"][:60]):
        return "fold request"
    if any(mark in words for mark in CONSOLIDATION) or words.startswith(EN["consolidate_pointer"][:60]):
        return "consolidation words"
    if words == EN["keep_warm"]:
        return "keep-warm line"
    if words.startswith(EN["settled_header"]):
        return "settled calls"
    if "your local time" in words or " is speaking to you now" in words:
        return "volatile (snapshot)"
    return "inner life (snapshot)"


def categories(body: dict) -> list:
    """One category per entry of cacheable_blocks(body), in the same order."""
    out = ["tools"] * len(body.get("tools") or []) + ["system prompt"] * len(body.get("system") or [])
    for msg in body["messages"]:
        out += [block_category(msg["role"], block) for block in msg["content"]]
    return out


def price_of(model: str, usage: dict):
    """host/llm/prices.py's price for this call: its model's, the long-prompt one past its threshold."""
    price = price_for(model)
    if price is None:
        raise SystemExit(f"bench-life: no price for model {model!r} in host/llm/prices.py")
    prompt = usage["input_tokens"] + usage["cache_read_input_tokens"] + usage["cache_creation_input_tokens"]
    return price.long if price.long and prompt > price.long_prompt_tokens else price


def spending(bodies: list, usages: list, days: int, bytes_per_token: float) -> dict:
    """Per category: tokens read from the cache, written to it, sent uncached, and their $ (per day).
    Each call at its own model's price; its cache writes at the 1 h and 5 m rates in the usage's shares."""
    spent = {name: {"read": 0, "write": 0, "input": 0, "usd": 0.0} for name in CATEGORIES + ("output",)}
    for body, usage in zip(bodies, usages, strict=False):  # a call cut off by the life's end has no usage
        if not usage:
            continue
        price = price_of(body["model"], usage)
        read, write = usage["cache_read_input_tokens"], usage["cache_creation_input_tokens"]
        one_hour = (usage.get("cache_creation") or {}).get("ephemeral_1h_input_tokens", 0) / write if write else 0.0
        rates = {
            "read": price.cache_read,
            "input": price.input,
            "write": one_hour * price.cache_write_1h + (1 - one_hour) * price.cache_write_5m,
        }
        done = 0
        for (_canon, tokens, _ttl), name in zip(cacheable_blocks(body, bytes_per_token), categories(body), strict=True):
            # The fake's read and write end on block boundaries, in this order.
            how = "read" if done + tokens <= read else "write" if done + tokens <= read + write else "input"
            spent[name][how] += tokens
            spent[name]["usd"] += tokens * rates[how] / 1e6
            done += tokens
        spent["output"]["input"] += usage["output_tokens"]  # shown in the "sent" column
        spent["output"]["usd"] += usage["output_tokens"] * price.output / 1e6
    return {name: {key: value / days for key, value in row.items()} for name, row in spent.items()}


def added_per_waking(messages: list, bytes_per_token: float) -> dict:
    """Average tokens each waking adds to the history, per category (as the fake counts them);
    `messages` as a later waking sees them (settled: host/soul/memory/settle.py)."""
    added = dict.fromkeys(HISTORY, 0)
    wakings = 0
    for msg in map(to_api_message, messages):
        for block in msg["content"]:
            name = block_category(msg["role"], block)
            if name in added:
                added[name] += estimate_tokens(block, bytes_per_token)
            wakings += name == "volatile (snapshot)" and "your local time" in block.get("text", "")
    return {name: tokens / max(1, wakings) for name, tokens in added.items()}


def fixed_tokens(bodies: list, bytes_per_token: float) -> dict:
    """Tokens of the tool definitions and the system prompt (sent, and read, with every call)."""
    first = next((b for b in bodies if b), {"messages": []})
    blocks = cacheable_blocks(dict(first, messages=[]), bytes_per_token)
    return dict(
        zip(
            ("tools", "system prompt"),
            (
                sum(
                    t
                    for (_c, t, _ttl), n in zip(blocks, categories(dict(first, messages=[])), strict=True)
                    if n == name
                )
                for name in ("tools", "system prompt")
            ),
            strict=True,
        )
    )
