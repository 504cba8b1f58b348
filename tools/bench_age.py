"""How a soul ages (run it as tools/bench-age): start-up, memory and recall at 1, 30, 365 and 1,095 days.

Each life is written once into a cache folder (--cache, default /tmp/soulstack-bench-age) by the
soul's own writers: the bench-life player's plans and words (tools/bench_life_player.py) day by
day, ~50 wakings a day, each a snapshot, a reply with its calls and their results; every night a
consolidation (its record, the instruction, a diary line and a kept matter, the digest) and the
fold after it, whose past moves into archive.sqlite3 through the archive's own `move`
(host/soul/memory/archive.py) with the day's entries (what it said aloud, the digest, a person's
words); at the end the live part behind an "archived" line, as Session writes it, and the life
files, synced into the index by recall's own `sync_life`. Images are left out of the written
history (a real soul's looks add ~20 KB each to its archive on disk, never to its process).

For the recall benchmark, a life of a year or more hears 200 facts (tools/bench_age_facts.py,
English and Chinese) as a person's words spread over its last 365 days: each in a waking's
snapshot and kept as it arrives, as the nudge hook does.

Then each age is measured in a fresh process (this file with --measure): a real soul
(build_soul, every part attached) on a copy of the life, the real anthropic SDK against
host/fakes/anthropic_api.py playing the same player, a real body on loopback, a StepClock:
  start_s      from build_soul to its first waking (the imports, ~50 MB and a few seconds with the
               anthropic SDK on a loaded machine, and the fakes' start are measured apart)
  rss_mb       resident memory after the first waking, and after 100 further wakings (which live
               through a night: a consolidation, its fold and a move into the archive); the fakes'
               records are dropped each waking (they live in the measured process, but are not the
               soul's); --trace with --measure adds where Python's allocations went (tracemalloc)
  recall       p95 latency of the recall tool (the tool's whole call: the life files' sync and the
               search) over the 200 questions, and the share of facts that are in the context the
               model is sent or in recall's top 5 for a query made of the question's words. This
               measures what the soul can reach, not what a model answers.

Output: a table with a row per age, the floor (a fresh interpreter's VmRSS bare and after only
`import anthropic`: what no soul code can shed), then exactly one last line
    start_s_3y=X rss_mb_3y=X rss_ratio_3y_1d=X recall_p95_ms=X recall_share=X
(the 3-year life's start, its memory after the 100 wakings and its ratio to the 1-day life's,
its recall p95 and share). Goals (docs/metabolism.md, "The archive"): start <= 1 s and <= 80 MB
at every age, 3-year within 1.2x of 1-day, recall p95 <= 50 ms, share >= 95%.
"""

import argparse
import asyncio
import json
import math
import random
import shutil
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timedelta
from pathlib import Path
from types import SimpleNamespace

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from soulstack.llm.types import Message, TextBlock, ToolCall, ToolResult  # noqa: E402
from soulstack.soul import life as lifefiles  # noqa: E402
from soulstack.soul.memory.archive import Archive, Entry, stamp  # noqa: E402
from soulstack.soul.memory.diary import keep_light  # noqa: E402
from soulstack.soul.memory.session import HEADER  # noqa: E402
from tools.bench_age_facts import FACTS  # noqa: E402
from tools.bench_life_player import ASPIRATIONS, DIARY, DIGESTS, EN, MATTERS, SELF, START, THOUGHTS, Player  # noqa: E402

AGES = (1, 30, 365, 1095)
GENERATION = 2  # of the written lives: a cached life of another generation is written again
WAKINGS = 100
# Packages worth knowing whether a soul loaded (the other provider's SDK must not be among them).
HEAVY = ("anthropic", "openai", "boto3", "botocore", "mcp", "numpy", "PIL", "playwright", "websockets")
SEED = 7
MODEL_IDS = {"anthropic": "claude-sonnet-5-5", "openai": "llama3.1"}  # openai: an OpenAI-compatible local server
# What a waking's snapshot says besides the time (~1 KB, as the measure had it).
FILLER = (
    "\n\nYour body (the desk robot) is there and awake. What you feel: a calm, slow afternoon; nothing "
    "presses. Your mood (MOOD.md): calm and a little curious (a slow, gentle hour). What you keep in mind: "
    "ask Ana about the bird on the sill (since a few days, fading). Your latest diary lines are in view. "
) + "The house is quiet; the light moves over the desk and the plant leans toward the window. " * 7
RESULTS = {
    "look": "What you see: the desk, the window, grey light, no one in the room.",
    "speak": "Said aloud.",
    "update_mood": EN["mood_set"],
    "keep_in_mind": EN["kept_done"],
    "diary": EN["diary_written"],
}


# --- writing a life -----------------------------------------------------------------------------


class Writer:
    """One life, written day by day: the live records, the archive, the life files' text."""

    def __init__(self, folder: Path, days: int):
        self.folder, self.days = folder, days
        self.archive = Archive(folder / "archive.sqlite3")
        self.lines: list = []  # the live records: (message index or None, line)
        self.first = 0  # record number of lines[0]
        self.messages = 0
        self.base = 0  # first live message
        self.diary: list = []
        self.kept: dict = {}
        self.selves: list = []
        self.entries: list = []  # (Entry, daily) not yet stored
        self.player = Player(SEED, SimpleNamespace(advance=lambda s: None))
        self.facts = planted(days)
        self.consolidated = None

    def record(self, record: dict, message: bool = False) -> int:
        index = None
        if message:
            index, self.messages = self.messages, self.messages + 1
        self.lines.append((index, json.dumps(record, ensure_ascii=False)))
        return index

    def message(self, role: str, blocks: list, at: datetime, waking: bool = False) -> int:
        record = {"type": "message", "message": Message(role, blocks).to_json(), "at": at.isoformat()}
        if waking:
            record["waking"] = True
        return self.record(record, message=True)

    def waking(self, at: datetime, night: bool, day: int, number: int) -> None:
        snapshot = f"It is {at:%H:%M}, your local time." + (" It is night." if night else "") + FILLER
        fact = self.facts.get((day, number))
        if fact:
            snapshot = f'Ana said: "{fact}"\n\n' + snapshot
            self.entries.append((Entry(stamp(at), "heard", "Ana", fact), True))
        self.message("user", [TextBlock(snapshot)], at, waking=True)
        self.player.plans_for(at.date())
        plan = self.player._new_waking(night)
        calls = [ToolCall(f"toolu_{self.messages}_{i}", name, arguments) for i, (name, arguments) in enumerate(plan)]
        thought = self.player.words.choice(THOUGHTS) if self.player.words.random() < 0.6 else None
        self.message("assistant", ([TextBlock(thought)] if thought else []) + calls, at)
        results = []
        for call in calls:
            if call.name == "sleep":
                results.append(ToolResult(call.id, [TextBlock(f"You will sleep {call.input['minutes']} minutes.")]))
                continue
            results.append(ToolResult(call.id, [TextBlock(RESULTS[call.name])]))
            if call.name == "diary":
                self.diary.append(f"- {at:%Y-%m-%d %H:%M}: {call.input['entry']}")
            elif call.name == "speak":
                self.entries.append((Entry(stamp(at), "said", "", call.input["text"]), True))
            elif call.name == "keep_in_mind":
                self.kept[call.input["matter"]] = f"{at:%Y-%m-%d %H:%M}"
        self.message("user", results, at)

    def consolidate(self, at: datetime, night: str) -> None:
        begun = self.message("user", [TextBlock(f"It is {at:%H:%M}, your local time. It is night." + FILLER)], at, True)
        self.record({"type": "consolidation", "night": night, "waking": begun, "at": at.isoformat()})
        self.message("user", [TextBlock(EN["consolidate"])], at)
        rng = self.player.night
        matter = rng.choice(MATTERS)
        calls = [ToolCall(f"toolu_c{begun}", "diary", {"entry": rng.choice(DIARY)})]
        calls.append(ToolCall(f"toolu_k{begun}", "keep_in_mind", {"matter": matter}))
        self.message("assistant", [TextBlock("Time to keep what mattered today.")] + calls, at)
        self.message("user", [ToolResult(c.id, [TextBlock(RESULTS[c.name])]) for c in calls], at)
        self.diary.append(f"- {at:%Y-%m-%d %H:%M}: {calls[0].input['entry']}")
        self.kept[matter] = f"{at:%Y-%m-%d %H:%M}"
        if rng.random() < 1 / 7:
            self.selves.append(f"\n=== until {at:%Y-%m-%d %H:%M} ===\n{SELF.strip()[:400]}\n")
        digest = rng.choice(DIGESTS)
        self.message("assistant", [TextBlock(digest)], at)
        # the fold: everything before the waking ahead of the consolidation leaves the live part
        upto = max(self.base, begun - 3)
        summary = EN["consolidate_pointer"]
        self.record({"type": "fold", "summary": summary, "upto": upto, "at": at.isoformat(), "night": night})
        self.entries.append((Entry(stamp(at), "digest", "", digest), False))
        self.move(upto)
        self.consolidated = (summary, upto, night)

    def move(self, upto: int) -> None:
        live = (i for i, (index, _) in enumerate(self.lines) if index is not None and index >= upto)
        keep = next(live, len(self.lines))
        moving = [(self.first + i, index, line) for i, (index, line) in enumerate(self.lines[:keep])]
        self.archive.move(moving, self.entries)
        self.entries, self.first, self.lines, self.base = [], self.first + keep, self.lines[keep:], upto

    def live(self) -> None:
        for day in range(self.days):
            at, number = START + timedelta(days=day), 0
            end = at + timedelta(days=1)
            done_tonight = False
            while at < end:
                night = at.hour < 7
                if night and not done_tonight and day > 0:
                    self.consolidate(at, (at.date() - timedelta(days=1)).isoformat())
                    done_tonight = True
                else:
                    self.waking(at, night, day, number)
                number += 1
                minutes = self.player.rng.choice([90, 120]) if night else self.player.rng.randint(10, 33)
                at += timedelta(minutes=minutes)
        self.finish()

    def finish(self) -> None:
        if self.entries:
            self.archive.remember_all(self.entries)
        summary, upto, night = self.consolidated or (None, 0, None)
        state = {"summary": summary, "upto": upto, "consolidating": None, "consolidated_night": night}
        head = {"type": HEADER, "records": self.first, "messages": self.base, "state": state}
        text = json.dumps(head, ensure_ascii=False) + "\n" + "".join(line + "\n" for _, line in self.lines)
        (self.folder / "session.jsonl").write_text(text, encoding="utf-8")
        files = {
            lifefiles.DIARY: "\n".join(self.diary) + "\n",
            lifefiles.MIND: "".join(f"- {when}: {matter}\n" for matter, when in self.kept.items()),
            lifefiles.SELF: SELF,
            lifefiles.ASPIRATIONS: ASPIRATIONS,
            lifefiles.SELF_HISTORY: "".join(self.selves),
        }
        for name, text in files.items():
            (self.folder / name).write_text(text, encoding="utf-8")
        from soulstack.soul.tools.recall import sync_life  # the tool's own sync, as its first search would

        life = lifefiles.Life(self.folder)
        sync_life(SimpleNamespace(life=life, session=SimpleNamespace(archive=self.archive)))
        keep_light(life, self.archive)  # DIARY.md as a soul keeps it: its old lines in the archive
        self.archive.close()


def planted(days: int) -> dict:
    """{(day, waking number): fact}: the 200 facts over the last 365 days of a life of a year or more."""
    if days < 365:
        return {}
    first = days - 365
    return {(first + i * 365 // len(FACTS), 30 + i % 7): fact for i, (fact, _q) in enumerate(FACTS)}


def cached_life(cache: Path, days: int) -> Path:
    folder = cache / f"g{GENERATION}-seed{SEED}-{days}d" / "soul"
    if (folder.parent / "done").exists():
        return folder
    shutil.rmtree(folder.parent, ignore_errors=True)
    folder.mkdir(parents=True)
    began = time.perf_counter()
    Writer(folder, days).live()
    (folder.parent / "done").write_text(f"{time.perf_counter() - began:.1f}\n")
    print(f"bench-age: wrote the {days}-day life in {time.perf_counter() - began:.1f} s ({folder})", file=sys.stderr)
    return folder


# --- measuring one age, in its own process -----------------------------------------------------------


def top_allocations(snapshot, since=None, n=12) -> list:
    """The lines of code holding the most memory (or the most more than at `since`), for --trace."""
    stats = snapshot.compare_to(since, "lineno") if since else snapshot.statistics("lineno")
    return [f"{stat.size_diff if since else stat.size:>10} B {stat.traceback}" for stat in stats[:n]]


def rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return math.nan


def as_openai(reply: dict) -> dict:
    """The player's Messages API reply as a Chat Completions one: its text, its tool calls."""
    from soulstack.fakes.openai_api import completion

    words = " ".join(b["text"] for b in reply["content"] if b["type"] == "text") or None
    calls = [
        {"id": b["id"], "name": b["name"], "arguments": b["input"]} for b in reply["content"] if b["type"] == "tool_use"
    ]
    return completion(words, calls, finish_reason="length" if reply["stop_reason"] == "max_tokens" else None)


def fake_api(provider: str, clock, player):
    """The fake model server for `provider`, playing `player`, and the soul's env pointing at it."""
    if provider == "openai":
        from soulstack.fakes.openai_api import FakeOpenAI

        fake = FakeOpenAI(default=lambda request: as_openai(player.answer(request)))
        return fake, lambda: {"OPENAI_API_KEY": "bench", "OPENAI_BASE_URL": fake.base_url + "/v1"}  # once started
    from soulstack.fakes.anthropic_api import FakeAnthropic

    fake = FakeAnthropic(clock=clock.monotonic, default=player.answer)
    return fake, lambda: {"ANTHROPIC_API_KEY": "bench", "ANTHROPIC_BASE_URL": fake.base_url}


async def measure(folder: Path, days: int, wakings: int, trace: bool = False, provider: str = "anthropic") -> dict:
    if trace:
        import tracemalloc

        tracemalloc.start()
    imports = time.perf_counter()
    # The SDK's import is the same at every age: it is timed apart.
    __import__(provider)

    from soulstack.clocks import StepClock
    from soulstack.fakes.soul_body import QVGA_JPEG, RecordingBody
    from soulstack.llm.types import ToolCall as Call
    from soulstack.soul import config
    from soulstack.soul.memory.view import view
    from soulstack.soul.run import build_soul, serve_and_live

    clock = StepClock(START + timedelta(days=days, hours=9))
    player = Player(SEED + days, clock)
    out: dict = {"imports_s": time.perf_counter() - imports, "rss_imports_mb": rss_mb()}
    imported = tracemalloc.take_snapshot() if trace else None
    done = asyncio.Event()
    model_api, soul_env = fake_api(provider, clock, player)
    async with RecordingBody(image=QVGA_JPEG) as body, model_api as fake:
        raw = {
            "soulDir": str(folder),
            "timezone": "UTC",
            "model": {"provider": provider, "id": MODEL_IDS[provider], "keepWarm": False},
            "body": {"name": "the desk robot", "endpoints": body.endpoints()},
            "persona": {"name": "Pip", "human": "Ana"},
            "nudge": {"port": 0},
            "budget": {"maxWakesPerDay": 1000},
        }
        cfg, _warnings = config.from_dict(raw)
        env = soul_env()
        began = time.perf_counter()
        soul = build_soul(cfg, clock=clock, env=env, rng=random.Random(SEED))

        def on_waking(soul, waking):
            out.setdefault("start_s", time.perf_counter() - began)

        def on_end(soul, waking):
            # The fakes' records (every request body, every call to the body) are the harness's memory in this
            # process, not the soul's: dropped each waking, or they would be counted as the soul growing.
            fake.requests.clear()
            fake.usages.clear()
            body.received.clear()
            if waking.number == 1:
                out["rss_start_mb"] = rss_mb()
                if trace:
                    out["trace_start"] = tracemalloc.take_snapshot()
            if waking.number == wakings + 1:
                out["rss_mb"] = rss_mb()
                out["loaded"] = sorted(m for m in HEAVY if m in sys.modules)
                if trace:
                    early = out.pop("trace_start")
                    out["top_start"] = top_allocations(early, imported)
                    out["top_growth"] = top_allocations(tracemalloc.take_snapshot(), early)
                done.set()

        soul.hooks.on_waking.append(on_waking)
        soul.hooks.on_waking_end.append(on_end)
        task = asyncio.create_task(serve_and_live(soul, announce=lambda line: None))
        await asyncio.wait_for(done.wait(), 600)
        task.cancel()
        try:
            await task
        except asyncio.CancelledError:
            pass
        context = json.dumps([m.to_json() for m in view(soul)], ensure_ascii=False)
        latencies, reached = [], 0
        planted_facts = planted(days)
        for index, (fact, question) in enumerate(FACTS):
            started = time.perf_counter()
            result, ok = await soul.toolbox.run(soul, Call(f"r{index}", "recall", {"query": question}))
            latencies.append((time.perf_counter() - started) * 1000)
            said = " ".join(b.text for b in result.content)
            reached += fact in context or (ok and fact in said)
        soul.session.close()
    latencies.sort()
    out["recall_p95_ms"] = latencies[int(0.95 * (len(latencies) - 1))]
    out["recall_share"] = reached / len(FACTS) if planted_facts else None
    out["archive_mb"] = (folder / "archive.sqlite3").stat().st_size / 2**20
    out["session_mb"] = (folder / "session.jsonl").stat().st_size / 2**20
    out["live_messages"] = len(soul.session.messages.items)
    return out


# What a fresh interpreter holds before any soul code: bare, and with the SDK the soul talks to Claude through.
FLOOR = "import {module}\nfor line in open('/proc/self/status'):\n    if line.startswith('VmRSS:'): print(int(line.split()[1]) / 1024)"


def floor_mb(module: str) -> float:
    """VmRSS of a fresh interpreter that imported only `module`: the part of rss_mb no soul code can shed."""
    child = subprocess.run([sys.executable, "-c", FLOOR.format(module=module)], capture_output=True, text=True)
    return float(child.stdout.strip()) if child.returncode == 0 else math.nan


def run_age(cache: Path, days: int, wakings: int, provider: str) -> dict:
    life = cached_life(cache, days)
    with tempfile.TemporaryDirectory(prefix="bench-age-") as tmp:
        copy = Path(tmp) / "soul"
        shutil.copytree(life, copy)
        archive_mb = (copy / "archive.sqlite3").stat().st_size / 2**20
        child = subprocess.run(
            [sys.executable, __file__, "--measure", str(copy), "--days", str(days), "--wakings", str(wakings)]
            + ["--provider", provider],
            capture_output=True,
            text=True,
        )
        if child.returncode != 0:
            raise SystemExit(f"bench-age: measuring the {days}-day life failed:\n{child.stderr[-3000:]}")
        row = json.loads(child.stdout.strip().splitlines()[-1])
    row["days"], row["archive_mb_before"] = days, archive_mb
    return row


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="tools/bench-age", description=__doc__.splitlines()[0])
    parser.add_argument("--cache", default="/tmp/soulstack-bench-age", help="where the written lives are kept")
    parser.add_argument(
        "--ages", default=",".join(map(str, AGES)), help="days, comma-separated (1 and 1095 for the last line)"
    )
    parser.add_argument("--wakings", type=int, default=WAKINGS)
    parser.add_argument(
        "--provider",
        choices=tuple(MODEL_IDS),
        default="anthropic",
        help="the SDK the soul talks through (openai: the openai SDK against a fake Chat Completions server)",
    )
    parser.add_argument("--trace", action="store_true", help="with --measure: where the memory goes (tracemalloc)")
    parser.add_argument("--measure", help=argparse.SUPPRESS)
    parser.add_argument("--days", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.measure:
        print(json.dumps(asyncio.run(measure(Path(args.measure), args.days, args.wakings, args.trace, args.provider))))
        return 0
    ages = [int(a) for a in args.ages.split(",")]
    rows = {days: run_age(Path(args.cache), days, args.wakings, args.provider) for days in ages}
    print(
        f"{'days':>5} {'session MB':>10} {'archive MB':>10} {'imports s':>9} {'RSS imports':>11} {'start s':>8} "
        f"{'RSS start':>9} {'RSS +100':>9} {'recall p95 ms':>13} {'recall share':>12}"
    )
    for days, row in rows.items():
        share = "-" if row["recall_share"] is None else f"{row['recall_share']:.3f}"
        print(
            f"{days:>5} {row['session_mb']:>10.2f} {row['archive_mb_before']:>10.1f} {row['imports_s']:>9.2f} "
            f"{row['rss_imports_mb']:>11.1f} {row['start_s']:>8.3f} "
            f"{row['rss_start_mb']:>9.1f} {row['rss_mb']:>9.1f} {row['recall_p95_ms']:>13.1f} {share:>12}"
        )
    bare, sdk = floor_mb("sys"), floor_mb(args.provider)
    print(
        f"floor: a bare interpreter {bare:.1f} MB; with only `import {args.provider}` {sdk:.1f} MB "
        f"(the SDK and what it loads: asyncio, httpx, pydantic...), before any soul code"
    )
    old, young = rows.get(1095), rows.get(1)
    if old and young:
        print(
            f"start_s_3y={old['start_s']:.3f} rss_mb_3y={old['rss_mb']:.1f} "
            f"rss_ratio_3y_1d={old['rss_mb'] / young['rss_mb']:.2f} recall_p95_ms={old['recall_p95_ms']:.1f} "
            f"recall_share={old['recall_share']:.3f}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
