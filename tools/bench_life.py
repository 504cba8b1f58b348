"""What a day of the soul's life costs (run it as tools/bench-life).

A real soul (host/soul/run.py's build_soul, metabolism attached) lives one
virtual day on the soul's ScaledClock. Its model is the real anthropic SDK
talking to tests/fakes/anthropic_api.py, whose prompt cache follows the real
rules on the same virtual clock: prefix match up to a breakpoint with a 20-block
lookback, a minimum cacheable length (1024 tokens), 5 m / 1 h TTLs refreshed on
a hit. Its body is a real Body Protocol server on loopback.

The fake model plays a plausible soul from a seeded script: most wakings it
thinks aloud a little, writes a diary line, sometimes looks (an image),
speaks, notes its mood or keeps something in mind, then sleeps 8-28 minutes
by day (90-120 at night). A fold's summary request is answered with ~300
words. Prices are host/llm/prices.py's for the configured model (default
claude-sonnet-5-5).

Three variants side by side: the default config (1 h cache), caching off, and
a 5 m TTL. Last lines:
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

from host.llm.anthropic import AnthropicModel  # noqa: E402
from host.soul import config  # noqa: E402
from host.soul.clock import ScaledClock  # noqa: E402
from host.soul.fold import SUMMARY_INSTRUCTION  # noqa: E402
from host.soul.run import build_soul, serve_and_live  # noqa: E402
from tests.fakes.anthropic_api import FakeAnthropic, message  # noqa: E402
from tests.fakes.soul_body import RecordingBody  # noqa: E402

START = datetime(2025, 3, 10, 0, 0, tzinfo=timezone.utc)  # a Monday, midnight in the soul's zone (UTC)
MIN_CACHE_TOKENS = 1024

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
    """The fake model's side: a seeded, plausible soul. Answers one request at a time."""

    def __init__(self, seed: int):
        self.rng = random.Random(seed)
        self.plan: list = []  # the rest of this waking's calls
        self.ids = 0
        self.summaries = 0

    def _call(self, name, arguments, words=None):
        self.ids += 1
        blocks = [{"type": "text", "text": words}] if words else []
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
        minutes = rng.choice([90, 120]) if night else rng.randint(8, 28)
        plan.append(("sleep", {"minutes": minutes}))
        return plan

    def answer(self, request):
        last = request["messages"][-1]["content"]
        said = " ".join(b.get("text", "") for b in last if isinstance(b, dict))
        if SUMMARY_INSTRUCTION["en"][:60] in said:
            self.summaries += 1
            return message({"type": "text", "text": SUMMARY})
        if "your local time" in said:  # a new waking's snapshot
            self.plan = self._new_waking("It is night." in said)
        name, arguments = self.plan.pop(0) if self.plan else ("sleep", {"minutes": 30})
        words = self.rng.choice(THOUGHTS) if self.rng.random() < 0.6 else None
        return self._call(name, arguments, words)


class Uncached(AnthropicModel):
    """The same model with prompt caching switched off (the 'caching off' variant only)."""

    async def complete(self, *args, **kwargs):
        kwargs["cache"] = False
        return await super().complete(*args, **kwargs)


async def live(variant: str, args) -> dict:
    model_id, scale, seed, days = args.model, args.scale, args.seed, args.days
    clock = ScaledClock(START, scale=scale)
    player = Player(seed)
    with tempfile.TemporaryDirectory(prefix="bench-life-") as tmp:
        soul_dir = Path(tmp) / "soul"
        soul_dir.mkdir()
        (soul_dir / "SELF.md").write_text(SELF)
        (soul_dir / "ASPIRATIONS.md").write_text(ASPIRATIONS)
        async with RecordingBody() as body, FakeAnthropic(default=player.answer, clock=clock.monotonic,
                                                          min_cache_tokens=MIN_CACHE_TOKENS) as fake:
            raw = {
                "soulDir": str(soul_dir), "timezone": "UTC",
                "model": {"provider": "anthropic", "id": model_id, "cacheTtl": "5m" if variant == "5m TTL" else "1h",
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
            end = START + timedelta(days=days)
            task = asyncio.create_task(serve_and_live(soul, announce=lambda line: None))
            try:
                while clock.now() < end and not task.done():
                    await asyncio.sleep(0.05)
            finally:
                task.cancel()
                try:
                    await task
                except asyncio.CancelledError:
                    pass
            if task.done() and not task.cancelled() and task.exception():
                raise task.exception()
            return tally(json.loads((soul_dir / "VITALS.json").read_text()), fake.usages, end, variant, days,
                         soul.metabolism.folds)


def tally(vitals: dict, usages: list, end: datetime, variant: str, days: int, folds: int) -> dict:
    """Per-day figures from VITALS.json (its history + today), for the simulated days only."""
    first, stop = START.date().isoformat(), end.date().isoformat()
    all_days = vitals["history"] + [{"day": vitals["day"], "wakes": vitals["wakes"], **vitals["today"]}]
    lived = [d for d in all_days if first <= d["day"] < stop]
    answered = [u for u in usages if u]
    keys = {"input": "input_tokens", "output": "output_tokens", "cacheRead": "cache_read_tokens", "cacheWrite": "cache_write_tokens"}
    row = {name: sum(d["usage"].get(key, 0) for d in lived) / days for name, key in keys.items()}
    row.update(
        variant=variant, wakings=sum(d["wakes"] for d in lived) / days, calls=sum(d["calls"] for d in lived) / days,
        usd=sum(d["usd"] for d in lived) / days, folds=folds / days,
        peak=max((u["input_tokens"] + u["cache_read_input_tokens"] + u["cache_creation_input_tokens"] for u in answered), default=0),
        perWaking=vitals["wakings"] if vitals["day"] < stop else [],
    )
    return row


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
    head = f"  {'':<22}" + "".join(f"{row['variant']:>14}" for row in rows)
    print(head)
    lines = [
        ("wakings", lambda r: f"{r['wakings']:.0f}"), ("model calls", lambda r: f"{r['calls']:.0f}"),
        ("input tokens", lambda r: f"{r['input']:,.0f}"), ("output tokens", lambda r: f"{r['output']:,.0f}"),
        ("cache read tokens", lambda r: f"{r['cacheRead']:,.0f}"), ("cache write tokens", lambda r: f"{r['cacheWrite']:,.0f}"),
        ("cache read:write", lambda r: f"{ratio(r):.1f}"), ("peak context tokens", lambda r: f"{r['peak']:,}"),
        ("folds", lambda r: f"{r['folds']:.2f}"), ("$/day", lambda r: f"{r['usd']:.2f}"),
        ("$/waking", lambda r: f"{r['usd'] / max(1, r['wakings']):.4f}"),
    ]
    for name, cell in lines:
        print(f"  {name:<22}" + "".join(f"{cell(row):>14}" for row in rows))


async def main(args) -> None:
    rows = []
    for variant in ("default", "caching off", "5m TTL"):
        rows.append(await live(variant, args))
    if args.per_waking:
        print_wakings(rows[0])
    print(f"model {args.model}, ceiling {args.max_context}/{args.keep_recent} tokens, {args.days} day(s) from {START:%Y-%m-%d %H:%M} UTC, prices from host/llm/prices.py, "
          f"seed {args.seed}, clock x{args.scale:g}")
    print_table(rows)
    default = rows[0]
    print(f"\npeak_context_tokens={default['peak']} folds={default['folds']:.2f}")
    print(f"usd_per_day={default['usd']:.4f} cache_read_write_ratio={ratio(default):.2f}")


def parse(argv):
    parser = argparse.ArgumentParser(prog="tools/bench-life", description="Simulate a day of the soul's life and print what it costs.")
    parser.add_argument("--model", default="claude-sonnet-5-5", help="model id priced (default claude-sonnet-5-5)")
    parser.add_argument("--scale", type=float, default=2400, help="virtual seconds per real second (default 2400)")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--days", type=int, default=1, help="virtual days per variant; figures are per day (default 1)")
    parser.add_argument("--max-context", type=int, default=100000, help="model.maxContextTokens (default 100000)")
    parser.add_argument("--keep-recent", type=int, default=20000, help="model.keepRecentTokens (default 20000)")
    parser.add_argument("--per-waking", action="store_true", help="also print every waking of the default config")
    return parser.parse_args(argv)


if __name__ == "__main__":
    logging.basicConfig(level=logging.WARNING)
    asyncio.run(main(parse(sys.argv[1:])))
