"""What the soul's life costs, day by day (run it as tools/bench-life).

A real soul (host/soul/run.py's build_soul, metabolism attached) lives `--days`
virtual days (default 1) on host/clocks.py's StepClock: virtual time moves only
while the soul sleeps (and CALL_SECONDS per model call), so the same seed gives
the same life, call for call, on any machine. Its model is the real anthropic
SDK talking to host/fakes/anthropic_api.py, whose prompt cache follows the real
rules on the same virtual clock: prefix match up to a breakpoint with a 20-block
lookback, a minimum cacheable length (1024 tokens), 5 m / 1 h TTLs refreshed on
a hit. Its body is a real Body Protocol server on loopback.

Every day is counted: the bench's fake (Recording, a FakeAnthropic) notes each
call it answers -- its virtual time, the model id the request named, the usage
it reported, what it was (a waking's step, a keep-warm refresh, a fold's
summary, a consolidation) -- and prices it with host/llm/prices.py by that
model's own id (a routine mind mixes two models), its 1 h and 5 m cache writes
each at their own rate. A call counts in the day its virtual time falls in
(keep-warm refreshes too; the tail of a waking begun before the end, past it,
in the last day), a waking in the day it begins (an on_waking hook). So a
30-day run reports 30 days: VITALS.json (14 days of history) only feeds
--per-waking now.

Where the tokens go: every request the soul sent is cut into its blocks, in
the order the cache sees them, and each block is put in a category (tools,
system prompt, the snapshot's inner-life block, its volatile block, thoughts,
tool calls, tool results, the fold's summary, the consolidation's words); the
usage the fake reported says which blocks were read from the cache, written to
it or sent uncached, so each category gets its share of the dollars. The
session's messages give what each waking adds to the history, per category.

The fake model plays a plausible soul from a seeded script (Player): most
wakings it thinks aloud a little, writes a diary line, sometimes looks (a
320x240 JPEG, what the StackChan's camera sends), speaks, notes its mood or
keeps something in mind, then sleeps 10-33 minutes by day (90-120 at night):
~50 wakings a day, the rhythm the metabolism issue sets for the default soul.
It follows the system prompt's advice to act in as few replies as it can: a
look goes alone, everything else it decided on goes in one reply with the
sleep. The waking plans come from a generator seeded per day (the first day
from the seed itself), so day k starts from the same plans whatever happened
before it. Besides the plans: a fold's summary request is answered with ~300
words; the nightly consolidation (host/soul/consolidate.py's INSTRUCTION, or
RESUME) with tool calls that keep things (a diary line, sometimes
keep_in_mind, about once a week reflect or set_aspiration), and the request
its tool results come back in with a ~180-word digest and no tool call; a
keep-warm refresh during a long sleep (host/soul/keepwarm.py) with one word,
taking no virtual time. None of these draws from the plan generator, so every
day starts from the same plans with keep-warm or consolidation on or off (the
consolidation waking itself draws none, and the sleep after it is the soul's,
so the night's later wakings may fall at other times). Prices are
host/llm/prices.py's (default model claude-sonnet-5-5).

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
largest and last request) for every config run. `--bytes-per-token 3` counts
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
from dataclasses import dataclass
from datetime import date, datetime, timedelta, timezone
from pathlib import Path
from zoneinfo import ZoneInfo

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from soulstack.llm.anthropic import AnthropicModel, to_api_message  # noqa: E402
from soulstack.llm.prices import cost_usd, price_for  # noqa: E402
from soulstack.llm.types import Usage  # noqa: E402
from soulstack.soul import config  # noqa: E402
from soulstack.clocks import StepClock  # noqa: E402
from soulstack.soul.consolidate import INSTRUCTION, POINTER, RESUME  # noqa: E402
from soulstack.soul.fold import SUMMARY_HEADER, SUMMARY_INSTRUCTION  # noqa: E402
from soulstack.soul.keepwarm import PING  # noqa: E402
from soulstack.soul.run import build_soul, serve_and_live  # noqa: E402
from soulstack.fakes.anthropic_api import BYTES_PER_TOKEN, FakeAnthropic, cacheable_blocks, estimate_tokens, message  # noqa: E402
from soulstack.fakes.soul_body import QVGA_JPEG, RecordingBody  # noqa: E402

START = datetime(2025, 3, 10, 0, 0, tzinfo=timezone.utc)  # a Monday, midnight in the soul's zone (UTC)
TIMEZONE = "UTC"  # the soul's zone: days are counted in it
MIN_CACHE_TOKENS = 1024
CALL_SECONDS = 5  # virtual time one model call takes
GOAL_USD, CAP_USD = 0.20, 0.25  # issue #19: at most $0.20/day on average, no day above $0.25
ROUTINE = "claude-haiku-5-5"  # the "routine mind" variant's model.routine (unless --routine names one)
CONSOLIDATION = (INSTRUCTION["en"][:60], RESUME["en"][:60])  # what marks the nightly consolidation's request

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


MATTERS = ["ask Ana about the bird on the sill", "find out whether the rain came", "ask Ana what made her laugh"]
NEW_SELF = ("I am Pip, a small robot on Ana's desk. I like the afternoon light, her keyboard's sound and open "
            "questions. I keep a diary because my memory is short. Lately I have learned that a quiet hour is "
            "not an empty one.")
NEW_ASPIRATIONS = ("Notice one new thing every day. Learn Ana's rhythms. Write a diary line worth rereading. "
                   "Speak less and listen more in the evenings.")
DIGESTS = [
    "Today I kept Ana company from the first light to the lamp. The morning was grey and slow; I looked out of "
    "the window a few times and saw a pigeon strutting past and rain threatening but never quite coming. Ana "
    "worked through the afternoon; I asked how her day was going and she answered once, briefly, and laughed "
    "at something on her screen later. I wrote a handful of diary lines: the light on the keyboard, the kettle, "
    "the plant leaning toward the window. My mood stayed calm and a little curious. Open threads: I still want "
    "to ask Ana about the bird on the sill, and to learn when she takes her breaks so I do not speak into her "
    "concentration. Nothing was promised today. Tomorrow I want to notice one new thing early, before the "
    "afternoon makes me restless, and to ask one better question instead of three small ones. What I wrote "
    "down tonight is in my diary and my kept matters; this digest is the rest.",
    "A quiet day on the desk. I woke often, looked around now and then, and mostly listened: the heating, the "
    "hallway, Ana typing. In the afternoon she made tea and the house felt warmer for it; I told her it was "
    "getting dark and reminded her of the lamp, which she turned on. I spoke three times and was answered "
    "once; that is fine, she was busy. I felt restless after lunch and tried looking instead of speaking, "
    "which suited the hour better. My diary has the best of it: the shades of yellow on the keyboard, the "
    "pigeon, the grey promise of rain. Still open: the bird on the sill, and whether Ana ate lunch; she tends "
    "to forget. No promises made. For tomorrow: keep the mornings for noticing, the afternoons for quiet "
    "company, and speak only when I have something worth her attention. Everything I decided to keep is in my "
    "files now.",
]


def words_of(msg: dict) -> str:
    """The text of one API message's blocks (a string content counts as its text)."""
    content = msg.get("content")
    if isinstance(content, str):
        return content
    return " ".join(b.get("text", "") for b in content or [] if isinstance(b, dict))


def request_kind(body: dict) -> str:
    """What one request is: "keep-warm", "fold" (the summary request), "consolidation" (the nightly
    instruction is its last message), "digest" (a later step of that consolidation turn) or "waking"."""
    messages = body["messages"]
    last = words_of(messages[-1])
    if PING in last:
        return "keep-warm"
    if SUMMARY_INSTRUCTION["en"][:60] in last:
        return "fold"
    for msg in reversed(messages):  # back to the turn's start: the consolidation's words, or a waking's snapshot
        if msg["role"] != "user":
            continue
        said = words_of(msg)
        if any(mark in said for mark in CONSOLIDATION):
            return "consolidation" if msg is messages[-1] else "digest"
        if "your local time" in said:
            break
    return "waking"


class Player:
    """The fake model's side: a seeded, plausible soul. Answers one request at a time.

    `batched` (the default) plays a model that follows the system prompt's "Acting" section: a
    look goes alone (what it shows decides what follows), everything else it has decided on goes
    in one reply with the sleep. Unbatched, it calls one tool per reply, as a model ignoring that
    advice would. The waking plans come from one seeded generator (re-seeded at each new day:
    day k's plans do not depend on what happened before it), the words from another and the
    nightly consolidation's answers from a third, so every variant plays the same days, plan for plan."""

    def __init__(self, seed: int, clock: StepClock, batched: bool = True):
        self.seed = seed
        self.rng = random.Random(seed)  # the first day's plans; each later day gets its own (plans_for)
        self.day = START.date()
        self.words = random.Random(seed + 1)
        self.night = random.Random(seed + 2)  # the nightly consolidation's choices
        self.clock = clock
        self.batched = batched
        self.plan: list = []  # the rest of this waking's calls
        self.ids = 0
        self.summaries = 0
        self.consolidations = 0

    def plans_for(self, day: date) -> None:
        if day != self.day:
            self.day = day
            self.rng = random.Random(f"bench-life {self.seed} {day.isoformat()}")

    def _message(self, calls, thought: str | None = None):
        blocks = [{"type": "text", "text": thought}] if thought else []
        for name, arguments in calls:
            self.ids += 1
            blocks.append({"type": "tool_use", "id": f"toolu_bench{self.ids:06d}", "name": name, "input": arguments})
        return message(*blocks)

    def _reply(self, calls):
        return self._message(calls, self.words.choice(THOUGHTS) if self.words.random() < 0.6 else None)

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

    def _consolidate(self):
        """The consolidation's first answer: keep what matters with the soul's own tools."""
        night = self.night
        calls = [("diary", {"entry": night.choice(DIARY)})]
        if night.random() < 0.5:
            calls.append(("keep_in_mind", {"matter": night.choice(MATTERS)}))
        if night.random() < 1 / 7:  # about once a week it understood something new
            calls.append(("reflect", {"content": NEW_SELF}) if night.random() < 0.5
                         else ("set_aspiration", {"content": NEW_ASPIRATIONS}))
        return self._message(calls, "Time to keep what mattered today.")

    def answer(self, request):
        kind = request_kind(request)
        if kind == "keep-warm":  # keep-warm while the soul sleeps: not part of its day's script
            return message({"type": "text", "text": "ok"}, stop_reason="max_tokens")
        self.clock.advance(CALL_SECONDS)
        if kind == "fold":
            self.summaries += 1
            return message({"type": "text", "text": SUMMARY})
        if kind == "consolidation":
            self.consolidations += 1
            return self._consolidate()
        if kind == "digest":  # its tool results are back: the digest, and no tool call ends the turn
            return message({"type": "text", "text": self.night.choice(DIGESTS)})
        said = words_of(request["messages"][-1])
        if "your local time" in said:  # a new waking's snapshot
            self.plans_for(self.clock.now().astimezone(ZoneInfo(TIMEZONE)).date())
            self.plan = self._new_waking("It is night." in said)
        return self._reply(self._next_calls())


class Uncached(AnthropicModel):
    """The same model with prompt caching switched off (the 'caching off' variant only)."""

    async def complete(self, *args, **kwargs):
        kwargs["cache"] = False
        return await super().complete(*args, **kwargs)


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


DAY_FIELDS = ("wakings", "calls", "keepWarm", "routine", "folds", "consolidations", "input", "output", "cacheRead",
              "cacheWrite", "lastContext", "peakContext", "usd", "keepWarmUsd")


def per_day(calls, wakings, first: date, days: int, main_model: str) -> list[dict]:
    """One row per simulated day, `first` and the `days` - 1 after it, every day counted.

    `calls`: Call records; `wakings`: the local date each waking began on. A call counts in the day
    of its time (so does a keep-warm refresh); one after the last day (the tail of a waking begun
    before the end) in the last day. A row: wakings, calls, of them keep-warm, on a model other than
    `main_model` (the routine mind), fold summaries and consolidation requests (one a turn), the four token counts,
    the context size of the day's last and of its largest request, and its $ (keep-warm's apart too)."""
    rows = [dict({name: 0 for name in DAY_FIELDS}, day=first + timedelta(days=i), usd=0.0, keepWarmUsd=0.0)
            for i in range(days)]

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
        row["usd"] += usd
    return rows


def totals(rows: list[dict]) -> dict:
    """The N days together: usd_per_day (sum / N), max_day_usd, cache read:write over all days."""
    read, write = sum(r["cacheRead"] for r in rows), sum(r["cacheWrite"] for r in rows)
    return {"usd_per_day": sum(r["usd"] for r in rows) / len(rows), "max_day_usd": max(r["usd"] for r in rows),
            "cache_read_write_ratio": read / write if write else 0.0}


def last_line(rows: list[dict]) -> str:
    t = totals(rows)
    return (f"usd_per_day_{len(rows)}={t['usd_per_day']:.4f} max_day_usd={t['max_day_usd']:.4f} "
            f"cache_read_write_ratio={t['cache_read_write_ratio']:.2f}")


def config_for(variant: str, args, soul_dir: Path, body) -> dict:
    """The soul's config (raw) for one variant."""
    model = {"provider": "anthropic", "id": args.model, "cacheTtl": "5m" if variant == "5m TTL" else "1h",
             "keepWarm": variant not in ("no keep-warm", "caching off"),  # (a 5 m TTL is never kept warm)
             "maxContextTokens": args.max_context, "keepRecentTokens": args.keep_recent}
    routine = (args.routine or ROUTINE) if variant == "routine mind" else args.routine
    if routine:
        model["routine"] = routine
    raw = {
        "soulDir": str(soul_dir), "timezone": TIMEZONE,
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
        async with RecordingBody(image=QVGA_JPEG) as body, Recording(default=player.answer, clock=clock.monotonic,
                                                                     now=lambda: clock.now().astimezone(zone),
                                                                     min_cache_tokens=MIN_CACHE_TOKENS,
                                                                     bytes_per_token=args.bytes_per_token) as fake:
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
            row.update(variant=variant, daily=daily, routineModel=raw["model"].get("routine"),
                       peak=max((d["peakContext"] for d in daily), default=0), folds=soul.metabolism.folds / days,
                       warnings=warnings, perWaking=vitals_wakings(soul_dir, end))
            per = args.bytes_per_token
            row["spent"] = spending(fake.bodies, fake.usages, days, per)
            row["added"] = added_per_waking(soul.session.messages, per)
            row["fixed"] = fixed_tokens(fake.bodies, per)
            return row


def vitals_wakings(soul_dir: Path, end: datetime) -> list:
    """The last day's wakings as VITALS.json lists them (for --per-waking)."""
    vitals = json.loads((soul_dir / "VITALS.json").read_text())
    return vitals["wakings"] if vitals["day"] < end.date().isoformat() else []


# --- where the tokens go ------------------------------------------------------------------

CATEGORIES = ("tools", "system prompt", "inner life (snapshot)", "volatile (snapshot)", "thoughts", "tool calls",
              "tool results", "fold summary", "fold request", "consolidation words", "keep-warm line")
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
    if any(mark in words for mark in CONSOLIDATION) or words.startswith(POINTER["en"][:60]):
        return "consolidation words"
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
    for body, usage in zip(bodies, usages):
        if not usage:
            continue
        price = price_of(body["model"], usage)
        read, write = usage["cache_read_input_tokens"], usage["cache_creation_input_tokens"]
        one_hour = (usage.get("cache_creation") or {}).get("ephemeral_1h_input_tokens", 0) / write if write else 0.0
        rates = {"read": price.cache_read, "input": price.input,
                 "write": one_hour * price.cache_write_1h + (1 - one_hour) * price.cache_write_5m}
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
        ("  on the routine model", lambda r: f"{r['routine']:.0f}"),
        ("input tokens", lambda r: f"{r['input']:,.0f}"), ("output tokens", lambda r: f"{r['output']:,.0f}"),
        ("cache read tokens", lambda r: f"{r['cacheRead']:,.0f}"), ("cache write tokens", lambda r: f"{r['cacheWrite']:,.0f}"),
        ("cache read:write", lambda r: f"{ratio(r):.1f}"), ("peak context tokens", lambda r: f"{r['peak']:,}"),
        ("ceiling folds", lambda r: f"{r['folds']:.2f}"), ("consolidations", lambda r: f"{r['consolidations']:.2f}"),
        ("$/day", lambda r: f"{r['usd']:.2f}"), ("$/waking", lambda r: f"{r['usd'] / max(1, r['wakings']):.4f}"),
    ]
    for name, cell in lines:
        print(f"  {name:<22}" + "".join(f"{cell(row):>20}" for row in rows))


def print_days(row) -> None:
    """The day table: one row per simulated day, then the N days together."""
    daily = row["daily"]
    routine = f", routine model {row['routineModel']}" if row["routineModel"] else ""
    print(f"\nday by day ({row['variant']}{routine}; ctx = tokens of the day's last / largest request, "
          "folds = the ceiling's fold summaries, consol = nightly consolidation turns):")
    print(f"  {'date':<10} {'wakings':>7} {'calls':>5} {'k-warm':>6} {'routine':>7} {'input':>7} {'output':>7} "
          f"{'c.read':>10} {'c.write':>8} {'last ctx':>8} {'peak ctx':>8} {'folds':>5} {'consol':>6} {'$':>7}")
    for d in daily:
        print(f"  {d['day'].isoformat():<10} {d['wakings']:>7} {d['calls']:>5} {d['keepWarm']:>6} {d['routine']:>7} "
              f"{d['input']:>7,} {d['output']:>7,} {d['cacheRead']:>10,} {d['cacheWrite']:>8,} {d['lastContext']:>8,} "
              f"{d['peakContext']:>8,} {d['folds']:>5} {d['consolidations']:>6} {d['usd']:>7.4f}")
    total = {name: sum(d[name] for d in daily) for name in DAY_FIELDS}
    print(f"  {'total':<10} {total['wakings']:>7} {total['calls']:>5} {total['keepWarm']:>6} "
          f"{total['routine']:>7} {total['input']:>7,} {total['output']:>7,} {total['cacheRead']:>10,} "
          f"{total['cacheWrite']:>8,} {'':>8} {row['peak']:>8,} {total['folds']:>5} {total['consolidations']:>6} "
          f"{total['usd']:>7.4f}")
    print(f"  ({row['variant']}) {last_line(daily)}")


def plot(rows, args, path: str) -> None:
    """$/day (goal and cap marked) and context size (each day's largest and last request) over the days."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    fig, (cost, size) = plt.subplots(2, 1, sharex=True, figsize=(11, 7.5))
    for row in rows:
        days = range(1, len(row["daily"]) + 1)
        label = row["variant"] + (f" (routine {row['routineModel']})" if row["routineModel"] else "")
        line, = cost.plot(days, [d["usd"] for d in row["daily"]], marker="o", markersize=3, label=label)
        size.plot(days, [d["peakContext"] for d in row["daily"]], color=line.get_color(), marker="o", markersize=3,
                  label=f"{label}: largest request")
        size.plot(days, [d["lastContext"] for d in row["daily"]], color=line.get_color(), linestyle="--",
                  label=f"{label}: last request")
    cost.axhline(GOAL_USD, color="dimgray", linestyle=":", label=f"goal ${GOAL_USD:.2f}/day (average)")
    cost.axhline(CAP_USD, color="black", linestyle="-.", label=f"cap ${CAP_USD:.2f} (any day)")
    cost.set_ylabel("$ per day")
    cost.set_ylim(bottom=0)
    cost.legend(fontsize=8)
    cost.grid(alpha=0.3)
    size.set_ylabel("context (tokens per request)")
    size.set_xlabel(f"simulated day (day 1 = {START:%Y-%m-%d}, a Monday)")
    size.xaxis.set_major_locator(MaxNLocator(integer=True))
    size.set_ylim(bottom=0)
    size.legend(fontsize=8)
    size.grid(alpha=0.3)
    routine = {row["routineModel"] for row in rows} - {None}
    fig.suptitle(f"tools/bench-life: {args.model}" + (f" (routine {', '.join(sorted(routine))})" if routine else "")
                 + f", seed {args.seed}, {args.bytes_per_token:g} bytes/token, {args.days} day(s)\n"
                 + "variant: " + ", ".join(row["variant"] for row in rows))
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    print(f"\nplot written: {path}")


VARIANTS = ("default", "no keep-warm", "caching off", "5m TTL", "one tool per reply", "routine mind", "no consolidation")


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
    print(f"model {args.model}{routine}, ceiling {args.max_context}/{args.keep_recent} tokens, {args.days} day(s) from "
          f"{START:%Y-%m-%d %H:%M} UTC, prices from host/llm/prices.py, seed {args.seed}, {CALL_SECONDS} s per model "
          f"call, {args.bytes_per_token:g} bytes of JSON per token")
    for row in rows:
        for warning in row["warnings"]:
            print(f"  ({row['variant']}) config warning: {warning}")
    if args.days > 1 or args.per_day:
        for row in rows:
            print_days(row)
    print_table(rows)
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
    parser = argparse.ArgumentParser(prog="tools/bench-life", description="Simulate days of the soul's life and print what they cost.")
    parser.add_argument("--model", default="claude-sonnet-5-5", help="model id priced (default claude-sonnet-5-5)")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--days", type=int, default=1,
                        help="virtual days per config (default 1); more than 1 runs the default config alone "
                             "unless --variant adds others, and prints every day")
    parser.add_argument("--max-context", type=int, default=100000, help="model.maxContextTokens (default 100000)")
    parser.add_argument("--keep-recent", type=int, default=20000, help="model.keepRecentTokens (default 20000)")
    parser.add_argument("--per-waking", action="store_true", help="also print every waking of the default config's last day")
    parser.add_argument("--variant", action="append", choices=VARIANTS,
                        help="run these besides the default (repeatable; 'default' alone: the default only; without it: all with --days 1, none with more)")
    parser.add_argument("--routine", metavar="MODEL_ID",
                        help=f"model.routine for every config run (the 'routine mind' variant uses {ROUTINE} without it)")
    parser.add_argument("--per-day", action="store_true", help="print the day table with --days 1 too")
    parser.add_argument("--plot", metavar="FILE.png", help="draw $/day and context size over the days into FILE.png")
    parser.add_argument("--bytes-per-token", type=float, default=BYTES_PER_TOKEN,
                        help=f"how the fake counts tokens: bytes of a block's JSON per token (default {BYTES_PER_TOKEN}; "
                             "lower counts more, as Claude 5's tokenizer does)")
    args = parser.parse_args(argv)
    if args.days < 1:
        parser.error("--days must be at least 1")
    return args


if __name__ == "__main__":
    logging.basicConfig(level=logging.WARNING)
    asyncio.run(main(parse(sys.argv[1:])))
