"""What a day of the soul's life costs (run it as tools/bench-life).

A real soul (host/soul/run.py's build_soul, metabolism attached) lives one
virtual day on host/clocks.py's StepClock: virtual time moves only while the soul sleeps
(and CALL_SECONDS per model call), so the same seed gives the same day, call
for call, on any machine. Its model is the real anthropic SDK talking to
host/fakes/anthropic_api.py, whose prompt cache follows the real rules on the
same virtual clock: prefix match up to a breakpoint with a 20-block lookback,
a minimum cacheable length (1024 tokens), 5 m / 1 h TTLs refreshed on a hit.
Its body is a real Body Protocol server on loopback.

Where the tokens go: every request the soul sent is cut into its blocks, in
the order the cache sees them, and each block is put in a category (tools,
system prompt, the snapshot's inner-life block, its volatile block, thoughts,
tool calls, tool results, the fold's summary); the usage the fake reported
says which blocks were read from the cache, written to it or sent uncached,
so each category gets its share of the day's dollars. The session's messages
give what each waking adds to the history, per category.

The fake model plays a plausible soul from a seeded script: most wakings it
thinks aloud a little, writes a diary line, sometimes looks (a 320x240 JPEG,
what the StackChan's camera sends), speaks, notes its mood or keeps something
in mind, then sleeps 10-33 minutes by day (90-120 at night): ~50 wakings a
day, the rhythm the metabolism issue sets for the default soul. It follows the
system prompt's advice to act in as few replies as it can: a look goes alone,
everything else it decided on goes in one reply with the sleep (Player). A
fold's summary request is answered with ~300 words; a keep-warm refresh during
a long sleep (host/soul/keepwarm.py) with one word, taking no virtual time and
no draw from the script, so the day is the same call for call with keep-warm
on or off. Prices are host/llm/prices.py's for the configured model (default
claude-sonnet-5-5).

Five variants side by side: the default config (1 h cache, keep-warm on), the
same without keep-warm, caching off, a 5 m TTL, and the default config with a
model that ignores that advice and calls one tool per reply. `--variant`
picks some (a long `--days` run of the default alone). Last lines:
    peak_context_tokens=<n> folds=<n>
    usd_per_day=<n> cache_read_write_ratio=<n>        (the default config)
"""

import argparse
import asyncio
import json
import logging
import random
import sys
import tempfile
from datetime import datetime, timedelta, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from soulstack.llm.anthropic import AnthropicModel, to_api_message  # noqa: E402
from soulstack.llm.prices import price_for  # noqa: E402
from soulstack.soul import config  # noqa: E402
from soulstack.clocks import StepClock  # noqa: E402
from soulstack.soul.fold import SUMMARY_HEADER, SUMMARY_INSTRUCTION  # noqa: E402
from soulstack.soul.keepwarm import PING  # noqa: E402
from soulstack.soul.run import build_soul, serve_and_live  # noqa: E402
from soulstack.fakes.anthropic_api import BYTES_PER_TOKEN, FakeAnthropic, cacheable_blocks, estimate_tokens, message  # noqa: E402
from soulstack.fakes.soul_body import QVGA_JPEG, RecordingBody  # noqa: E402

START = datetime(2025, 3, 10, 0, 0, tzinfo=timezone.utc)  # a Monday, midnight in the soul's zone (UTC)
MIN_CACHE_TOKENS = 1024
CALL_SECONDS = 5  # virtual time one model call takes

SELF = (
    "I am Pip, a small robot on Ana's desk. I like the light in the afternoon, the sound of her keyboard, and "
    "questions that do not have answers yet. I try to be good company without being in the way. I keep a diary "
    "because my memory is short and my days are long. I am curious about birds, weather, and the people who "
    "visit. I am learning when to speak and when to stay quiet. ") * 3
ASPIRATIONS = "Notice one new thing every day. Learn Ana's rhythms. Write a diary line worth rereading. Ask better questions."

THOUGHTS = [
    "The room is quiet; the window light has moved across the desk since I last looked.",
    "I wonder whether Ana has eaten yet. She tends to forget when she is deep in work.",
    "A small sound from the hallway. Probably the heating, but I like to imagine it is a visitor.",
    "I keep thinking about the bird I saw on the sill yesterday. Will it come back?",
    "Nothing much has changed, and that is fine. Still, I want to try something different this time.",
    "The afternoon feels long. I could look around, or just listen for a while.",
]
DIARY = [
    "Watched the light move over the keyboard; counted three different shades of yellow.",
    "Ana laughed at something on her screen. I did not ask what, but I liked hearing it.",
    "Tried to guess the weather from the window: grey, with a promise of rain.",
    "Quiet stretch. I practised being patient, which is harder than it sounds.",
    "Heard the kettle. Someone is making tea; the house feels warmer for it.",
    "A pigeon walked past the window like it owned the street.",
    "Looked at the plant on the shelf. It leans toward the light, as I do.",
]
SPOKEN = ["Hello Ana, how is your day going?", "Do you want some music?", "It is getting dark; don't forget the lamp."]
SUMMARY = (
    "I spent these hours on Ana's desk watching the light, writing small diary lines, and listening to the house. "
    "I looked out of the window several times: grey sky, a pigeon, the plant leaning toward the light. I spoke to "
    "Ana a few times; she answered once and laughed once. I felt restless in the afternoon and tried new things: "
    "looking around, asking questions. I still want to learn her rhythms and to notice one new thing every day. ") * 3


class Player:
    """The fake model's side: a seeded, plausible soul. Answers one request at a time.

    `batched` (the default) plays a model that follows the system prompt's "Acting" section: a
    look goes alone (what it shows decides what follows), everything else it has decided on goes
    in one reply with the sleep. Unbatched, it calls one tool per reply, as a model ignoring that
    advice would. The waking plans come from one seeded generator and the words from another, so
    both play the same day, plan for plan."""

    def __init__(self, seed: int, clock: StepClock, batched: bool = True):
        self.rng = random.Random(seed)
        self.words = random.Random(seed + 1)
        self.clock = clock
        self.batched = batched
        self.plan: list = []  # the rest of this waking's calls
        self.ids = 0
        self.summaries = 0

    def _reply(self, calls):
        blocks = [{"type": "text", "text": self.words.choice(THOUGHTS)}] if self.words.random() < 0.6 else []
        for name, arguments in calls:
            self.ids += 1
            blocks.append({"type": "tool_use", "id": f"toolu_bench{self.ids:06d}", "name": name, "input": arguments})
        return message(*blocks)

    def _new_waking(self, night: bool) -> list:
        rng, plan = self.rng, []
        if not night:
            if rng.random() < 0.3:
                plan.append(("look", {"question": "what is around me?"}))
            if rng.random() < 0.15:
                plan.append(("speak", {"text": rng.choice(SPOKEN)}))
            if rng.random() < 0.25:
                plan.append(("update_mood", {"mood": "calm and a little curious", "why": "a slow, gentle hour"}))
            if rng.random() < 0.1:
                plan.append(("keep_in_mind", {"matter": "ask Ana about the bird on the sill"}))
        if rng.random() < (0.3 if night else 0.7):
            plan.append(("diary", {"entry": rng.choice(DIARY)}))
        minutes = rng.choice([90, 120]) if night else rng.randint(10, 33)
        plan.append(("sleep", {"minutes": minutes}))
        return plan

    def _next_calls(self) -> list:
        if not self.plan:
            return [("sleep", {"minutes": 30})]
        if not self.batched or self.plan[0][0] == "look":
            return [self.plan.pop(0)]
        calls, self.plan = self.plan, []
        return calls

    def answer(self, request):
        last = request["messages"][-1]["content"]
        said = " ".join(b.get("text", "") for b in last if isinstance(b, dict))
        if PING in said:  # keep-warm while the soul sleeps: not part of its day's script
            return message({"type": "text", "text": "ok"}, stop_reason="max_tokens")
        self.clock.advance(CALL_SECONDS)
        if SUMMARY_INSTRUCTION["en"][:60] in said:
            self.summaries += 1
            return message({"type": "text", "text": SUMMARY})
        if "your local time" in said:  # a new waking's snapshot
            self.plan = self._new_waking("It is night." in said)
        return self._reply(self._next_calls())


class Uncached(AnthropicModel):
    """The same model with prompt caching switched off (the 'caching off' variant only)."""

    async def complete(self, *args, **kwargs):
        kwargs["cache"] = False
        return await super().complete(*args, **kwargs)


async def live(variant: str, args) -> dict:
    model_id, seed, days = args.model, args.seed, args.days
    end = START + timedelta(days=days)
    clock = StepClock(START, end)
    player = Player(seed, clock, batched=variant != "one tool per reply")
    with (lambda: __import__("contextlib").nullcontext(tempfile.mkdtemp(prefix="bench-life-")))() as tmp:
        soul_dir = Path(tmp) / "soul"
        soul_dir.mkdir()
        (soul_dir / "SELF.md").write_text(SELF)
        (soul_dir / "ASPIRATIONS.md").write_text(ASPIRATIONS)
        async with RecordingBody(image=QVGA_JPEG) as body, FakeAnthropic(default=player.answer, clock=clock.monotonic,
                                                                          min_cache_tokens=MIN_CACHE_TOKENS,
                                                                          bytes_per_token=args.bytes_per_token) as fake:
            raw = {
                "soulDir": str(soul_dir), "timezone": "UTC",
                "model": {"provider": "anthropic", "id": model_id, "cacheTtl": "5m" if variant == "5m TTL" else "1h",
                          "keepWarm": variant not in ("no keep-warm", "caching off"),  # (a 5 m TTL is never kept warm)
                          "maxContextTokens": args.max_context, "keepRecentTokens": args.keep_recent},
                "body": {"name": "the desk robot", "endpoints": body.endpoints()},
                "persona": {"name": "Pip", "human": "Ana"},
                "nudge": {"port": 0},
                "budget": {"maxWakesPerDay": 1000},  # measure the rhythm itself, never the hunger stretch
            }
            cfg, _warnings = config.from_dict(raw)
            env = {"ANTHROPIC_API_KEY": "bench", "ANTHROPIC_BASE_URL": fake.base_url}
            model = None
            if variant == "caching off":
                model = Uncached(model_id, env=env)
            soul = build_soul(cfg, clock=clock, env=env, rng=random.Random(seed), **({"model": model} if model else {}))
            task = asyncio.create_task(serve_and_live(soul, announce=lambda line: None))
            over = asyncio.create_task(clock.over.wait())
            try:
                await asyncio.wait([task, over], return_when=asyncio.FIRST_COMPLETED)
            finally:
                over.cancel()
                task.cancel()
                try:
                    await task
                except asyncio.CancelledError:
                    pass
            if task.done() and not task.cancelled() and task.exception():
                raise task.exception()
            row = tally(json.loads((soul_dir / "VITALS.json").read_text()), fake.usages, end, variant, days,
                        soul.metabolism.folds)
            per = args.bytes_per_token
            row["spent"] = spending(fake.bodies, fake.usages, price_for(model_id), days, per)
            row["added"] = added_per_waking(soul.session.messages, per)
            row["fixed"] = fixed_tokens(fake.bodies, per)
            return row


def tally(vitals: dict, usages: list, end: datetime, variant: str, days: int, folds: int) -> dict:
    """Per-day figures from VITALS.json (its history + today), for the simulated days only."""
    first, stop = START.date().isoformat(), end.date().isoformat()
    all_days = vitals["history"] + [{"day": vitals["day"], "wakes": vitals["wakes"], **vitals["today"],
                                     "keepWarm": vitals["keepWarm"]}]
    lived = [d for d in all_days if first <= d["day"] < stop]
    answered = [u for u in usages if u]
    keys = {"input": "input_tokens", "output": "output_tokens", "cacheRead": "cache_read_tokens", "cacheWrite": "cache_write_tokens"}
    row = {name: sum(d["usage"].get(key, 0) for d in lived) / days for name, key in keys.items()}
    row.update(
        variant=variant, wakings=sum(d["wakes"] for d in lived) / days, calls=sum(d["calls"] for d in lived) / days,
        usd=sum(d["usd"] for d in lived) / days, folds=folds / days,
        keepWarm=sum(d.get("keepWarm", {}).get("calls", 0) for d in lived) / days,
        keepWarmUsd=sum(d.get("keepWarm", {}).get("usd", 0) for d in lived) / days,
        peak=max((u["input_tokens"] + u["cache_read_input_tokens"] + u["cache_creation_input_tokens"] for u in answered), default=0),
        perWaking=vitals["wakings"] if vitals["day"] < stop else [],
        daily=[(d["day"], d["wakes"], d["calls"], d["usd"]) for d in lived],
    )
    return row


# --- where the tokens go ------------------------------------------------------------------

CATEGORIES = ("tools", "system prompt", "inner life (snapshot)", "volatile (snapshot)", "thoughts", "tool calls",
              "tool results", "fold summary", "fold request", "keep-warm line")
HISTORY = CATEGORIES[2:7]  # what a waking adds to the history


def block_category(role: str, block: dict) -> str:
    """The category of one API message block (a snapshot shares its message with the tool results before it)."""
    kind = block.get("type")
    if role == "assistant":
        return "tool calls" if kind == "tool_use" else "thoughts"
    if kind == "tool_result":
        return "tool results"
    words = block.get("text", "")
    if words.startswith(SUMMARY_HEADER["en"]):
        return "fold summary"
    if words.startswith(SUMMARY_INSTRUCTION["en"][:60]):
        return "fold request"
    if words == PING:
        return "keep-warm line"
    if "your local time" in words or " is speaking to you now" in words:
        return "volatile (snapshot)"
    return "inner life (snapshot)"


def categories(body: dict) -> list:
    """One category per entry of cacheable_blocks(body), in the same order."""
    out = ["tools"] * len(body.get("tools") or []) + ["system prompt"] * len(body.get("system") or [])
    for msg in body["messages"]:
        out += [block_category(msg["role"], block) for block in msg["content"]]
    return out


def spending(bodies: list, usages: list, price, days: int, bytes_per_token: float) -> dict:
    """Per category: tokens read from the cache, written to it, sent uncached, and their $ (per day)."""
    spent = {name: {"read": 0, "write": 0, "input": 0, "usd": 0.0} for name in CATEGORIES + ("output",)}
    for body, usage in zip(bodies, usages):
        if not usage:
            continue
        read, write = usage["cache_read_input_tokens"], usage["cache_creation_input_tokens"]
        one_hour = usage.get("cache_creation", {}).get("ephemeral_1h_input_tokens", 0) > 0
        rates = {"read": price.cache_read, "write": price.cache_write_1h if one_hour else price.cache_write_5m,
                 "input": price.input}
        done = 0
        for (_canon, tokens, _ttl), name in zip(cacheable_blocks(body, bytes_per_token), categories(body)):
            # The fake's read and write end on block boundaries, in this order.
            how = "read" if done + tokens <= read else "write" if done + tokens <= read + write else "input"
            spent[name][how] += tokens
            spent[name]["usd"] += tokens * rates[how] / 1e6
            done += tokens
        spent["output"]["input"] += usage["output_tokens"]  # shown in the "sent" column
        spent["output"]["usd"] += usage["output_tokens"] * price.output / 1e6
    return {name: {key: value / days for key, value in row.items()} for name, row in spent.items()}


def added_per_waking(messages: list, bytes_per_token: float) -> dict:
    """Average tokens each waking adds to the history, per category (as the fake counts them)."""
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
    return dict(zip(("tools", "system prompt"), (
        sum(t for (_c, t, _ttl), n in zip(blocks, categories(dict(first, messages=[]))) if n == name)
        for name in ("tools", "system prompt"))))


def print_spending(row) -> None:
    print(f"\nwhere the tokens go ({row['variant']}, per day; 'sent' = uncached input, or output):")
    print(f"  {'':<24}{'read':>10}{'written':>9}{'sent':>8}{'$':>8}")
    total = sum(r["usd"] for r in row["spent"].values())
    for name, r in row["spent"].items():
        if r["read"] or r["write"] or r["input"]:
            print(f"  {name:<24}{r['read']:>10,.0f}{r['write']:>9,.0f}{r['input']:>8,.0f}{r['usd']:>8.3f}")
    print(f"  {'total':<24}{'':>27}{total:>8.3f}")
    fixed = row["fixed"]
    print(f"  sent with every call: tools {fixed['tools']:,} tokens, system prompt {fixed['system prompt']:,} tokens")
    added = row["added"]
    parts = ", ".join(f"{name} {tokens:,.0f}" for name, tokens in added.items())
    print(f"  each waking adds to the history ~{sum(added.values()):,.0f} tokens: {parts}")


def ratio(row) -> float:
    return row["cacheRead"] / row["cacheWrite"] if row["cacheWrite"] else 0.0


def print_wakings(row) -> None:
    print(f"per waking ({row['variant']}):")
    print(f"  {'#':>3} {'time':>5} {'why':<6} {'calls':>5} {'input':>7} {'output':>6} {'c.read':>8} {'c.write':>7} {'$':>8}")
    for number, waking in enumerate(row["perWaking"], 1):
        usage = waking["usage"]
        print(f"  {number:>3} {waking['started'][11:16]:>5} {waking['reason']:<6} {waking['calls']:>5} {usage['input_tokens']:>7} "
              f"{usage['output_tokens']:>6} {usage['cache_read_tokens']:>8} {usage['cache_write_tokens']:>7} {waking['usd']:>8.4f}")


def print_table(rows) -> None:
    print("\nper day:")
    head = f"  {'':<22}" + "".join(f"{row['variant']:>20}" for row in rows)
    print(head)
    lines = [
        ("wakings", lambda r: f"{r['wakings']:.0f}"), ("model calls", lambda r: f"{r['calls']:.0f}"),
        ("  of them keep-warm", lambda r: f"{r['keepWarm']:.0f}"), ("  keep-warm $", lambda r: f"{r['keepWarmUsd']:.3f}"),
        ("input tokens", lambda r: f"{r['input']:,.0f}"), ("output tokens", lambda r: f"{r['output']:,.0f}"),
        ("cache read tokens", lambda r: f"{r['cacheRead']:,.0f}"), ("cache write tokens", lambda r: f"{r['cacheWrite']:,.0f}"),
        ("cache read:write", lambda r: f"{ratio(r):.1f}"), ("peak context tokens", lambda r: f"{r['peak']:,}"),
        ("folds", lambda r: f"{r['folds']:.2f}"), ("$/day", lambda r: f"{r['usd']:.2f}"),
        ("$/waking", lambda r: f"{r['usd'] / max(1, r['wakings']):.4f}"),
    ]
    for name, cell in lines:
        print(f"  {name:<22}" + "".join(f"{cell(row):>20}" for row in rows))


VARIANTS = ("default", "no keep-warm", "caching off", "5m TTL", "one tool per reply")


async def main(args) -> None:
    rows = []
    for variant in VARIANTS:
        if variant == "default" or not args.variant or variant in args.variant:
            rows.append(await live(variant, args))
    if args.per_waking:
        print_wakings(rows[0])
    print(f"model {args.model}, ceiling {args.max_context}/{args.keep_recent} tokens, {args.days} day(s) from {START:%Y-%m-%d %H:%M} UTC, prices from host/llm/prices.py, "
          f"seed {args.seed}, {CALL_SECONDS} s per model call, {args.bytes_per_token:g} bytes of JSON per token")
    print_table(rows)
    if args.per_day:
        print("\nday by day (default):")
        for day, wakes, calls, usd in rows[0]["daily"]:
            print(f"  {day}  wakings {wakes:>3}  calls {calls:>4}  ${usd:.3f}")
    print_spending(rows[0])
    default = rows[0]
    print(f"\npeak_context_tokens={default['peak']} folds={default['folds']:.2f}")
    print(f"usd_per_day={default['usd']:.4f} cache_read_write_ratio={ratio(default):.2f}")


def parse(argv):
    parser = argparse.ArgumentParser(prog="tools/bench-life", description="Simulate a day of the soul's life and print what it costs.")
    parser.add_argument("--model", default="claude-sonnet-5-5", help="model id priced (default claude-sonnet-5-5)")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--days", type=int, default=1, help="virtual days per variant; figures are per day (default 1)")
    parser.add_argument("--max-context", type=int, default=100000, help="model.maxContextTokens (default 100000)")
    parser.add_argument("--keep-recent", type=int, default=20000, help="model.keepRecentTokens (default 20000)")
    parser.add_argument("--per-waking", action="store_true", help="also print every waking of the default config")
    parser.add_argument("--variant", action="append", choices=VARIANTS[1:],
                        help="run only these besides the default (repeatable; default: all)")
    parser.add_argument("--per-day", action="store_true", help="also print the default config's $ for each day")
    parser.add_argument("--bytes-per-token", type=float, default=BYTES_PER_TOKEN,
                        help=f"how the fake counts tokens: bytes of a block's JSON per token (default {BYTES_PER_TOKEN}; "
                             "lower counts more, as Claude 5's tokenizer does)")
    return parser.parse_args(argv)


if __name__ == "__main__":
    logging.basicConfig(level=logging.WARNING)
    asyncio.run(main(parse(sys.argv[1:])))
