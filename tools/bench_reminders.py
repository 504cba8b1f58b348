"""Do a soul's promises of a time keep themselves? (run it as tools/bench-reminders)

A real soul (host/soul/run.py's build_soul, every part attached) lives a week on host/clocks.py's
StepClock, in Europe/Berlin across the autumn change (Sunday 2026-10-25, 03:00 -> 02:00), in a
process of its own. At its first waking its model promises 7 repeating reminders (daily, weekdays,
weekly; one daily at 02:30, a time that happens twice on the change's night) and 70 one-offs at
seeded local times; on Friday each waking adds one more "after N min". The model takes CALL_S of
virtual time a call; on Saturday 09:00-15:00 it fails (529) at every call, and the soul goes on
the brainstem; on Sunday, at the first reminder waking after noon, it hangs and the process is
killed with SIGKILL, then started again CRASH_GAP_S later (virtual) on the same soulDir. Its
body is a real Body Protocol server on loopback in the soul's process that stamps every /speak
with the virtual time.

What is due is computed here, from the plan (zoneinfo, not the soul's store); each occurrence is
matched to the first /speak carrying its tag at or after its time. Printed: the reminders due,
delivered (said through the body), missed, lateness p50/p99 (seconds from its time to its
/speak), said more than once, the wakings, the wakings the reminders called and the distinct
due times, and the soul's own counts (REMINDERS.json). extra_wakings: the wakings the reminders
called beyond one per distinct due time (goal 0). Exactly one last line:

    reminders_due=N delivered=N missed=N late_p50_s=X late_p99_s=X extra_wakings=N

Goal: missed=0, late_p99_s <= 30, extra_wakings=0. `--keep DIR` keeps the soul's folder there.
"""

import argparse
import asyncio
import json
import random
import re
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timedelta, UTC
from pathlib import Path
from zoneinfo import ZoneInfo

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from soulstack.clocks import StepClock  # noqa: E402
from soulstack.fakes.loopback import LoopbackServer  # noqa: E402
from soulstack.llm.types import Message, ModelError, Reply, TextBlock, ToolCall, Usage  # noqa: E402
from soulstack.protocol.body_app import make_body_app  # noqa: E402
from soulstack.soul import config  # noqa: E402
from soulstack.soul.prompts import texts  # noqa: E402
from soulstack.soul.reminders.when import localize  # noqa: E402
from soulstack.soul.run import build_soul, close_soul  # noqa: E402

TZ = ZoneInfo("Europe/Berlin")
START = datetime(2026, 10, 22, 6, 0, tzinfo=TZ)  # a Thursday; the clocks go back on Sunday
WEEK = timedelta(days=7)
RUN_PAST = timedelta(hours=1)  # the soul lives on past the week, so the week's last reminders can be said
CALL_S = 3.0  # virtual seconds a model call takes
DOWN = (datetime(2026, 10, 24, 9, 0, tzinfo=TZ), datetime(2026, 10, 24, 15, 0, tzinfo=TZ))  # the model fails
KILL_AFTER = datetime(2026, 10, 25, 12, 0, tzinfo=TZ)  # the first reminder waking after this: kill -9
CRASH_GAP_S = 20.0  # virtual seconds between the kill and the new process
ADD_AFTER = (datetime(2026, 10, 23, 8, 0, tzinfo=TZ), datetime(2026, 10, 23, 20, 0, tzinfo=TZ))
REPEATING = (  # tag, repeat, at, words
    ("d1", "daily", "08:00", "water the plants"),
    ("d2", "daily", "13:30", "take the pills"),
    ("d3", "daily", "21:15", "lock the door"),
    ("d4", "daily", "02:30", "check the heating"),
    ("w1", "weekdays", "07:30", "pack the lunch"),
    ("w2", "weekdays", "18:00", "call mum"),
    ("k1", "weekly", "tuesday 10:00", "put out the bins"),
)
ONE_OFFS = 70
EN = texts("en").TEXT
DUE = re.compile(re.escape(EN["reminders"]["due"].split("{who}")[0]) + r".*?\u201c(.+?)\u201d")
TAG = re.compile(r"\[([a-z]\d+)\]")


def one_offs(seed: int) -> list:
    """(tag, local wall time) for the seeded one-offs, an hour into the week to an hour before its end."""
    rng = random.Random(seed)
    span = int((WEEK - timedelta(hours=2)).total_seconds() // 60)
    walls = [START.replace(tzinfo=None) + timedelta(hours=1, minutes=rng.randrange(span)) for _ in range(ONE_OFFS)]
    return [(f"o{n}", wall) for n, wall in enumerate(sorted(walls))]


# --- the soul's side (--child) ---------------------------------------------------------------


class Events:
    """Lines of JSON appended and flushed at once: what a SIGKILL cannot take back."""

    def __init__(self, path: Path):
        self.file = open(path, "a", encoding="utf-8")

    def add(self, kind: str, at: float, **fields) -> None:
        self.file.write(json.dumps({"kind": kind, "at": at, **fields}) + "\n")
        self.file.flush()


class BenchBody(LoopbackServer):
    """status, speak, express; every /speak stamped with the soul's virtual time."""

    def __init__(self, clock, events: Events):
        self.clock, self.events = clock, events

    def endpoints(self) -> dict:
        return {name: f"http://127.0.0.1:{self.port}/{name}" for name in ("status", "speak", "express")}

    def make_app(self):
        async def status(request):
            return {"online": True}

        async def speak(request):
            self.events.add("spoke", self.clock.time(), text=request["text"])
            return {}

        async def express(request):
            return {}

        return make_body_app({"status": status, "speak": speak, "express": express})


class BenchModel:
    """The soul's mind, scripted: promises at its first waking, says what is due, fails for a stretch."""

    provider, model_id = "bench", "bench-model"

    def __init__(self, clock, events: Events, seed: int, first_process: bool):
        self.clock, self.events, self.rng = clock, events, random.Random(seed + 1)
        self.to_promise = []
        if first_process:
            self.to_promise = [{"words": f"[{t}] {w}", "at": at, "repeat": r} for t, r, at, w in REPEATING]
            self.to_promise += [{"words": f"[{t}] one-off", "at": f"{w:%Y-%m-%d %H:%M}"} for t, w in one_offs(seed)]
        self.ids = 0
        self.may_hang = first_process  # the first process is the one killed
        self.hang = asyncio.Event()

    def _call(self, name, **arguments) -> ToolCall:
        self.ids += 1
        return ToolCall(f"bench_{self.ids:05d}", name, arguments)

    async def complete(self, system, messages, tools=None, **options) -> Reply:
        self.clock.advance(CALL_S)
        now = self.clock.now()
        if DOWN[0] <= now < DOWN[1]:
            raise ModelError("overloaded (the bench's stretch of failure)", status=529, retryable=True)
        last = " ".join(block.text for block in messages[-1].content if isinstance(block, TextBlock))
        if EN["summary_instruction"][:40] in last:
            return Reply(Message("assistant", [TextBlock("I kept my promises.")]), "end_turn", Usage(), self.model_id)
        due = list(dict.fromkeys(DUE.findall(last)))  # after a crash its waking's snapshot is shown twice
        if due and now >= KILL_AFTER and self.may_hang and not self.hang.is_set():
            self.hang.set()
            self.events.add("kill_me", self.clock.time())
            await asyncio.Event().wait()  # hangs mid-turn until the bench kills the process
        calls = [self._call("speak", text=f"Ana, it is time: {words}") for words in due]
        if self.to_promise:
            batch, self.to_promise = self.to_promise[:20], self.to_promise[20:]
            calls += [self._call("remind", **promise) for promise in batch]
        elif ADD_AFTER[0] <= now < ADD_AFTER[1] and last:  # (a waking's snapshot, not its tools' answers)
            minutes = self.rng.randrange(5, 300)
            words = f"[a{int(now.timestamp())}] after {minutes} min"
            self.events.add("asked", self.clock.time(), tag=words[1:].split("]")[0], after_s=minutes * 60)
            calls.append(self._call("remind", words=words, after=f"{minutes} min"))
        if not self.to_promise:
            calls.append(self._call("sleep", minutes=180))
        return Reply(Message("assistant", calls), "tool_use", Usage(input_tokens=1000, output_tokens=50), self.model_id)


def soul_config(folder: Path, body: BenchBody) -> dict:
    raw = {
        "soulDir": str(folder / "soul"),
        "timezone": "Europe/Berlin",
        "body": {"name": "the bench body", "endpoints": body.endpoints()},
        "persona": {"name": "Pip", "human": "Ana"},
        "nudge": {"port": 0},
        "model": {"retries": 2, "keepWarm": False},
        "loop": {"maxSleepMinutes": 180, "defaultSleepMinutes": 180, "nightMaxSleepMinutes": 480, "consolidate": False},
    }
    cfg, _warnings = config.from_dict(raw)
    return cfg


async def child(folder: Path, start: datetime, seed: int, first_process: bool) -> None:
    clock = StepClock(start.astimezone(UTC), end=(START + WEEK + RUN_PAST).astimezone(UTC))
    events = Events(folder / "events.jsonl")
    async with BenchBody(clock, events) as body:
        soul = build_soul(soul_config(folder, body), clock=clock, model=BenchModel(clock, events, seed, first_process))
        seen = {"called": 0}

        def waking(soul, waking):
            called = soul.reminders.wakings > seen["called"]
            seen["called"] = soul.reminders.wakings
            events.add("waking", clock.time(), called=called, due=[d.words for d in waking.why.due])

        soul.hooks.on_waking.append(waking)
        living = asyncio.create_task(soul.live())
        await clock.over.wait()
        living.cancel()
        try:
            await living
        except asyncio.CancelledError:
            pass
        await close_soul(soul)


# --- the bench's side --------------------------------------------------------------------------


def expected(events: list, seed: int) -> list:
    """(tag, due epoch) of every occurrence due in the week, from the plan itself."""
    begin, end = START.timestamp() + 60, (START + WEEK).timestamp()
    out = []
    for tag, repeat, at, _words in REPEATING:
        clock = at.split()[-1]
        hour, minute = map(int, clock.split(":"))
        for day in range(-1, 9):
            date = START.date() + timedelta(days=day)
            if repeat == "weekdays" and date.weekday() >= 5:
                continue
            if repeat == "weekly" and date.weekday() != 1:
                continue
            due = localize(datetime(date.year, date.month, date.day, hour, minute), TZ).timestamp()
            if begin <= due < end:
                out.append((tag, due))
    out += [(tag, localize(wall, TZ).timestamp()) for tag, wall in one_offs(seed)]
    out += [(e["tag"], e["at"] + e["after_s"]) for e in events if e["kind"] == "asked" and e["at"] + e["after_s"] < end]
    return sorted(out, key=lambda item: item[1])


def run_child(folder: Path, start: datetime, seed: int, first: bool, log) -> subprocess.Popen:
    command = [sys.executable, str(Path(__file__).resolve()), "--child", str(folder), "--start", start.isoformat()]
    command += ["--seed", str(seed)] + (["--first"] if first else [])
    return subprocess.Popen(command, cwd=ROOT, stdout=log, stderr=log)


def read_events(path: Path) -> list:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def percentile(values: list, q: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]


def bench(folder: Path, seed: int) -> int:
    began = time.monotonic()
    log = open(folder / "soul.log", "ab")
    first = run_child(folder, START, seed, True, log)
    kill_at = None
    while kill_at is None and first.poll() is None:
        kill_at = next((e["at"] for e in read_events(folder / "events.jsonl") if e["kind"] == "kill_me"), None)
        time.sleep(0.05)
    if kill_at is None:
        print(f"the first process ended before its kill (code {first.returncode}); see {folder / 'soul.log'}")
        return 1
    first.kill()  # SIGKILL, mid-turn
    first.wait()
    restart = datetime.fromtimestamp(kill_at + CRASH_GAP_S, UTC)
    second = run_child(folder, restart, seed, False, log)
    if second.wait(timeout=900) != 0:
        print(f"the second process failed (code {second.returncode}); see {folder / 'soul.log'}")
        return 1
    return report(folder, seed, kill_at, time.monotonic() - began)


def report(folder: Path, seed: int, kill_at: float, wall_s: float) -> int:
    events = read_events(folder / "events.jsonl")
    due = expected(events, seed)
    spoken = [(e["at"], TAG.findall(e["text"])) for e in events if e["kind"] == "spoke"]
    used, late, missed = set(), [], []
    for tag, when in due:
        found = next(
            (i for i, (at, tags) in enumerate(spoken) if i not in used and tag in tags and at >= when - 1), None
        )
        if found is None:
            missed.append((tag, when))
            continue
        used.add(found)
        late.append(spoken[found][0] - when)
    said_again = sum(1 for i, (_at, tags) in enumerate(spoken) if tags and i not in used)
    wakings = [e for e in events if e["kind"] == "waking"]
    called = sum(1 for e in wakings if e["called"])
    due_times = len({round(when) for _tag, when in due})
    kept = json.loads((folder / "soul" / "REMINDERS.json").read_text())
    local = lambda seconds: datetime.fromtimestamp(seconds, TZ).strftime("%a %H:%M:%S")  # noqa: E731
    print(f"a week in Europe/Berlin from {START:%Y-%m-%d %H:%M} (the clocks went back on Sun 2026-10-25)")
    print(f"model down {DOWN[0]:%a %H:%M}-{DOWN[1]:%H:%M}; kill -9 at {local(kill_at)}, back {CRASH_GAP_S:g} s later")
    print(
        f"reminders promised: {len(REPEATING)} repeating, {ONE_OFFS} at a time, {sum(e['kind'] == 'asked' for e in events)} after a duration"
    )
    print(f"said more than once: {said_again}")
    print(f"wakings: {len(wakings)}; called by reminders: {called}; distinct due times: {due_times}")
    print(f"the soul's own counts (REMINDERS.json): delivered={kept['delivered']} missed={kept['missed']}")
    for tag, when in missed[:10]:
        print(f"  missed: {tag} due {local(when)}")
    worst = sorted(late)[-3:]
    print(f"latest three: {', '.join(f'{x:.0f} s' for x in worst)}; wall time {wall_s:.1f} s")
    print(
        f"reminders_due={len(due)} delivered={len(late)} missed={len(missed)} late_p50_s={percentile(late, 0.5):.1f} "
        f"late_p99_s={percentile(late, 0.99):.1f} extra_wakings={max(0, called - due_times)}"
    )
    return 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int, default=33)
    parser.add_argument("--keep", metavar="DIR", help="keep the soul's folder and the events here")
    parser.add_argument("--child", metavar="DIR", help=argparse.SUPPRESS)
    parser.add_argument("--start", help=argparse.SUPPRESS)
    parser.add_argument("--first", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        asyncio.run(child(Path(args.child), datetime.fromisoformat(args.start), args.seed, args.first))
        return 0
    if args.keep:
        folder = Path(args.keep)
        if folder.exists() and any(folder.iterdir()):
            print(f"--keep {folder}: the folder is not empty; give a new or empty one")
            return 2
        folder.mkdir(parents=True, exist_ok=True)
        return bench(folder, args.seed)
    with tempfile.TemporaryDirectory(prefix="bench-reminders-") as folder:
        return bench(Path(folder), args.seed)


if __name__ == "__main__":
    sys.exit(main())
