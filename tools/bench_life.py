"""What the soul's life costs, day by day (run it as tools/bench-life).

A real soul (host/soul/run.py's build_soul, every part attached) lives `--days`
virtual days (default 1) on host/clocks.py's StepClock: virtual time moves only
while the soul sleeps (and CALL_SECONDS per model call), so the same seed gives
the same life, call for call, on any machine. Its model is the real anthropic
SDK talking to host/fakes/anthropic_api.py, whose prompt cache follows the real
rules on the same virtual clock: prefix match up to a breakpoint with a 20-block
lookback, a minimum cacheable length (1024 tokens), 5 m / 1 h TTLs refreshed on
a hit. Its body is a real Body Protocol server on loopback.

The fake model's seeded script (Player, the words it plays, the soul's first
SELF.md) lives in tools/bench_life_player.py; the accounting (every call in
its day, priced by its own model, and where the tokens go) in
tools/bench_life_tally.py. This file keeps the command: the variants' configs,
running a soul (live), the printing, the plot. Prices are host/llm/prices.py's
(default model claude-sonnet-5-5).

Variants: the default config (1 h cache, keep-warm on, consolidation as the
soul's config has it), the same without keep-warm, caching off, a 5 m TTL, the
default with a model that calls one tool per reply, with a routine mind
(model.routine: claude-haiku-5-5, or --routine's) and without the nightly
consolidation (loop.consolidate: false). `--days 1` runs them all unless
`--variant` picks some (`--variant default`: the default alone); `--days N`
(N > 1) runs the default alone unless `--variant` adds others. `--routine
MODEL_ID` gives every config run a routine mind ("caching off" then turns off
both minds' caches). A key the soul does not know is a warning (printed), not
an error.

Output, --days 1: the configs side by side (per day), where the default's
tokens go, and the last lines
    peak_context_tokens=<n> folds=<n>
    usd_per_day=<n> cache_read_write_ratio=<n>        (the default config)
--days N > 1: a table per config run with one row per day (wakings, calls, of
them keep-warm and on the routine model, input/output/cache-read/cache-write
tokens, context size of the day's last and largest request, the ceiling's
folds, nightly consolidation turns, $), then the same summaries, and exactly one last line
    usd_per_day_<N>=<n> max_day_usd=<n> cache_read_write_ratio=<n>   (the default config)
usd_per_day_<N>: the N days' $ summed and divided by N; max_day_usd: the
dearest day; the ratio: cache-read over cache-write tokens over all N days.
`--per-day` prints the day table with --days 1 too. `--plot FILE.png` draws $
per day (the 0.20 goal and 0.25 cap marked) and context size (each day's
largest request and its smallest waking request) for every config run. `--bytes-per-token 3` counts
tokens as Claude 5's tokenizer does (the goal is checked at 4 and at 3).
"""

import argparse
import asyncio
import contextlib
import json
import logging
import random
import sys
import tempfile
from datetime import date, datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from soulstack.llm.anthropic import AnthropicModel  # noqa: E402
from soulstack.soul import config  # noqa: E402
from soulstack.clocks import StepClock  # noqa: E402
from soulstack.soul.run import build_soul, serve_and_live  # noqa: E402
from soulstack.soul.memory.session import life_records  # noqa: E402
from soulstack.soul.memory.settle import settle_earlier_calls  # noqa: E402
from soulstack.llm.types import Message  # noqa: E402
from soulstack.fakes.anthropic_api import BYTES_PER_TOKEN  # noqa: E402
from soulstack.fakes.soul_body import QVGA_JPEG, RecordingBody  # noqa: E402
from tools.bench_life_player import ASPIRATIONS, CALL_SECONDS, SELF, START, TIMEZONE, Player  # noqa: E402
from tools.bench_life_tally import (  # noqa: E402
    DAY_FIELDS,
    Recording,
    added_per_waking,
    call_usd,
    fixed_tokens,
    last_line,
    per_day,
    spending,
)

MIN_CACHE_TOKENS = 1024
GOAL_USD, CAP_USD = 0.20, 0.25  # at most $0.20/day on average, no day above $0.25 (docs/metabolism.md)
ROUTINE = "claude-haiku-5-5"  # the "routine mind" variant's model.routine (unless --routine names one)


class Uncached(AnthropicModel):
    """The same model with prompt caching switched off (the 'caching off' variant only)."""

    async def complete(self, *args, **kwargs):
        kwargs["cache"] = False
        return await super().complete(*args, **kwargs)


def config_for(variant: str, args, soul_dir: Path, body) -> dict:
    """The soul's config (raw) for one variant."""
    model = {
        "provider": "anthropic",
        "id": args.model,
        "cacheTtl": "5m" if variant == "5m TTL" else "1h",
        "keepWarm": variant not in ("no keep-warm", "caching off"),  # (a 5 m TTL is never kept warm)
        "maxContextTokens": args.max_context,
        "keepRecentTokens": args.keep_recent,
    }
    routine = (args.routine or ROUTINE) if variant == "routine mind" else args.routine
    if routine:
        model["routine"] = routine
    raw = {
        "soulDir": str(soul_dir),
        "timezone": TIMEZONE,
        "model": model,
        "body": {"name": "the desk robot", "endpoints": body.endpoints()},
        "persona": {"name": "Pip", "human": "Ana"},
        "nudge": {"port": 0},
        "budget": {"maxWakesPerDay": 1000},  # measure the rhythm itself, never the hunger stretch
    }
    if variant == "no consolidation":
        raw["loop"] = {"consolidate": False}
    return raw


async def live(variant: str, args) -> dict:
    model_id, seed, days = args.model, args.seed, args.days
    end = START + timedelta(days=days)
    zone = ZoneInfo(TIMEZONE)
    clock = StepClock(START, end)
    player = Player(seed, clock, batched=variant != "one tool per reply")
    with contextlib.nullcontext(tempfile.mkdtemp(prefix="bench-life-")) as tmp:
        soul_dir = Path(tmp) / "soul"
        soul_dir.mkdir()
        (soul_dir / "SELF.md").write_text(SELF)
        (soul_dir / "ASPIRATIONS.md").write_text(ASPIRATIONS)
        async with (
            RecordingBody(image=QVGA_JPEG) as body,
            Recording(
                default=player.answer,
                clock=clock.monotonic,
                now=lambda: clock.now().astimezone(zone),
                min_cache_tokens=MIN_CACHE_TOKENS,
                bytes_per_token=args.bytes_per_token,
            ) as fake,
        ):
            raw = config_for(variant, args, soul_dir, body)
            cfg, warnings = config.from_dict(raw)
            for warning in warnings:
                print(f"bench-life ({variant}): config warning: {warning}", file=sys.stderr)
            env = {"ANTHROPIC_API_KEY": "bench", "ANTHROPIC_BASE_URL": fake.base_url}
            model = None
            if variant == "caching off":
                model = Uncached(model_id, env=env)
            soul = build_soul(cfg, clock=clock, env=env, rng=random.Random(seed), **({"model": model} if model else {}))
            if variant == "caching off" and soul.routine_model is not None:  # (--routine) its routine mind too
                soul.routine_model = Uncached(soul.routine_model.model_id, env=env)
            wakings: list[date] = []
            soul.hooks.on_waking.append(lambda soul, waking: wakings.append(soul.local_now().date()))
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
            daily = per_day(fake.calls, wakings, START.astimezone(zone).date(), days, model_id)
            row = {name: sum(d[name] for d in daily) / days for name in DAY_FIELDS}
            row.update(
                variant=variant,
                daily=daily,
                routineModel=raw["model"].get("routine"),
                peak=max((d["peakContext"] for d in daily), default=0),
                folds=soul.ceiling.folds / days,
                warnings=warnings,
                perWaking=vitals_wakings(soul_dir, end),
            )
            per = args.bytes_per_token
            row["spent"] = spending(fake.bodies, fake.usages, days, per)
            # Every message of the life (the folded ones are in its archive), as a later waking would see them
            # all: settled (host/soul/memory/settle.py).
            records = [r for r in life_records(soul.session.path) if r["type"] == "message"]
            every = [Message.from_json(r["message"]) for r in records]
            starts = [index for index, r in enumerate(records) if r.get("waking")]
            settled = settle_earlier_calls(every, len(every), starts, soul.toolbox, soul.lang)
            row["added"] = added_per_waking(settled, per)
            row["fixed"] = fixed_tokens(fake.bodies, per)
            row["byModel"] = by_model(fake.calls, days)
            return row


def by_model(calls, days: int) -> dict:
    """$ a day per model id, and of it the night's consolidation (its instruction and digest steps):
    with a routine mind, where the two caches' money goes."""
    spent: dict = {}
    for call in calls:
        entry = spent.setdefault(call.model, {"usd": 0.0, "consolidation": 0.0, "calls": 0})
        usd = call_usd(call.model, call.usage)
        entry["usd"] += usd / days
        entry["calls"] += 1 / days
        if call.kind in ("consolidation", "digest"):
            entry["consolidation"] += usd / days
    return spent


def print_by_model(rows) -> None:
    for row in rows:
        if len(row["byModel"]) < 2:
            continue
        print(f"\nby model ({row['variant']}, per day):")
        for model, entry in row["byModel"].items():
            print(
                f"  {model:<24}{entry['calls']:>6.0f} calls  ${entry['usd']:.3f}  "
                f"(of it the night's consolidation ${entry['consolidation']:.3f})"
            )


def vitals_wakings(soul_dir: Path, end: datetime) -> list:
    """The last day's wakings as VITALS.json lists them (for --per-waking)."""
    vitals = json.loads((soul_dir / "VITALS.json").read_text())
    return vitals["wakings"] if vitals["day"] < end.date().isoformat() else []


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
    print(
        f"  {'#':>3} {'time':>5} {'why':<6} {'calls':>5} {'input':>7} {'output':>6} {'c.read':>8} {'c.write':>7} {'$':>8}"
    )
    for number, waking in enumerate(row["perWaking"], 1):
        usage = waking["usage"]
        print(
            f"  {number:>3} {waking['started'][11:16]:>5} {waking['reason']:<6} {waking['calls']:>5} {usage['input_tokens']:>7} "
            f"{usage['output_tokens']:>6} {usage['cache_read_tokens']:>8} {usage['cache_write_tokens']:>7} {waking['usd']:>8.4f}"
        )


def print_table(rows) -> None:
    print("\nper day:")
    head = f"  {'':<22}" + "".join(f"{row['variant']:>20}" for row in rows)
    print(head)
    lines = [
        ("wakings", lambda r: f"{r['wakings']:.0f}"),
        ("model calls", lambda r: f"{r['calls']:.0f}"),
        ("  of them keep-warm", lambda r: f"{r['keepWarm']:.0f}"),
        ("  keep-warm $", lambda r: f"{r['keepWarmUsd']:.3f}"),
        ("  on the routine model", lambda r: f"{r['routine']:.0f}"),
        ("input tokens", lambda r: f"{r['input']:,.0f}"),
        ("output tokens", lambda r: f"{r['output']:,.0f}"),
        ("cache read tokens", lambda r: f"{r['cacheRead']:,.0f}"),
        ("cache write tokens", lambda r: f"{r['cacheWrite']:,.0f}"),
        ("cache read:write", lambda r: f"{ratio(r):.1f}"),
        ("peak context tokens", lambda r: f"{r['peak']:,}"),
        ("ceiling folds", lambda r: f"{r['folds']:.2f}"),
        ("consolidations", lambda r: f"{r['consolidations']:.2f}"),
        ("$/day", lambda r: f"{r['usd']:.2f}"),
        ("$/waking", lambda r: f"{r['usd'] / max(1, r['wakings']):.4f}"),
    ]
    for name, cell in lines:
        print(f"  {name:<22}" + "".join(f"{cell(row):>20}" for row in rows))


def print_days(row) -> None:
    """The day table: one row per simulated day, then the N days together."""
    daily = row["daily"]
    routine = f", routine model {row['routineModel']}" if row["routineModel"] else ""
    print(
        f"\nday by day ({row['variant']}{routine}; ctx = tokens of the day's last / largest request, "
        "folds = the ceiling's fold summaries, consol = nightly consolidation turns):"
    )
    print(
        f"  {'date':<10} {'wakings':>7} {'calls':>5} {'k-warm':>6} {'routine':>7} {'input':>7} {'output':>7} "
        f"{'c.read':>10} {'c.write':>8} {'last ctx':>8} {'peak ctx':>8} {'folds':>5} {'consol':>6} {'$':>7}"
    )
    for d in daily:
        print(
            f"  {d['day'].isoformat():<10} {d['wakings']:>7} {d['calls']:>5} {d['keepWarm']:>6} {d['routine']:>7} "
            f"{d['input']:>7,} {d['output']:>7,} {d['cacheRead']:>10,} {d['cacheWrite']:>8,} {d['lastContext']:>8,} "
            f"{d['peakContext']:>8,} {d['folds']:>5} {d['consolidations']:>6} {d['usd']:>7.4f}"
        )
    total = {name: sum(d[name] for d in daily) for name in DAY_FIELDS}
    print(
        f"  {'total':<10} {total['wakings']:>7} {total['calls']:>5} {total['keepWarm']:>6} "
        f"{total['routine']:>7} {total['input']:>7,} {total['output']:>7,} {total['cacheRead']:>10,} "
        f"{total['cacheWrite']:>8,} {'':>8} {row['peak']:>8,} {total['folds']:>5} {total['consolidations']:>6} "
        f"{total['usd']:>7.4f}"
    )
    print(f"  ({row['variant']}) {last_line(daily)}")


def plot(rows, args, path: str) -> None:
    """$/day (goal and cap marked) and context size (each day's largest and smallest waking request) over the days."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    fig, (cost, size) = plt.subplots(2, 1, sharex=True, figsize=(11, 7.5))
    for row in rows:
        days = range(1, len(row["daily"]) + 1)
        label = row["variant"] + (f" (routine {row['routineModel']})" if row["routineModel"] else "")
        (line,) = cost.plot(days, [d["usd"] for d in row["daily"]], marker="o", markersize=3, label=label)
        size.plot(
            days,
            [d["peakContext"] for d in row["daily"]],
            color=line.get_color(),
            marker="o",
            markersize=3,
            label=f"{label}: largest request",
        )
        size.plot(
            days,
            [d["leastContext"] for d in row["daily"]],
            color=line.get_color(),
            linestyle="--",
            label=f"{label}: smallest waking request (after the night's consolidation)",
        )
    cost.axhline(GOAL_USD, color="dimgray", linestyle=":", label=f"goal ${GOAL_USD:.2f}/day (average)")
    cost.axhline(CAP_USD, color="black", linestyle="-.", label=f"cap ${CAP_USD:.2f} (any day)")
    cost.set_ylabel("$ per day")
    # Room above the cap and the dearest day for the legend, so it never hides a line.
    cost.set_ylim(0, max([CAP_USD * 1.45] + [d["usd"] * 1.35 for row in rows for d in row["daily"]]))
    cost.legend(fontsize=8, loc="upper center", ncol=2)
    cost.grid(alpha=0.3)
    size.set_ylabel("context (tokens per request)")
    size.set_xlabel(f"simulated day (day 1 = {START:%Y-%m-%d}, a Monday)")
    size.xaxis.set_major_locator(MaxNLocator(integer=True))
    size.set_ylim(bottom=0)
    size.legend(fontsize=8)
    size.grid(alpha=0.3)
    routine = {row["routineModel"] for row in rows} - {None}
    fig.suptitle(
        f"tools/bench-life: {args.model}"
        + (f" (routine {', '.join(sorted(routine))})" if routine else "")
        + f", seed {args.seed}, {args.bytes_per_token:g} bytes/token, {args.days} day(s)\n"
        + "variant: "
        + ", ".join(row["variant"] for row in rows)
    )
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    print(f"\nplot written: {path}")


VARIANTS = (
    "default",
    "no keep-warm",
    "caching off",
    "5m TTL",
    "one tool per reply",
    "routine mind",
    "no consolidation",
)


def chosen(args) -> list:
    """The default, and what --variant adds; every variant for a one-day run without --variant."""
    return [v for v in VARIANTS if v == "default" or (v in args.variant if args.variant else args.days == 1)]


async def main(args) -> None:
    rows = []
    for variant in chosen(args):
        rows.append(await live(variant, args))
    if args.per_waking:
        print_wakings(rows[0])
    routine = f", routine model {args.routine}" if args.routine else ""
    print(
        f"model {args.model}{routine}, ceiling {args.max_context}/{args.keep_recent} tokens, {args.days} day(s) from "
        f"{START:%Y-%m-%d %H:%M} UTC, prices from host/llm/prices.py, seed {args.seed}, {CALL_SECONDS} s per model "
        f"call, {args.bytes_per_token:g} bytes of JSON per token"
    )
    for row in rows:
        for warning in row["warnings"]:
            print(f"  ({row['variant']}) config warning: {warning}")
    if args.days > 1 or args.per_day:
        for row in rows:
            print_days(row)
    print_table(rows)
    print_by_model(rows)
    print_spending(rows[0])
    if args.plot:
        plot(rows, args, args.plot)
    default = rows[0]
    print(f"\npeak_context_tokens={default['peak']} folds={default['folds']:.2f}")
    if args.days == 1:
        print(f"usd_per_day={default['usd']:.4f} cache_read_write_ratio={ratio(default):.2f}")
    else:
        print(last_line(default["daily"]))


def parse(argv):
    parser = argparse.ArgumentParser(
        prog="tools/bench-life", description="Simulate days of the soul's life and print what they cost."
    )
    parser.add_argument("--model", default="claude-sonnet-5-5", help="model id priced (default claude-sonnet-5-5)")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument(
        "--days",
        type=int,
        default=1,
        help="virtual days per config (default 1); more than 1 runs the default config alone "
        "unless --variant adds others, and prints every day",
    )
    parser.add_argument("--max-context", type=int, default=100000, help="model.maxContextTokens (default 100000)")
    parser.add_argument("--keep-recent", type=int, default=20000, help="model.keepRecentTokens (default 20000)")
    parser.add_argument(
        "--per-waking", action="store_true", help="also print every waking of the default config's last day"
    )
    parser.add_argument(
        "--variant",
        action="append",
        choices=VARIANTS,
        help="run these besides the default (repeatable; 'default' alone: the default only; without it: all with --days 1, none with more)",
    )
    parser.add_argument(
        "--routine",
        metavar="MODEL_ID",
        help=f"model.routine for every config run (the 'routine mind' variant uses {ROUTINE} without it)",
    )
    parser.add_argument("--per-day", action="store_true", help="print the day table with --days 1 too")
    parser.add_argument("--plot", metavar="FILE.png", help="draw $/day and context size over the days into FILE.png")
    parser.add_argument(
        "--bytes-per-token",
        type=float,
        default=BYTES_PER_TOKEN,
        help=f"how the fake counts tokens: bytes of a block's JSON per token (default {BYTES_PER_TOKEN}; "
        "lower counts more, as Claude 5's tokenizer does)",
    )
    args = parser.parse_args(argv)
    if args.days < 1:
        parser.error("--days must be at least 1")
    return args


if __name__ == "__main__":
    logging.basicConfig(level=logging.WARNING)
    asyncio.run(main(parse(sys.argv[1:])))
