"""Reminders in a living soul (host/soul/reminders/, host/soul/tools/reminders.py).

A real soul (build_soul, every part attached) on host/clocks.py's StepClock, so hours pass at
once and exactly; its model is the real anthropic SDK talking to the fake Messages API, or the
brainstem; its body is a real Body Protocol server on loopback (host/fakes/soul_body.py).
The tools' words are checked against en.py's, so a rewording there does not break the tests.
"""

import asyncio
import json
from datetime import UTC, date, datetime, timedelta
from zoneinfo import ZoneInfo

import aiohttp

from soulstack.clocks import StepClock
from soulstack.fakes.anthropic_api import FakeAnthropic, error, message, tool_use
from soulstack.fakes.soul_body import RecordingBody
from soulstack.llm.brainstem import reminder_sentence
from soulstack.llm.types import ToolCall
from soulstack.soul.prompts import texts
from soulstack.soul.reminders.schedule import following
from soulstack.soul.run import build_soul, close_soul
from tests.helpers import until
from tests.soul.helpers import Running, anthropic_model, make_cfg, texts_of

EN = texts("en").TEXT
BERLIN = ZoneInfo("Europe/Berlin")
DUE_LINE = "A reminder you promised is due now"  # en.py's TEXT["reminders"]["due"] opens so


def call(name, **arguments):
    return {"type": "tool_use", "id": f"toolu_{name}_{id(arguments)}", "name": name, "input": arguments}


def speaks_when_due(words="Ana, it is time: call your mother.", sleep=60):
    """The model: at a waking that shows a reminder due, it says it and sleeps; otherwise it sleeps."""

    def answer(body):
        last = texts_of(body["messages"][-1])
        if DUE_LINE in last:
            return message(call("speak", text=words), call("sleep", minutes=sleep))
        return tool_use("sleep", {"minutes": sleep})

    return answer


def soul_for(tmp_path, body, clock, model=None, tz="Europe/Berlin", **overrides):
    cfg = make_cfg(tmp_path, body, timezone=tz, **overrides)
    return build_soul(cfg, clock=clock, model=model)


async def live_until_over(soul, clock):
    task = asyncio.create_task(soul.live())
    try:
        await asyncio.wait_for(clock.over.wait(), 60)
    finally:
        task.cancel()
        try:
            await task
        except asyncio.CancelledError:
            pass
        await close_soul(soul)


def stored(tmp_path) -> dict:
    return json.loads((tmp_path / "soul" / "REMINDERS.json").read_text())


async def use(soul, name, **arguments):
    result, ok = await soul.toolbox.run(soul, ToolCall("t1", name, arguments))
    return result.content[0].text, ok


# --- the tools --------------------------------------------------------------------------


async def test_remind_echoes_the_local_time_and_refuses_past_or_unreadable_times(tmp_path):
    tuesday = datetime(2026, 12, 1, 12, 50, tzinfo=BERLIN)  # a Tuesday, 12:50 in Berlin
    async with RecordingBody() as body:
        soul = soul_for(tmp_path, body, StepClock(tuesday.astimezone(UTC)))
        answer, ok = await use(soul, "remind", words="call your mother", at="15:00")
        assert ok and "Tuesday 15:00, in 2 h 10 min" in answer and "call your mother" in answer
        answer, ok = await use(soul, "remind", words="check the oven", after="10 min", who="Ben")
        assert ok and "Tuesday 13:00, in 10 min" in answer and "Ben" in answer
        answer, ok = await use(soul, "remind", words="water the plants", at="08:00", repeat="daily")
        assert ok and "Wednesday 08:00" in answer and EN["reminders"]["repeat_daily"] in answer

        refusals = [
            ({"at": "12:00"}, EN["reminders"]["past"].format(value="12:00")),
            ({"at": "half past three"}, EN["reminders"]["bad_at"].format(value="half past three")),
            ({"after": "a while"}, EN["reminders"]["bad_after"].format(value="a while")),
            ({"at": "2026-02-30 10:00"}, EN["reminders"]["bad_at"].format(value="2026-02-30 10:00")),
            ({"at": "15:00", "after": "1 h"}, EN["reminders"]["both"]),
            ({}, EN["reminders"]["neither"]),
            ({"at": "15:00", "repeat": "hourly"}, EN["reminders"]["bad_repeat"]),
        ]
        for arguments, refusal in refusals:
            answer, ok = await use(soul, "remind", words="something", **arguments)
            assert not ok and answer == refusal, arguments
        answer, ok = await use(soul, "remind", words="   ", after="5 min")
        assert not ok and answer == EN["reminders"]["no_words"]

        listing, ok = await use(soul, "reminders")
        lines = listing.splitlines()
        assert ok and len(lines) == 3 and "Ben" in lines[0] and "check the oven" in lines[0]
        assert "Tuesday 15:00" in lines[1] and "Wednesday 08:00" in lines[2]

        answer, ok = await use(soul, "cancel_reminder", id=2)
        assert ok and answer == EN["reminders"]["cancelled"].format(id=2, words="check the oven")
        answer, ok = await use(soul, "cancel_reminder", id=2)
        assert not ok and answer == EN["reminders"]["cancel_none"].format(id=2)
        kept = stored(tmp_path)
        assert [r["words"] for r in kept["reminders"]] == ["call your mother", "water the plants"]
        assert (tmp_path / "soul" / "REMINDERS.json").stat().st_mode & 0o777 == 0o600  # a person's words


async def test_weekdays_skip_the_weekend_and_weekly_keeps_its_day(tmp_path):
    saturday = datetime(2026, 12, 5, 9, 0, tzinfo=BERLIN)
    async with RecordingBody() as body:
        soul = soul_for(tmp_path, body, StepClock(saturday.astimezone(UTC)))
        answer, ok = await use(soul, "remind", words="stand-up", at="08:00", repeat="weekdays")
        assert ok and "Monday 08:00, in 1 d 23 h" in answer and EN["reminders"]["repeat_weekdays"] in answer
        answer, ok = await use(soul, "remind", words="the bins", at="friday 19:00", repeat="weekly")
        assert ok and "Friday 19:00" in answer
        store = soul.reminders.store
        weekdays, weekly = store.reminders
        store.done(weekdays, "delivered", datetime(2026, 12, 7, 8, 0, 3, tzinfo=BERLIN).timestamp())
        store.done(weekly, "delivered", datetime(2026, 12, 11, 19, 0, 3, tzinfo=BERLIN).timestamp())
        assert [r.wall for r in store.reminders] == ["2026-12-08T08:00:00", "2026-12-18T19:00:00"]
        assert store.delivered == 2 and store.missed == 0
    assert following(datetime(2026, 12, 11, 8, 0), "weekdays") == datetime(2026, 12, 14, 8, 0)  # Friday -> Monday


# --- on time ----------------------------------------------------------------------------


async def test_the_sleep_ends_at_the_reminder_whatever_the_clamp_and_the_soul_says_it(tmp_path):
    night = datetime(2026, 12, 1, 23, 0, tzinfo=BERLIN)  # night: sleeps may last 8 hours
    clock = StepClock(night.astimezone(UTC), end=night.astimezone(UTC) + timedelta(hours=3))
    async with RecordingBody() as body, FakeAnthropic() as fake:
        fake.reply(message(call("remind", words="take your pills", after="25 min"), call("sleep", minutes=480)))
        fake.default = speaks_when_due("Ana, your pills, please.", sleep=480)
        soul = soul_for(
            tmp_path,
            body,
            clock,
            anthropic_model(fake),
            loop={"nightStartHour": 22, "nightEndHour": 7, "nightMaxSleepMinutes": 480},
        )
        await live_until_over(soul, clock)
    assert body.spoken == ["Ana, your pills, please."]
    due_request = next(b for b in fake.bodies if DUE_LINE in texts_of(b["messages"][-1]))
    snapshot = texts_of(due_request["messages"][-1])
    assert "take your pills" in snapshot and "for Ana" in snapshot
    assert snapshot.index(DUE_LINE) < snapshot.index("It is ")  # what is due comes first
    kept = stored(tmp_path)
    assert kept["delivered"] == 1 and kept["missed"] == 0 and kept["reminders"] == []
    assert kept["recent"][0]["late_s"] <= 30  # the 8-hour sleep ended at 23:25, not at 07:00
    assert soul.reminders.wakings == 1 and soul.wakings == 2  # one waking for it, no more


async def test_a_daily_0800_stays_0800_across_both_dst_changes(tmp_path):
    for start_day in (datetime(2026, 3, 27, 12, 0, tzinfo=BERLIN), datetime(2026, 10, 23, 12, 0, tzinfo=BERLIN)):
        folder = tmp_path / start_day.strftime("%m")
        start = start_day.astimezone(UTC)
        clock = StepClock(start, end=start + timedelta(days=3))
        async with RecordingBody() as body:
            # The brainstem (no model): the promise is kept all the same. Long sleeps: few wakings.
            soul = soul_for(folder, body, clock, loop={"defaultSleepMinutes": 240, "maxSleepMinutes": 240})
            answer, ok = await use(soul, "remind", words="water the plants", at="08:00", repeat="daily")
            assert ok
            said = []
            soul.hooks.on_tool_result.append(
                lambda soul, event: said.append(soul.local_now()) if event.name == "speak" and event.ok else None
            )
            await live_until_over(soul, clock)
        sentence = reminder_sentence(EN["brainstem"], "water the plants", "Ana")
        assert body.spoken == [sentence] * 3
        assert [moment.strftime("%d %H:%M") for moment in said] == [
            (start_day + timedelta(days=n)).strftime("%d 08:00") for n in range(1, 4)
        ]
        offsets = {moment.utcoffset() for moment in said}
        assert offsets == {timedelta(hours=1), timedelta(hours=2)}  # the change happened in between
        assert stored(folder)["delivered"] == 3


# --- kept without a mind ----------------------------------------------------------------


async def test_with_the_provider_down_the_brainstem_says_it_in_a_fixed_sentence(tmp_path):
    start = datetime(2026, 12, 1, 9, 0, tzinfo=BERLIN).astimezone(UTC)
    clock = StepClock(start, end=start + timedelta(hours=2))
    async with RecordingBody() as body, FakeAnthropic() as fake:
        fake.reply(message(call("remind", words="call the plumber", after="40 min"), call("sleep", minutes=60)))
        fake.default = error(529, "overloaded")  # from here on the API is down
        soul = soul_for(tmp_path, body, clock, anthropic_model(fake))
        await live_until_over(soul, clock)
    sentence = reminder_sentence(EN["brainstem"], "call the plumber", "Ana")
    assert sentence in body.spoken
    kept = stored(tmp_path)
    assert kept["delivered"] == 1 and kept["recent"][0]["late_s"] <= 30  # the retries' backoff included


async def test_a_reminder_the_model_said_before_it_failed_is_not_said_again_by_the_brainstem(tmp_path):
    start = datetime(2026, 12, 1, 9, 0, tzinfo=BERLIN).astimezone(UTC)
    clock = StepClock(start, end=start + timedelta(minutes=30))
    async with RecordingBody() as body, FakeAnthropic() as fake:
        fake.reply(message(call("remind", words="call the plumber", after="10 min"), call("sleep", minutes=60)))
        said_then_down = lambda request: (  # noqa: E731
            tool_use("speak", {"text": "Ana, the plumber!"})
            if DUE_LINE in texts_of(request["messages"][-1])
            else error(529, "overloaded")
        )
        fake.default = said_then_down
        soul = soul_for(tmp_path, body, clock, anthropic_model(fake))
        await live_until_over(soul, clock)
    assert body.spoken == ["Ana, the plumber!"]  # the brainstem that stood in said nothing more
    assert stored(tmp_path)["delivered"] == 1


async def test_a_reminder_cancelled_in_its_own_waking_is_neither_counted_nor_retried(tmp_path):
    start = datetime(2026, 12, 1, 9, 0, tzinfo=BERLIN).astimezone(UTC)
    clock = StepClock(start, end=start + timedelta(minutes=40))
    async with RecordingBody() as body, FakeAnthropic() as fake:
        fake.reply(message(call("remind", words="water the plants", after="10 min"), call("sleep", minutes=60)))
        cancels = lambda request: (  # noqa: E731
            message(
                call("cancel_reminder", id=1), call("speak", text="Never mind the plants."), call("sleep", minutes=60)
            )
            if DUE_LINE in texts_of(request["messages"][-1])
            else tool_use("sleep", {"minutes": 60})
        )
        fake.default = cancels
        soul = soul_for(tmp_path, body, clock, anthropic_model(fake))
        await live_until_over(soul, clock)
    assert body.spoken == ["Never mind the plants."]
    kept = stored(tmp_path)
    assert kept["reminders"] == [] and kept["delivered"] == 0 and kept["missed"] == 0


async def test_with_the_budget_spent_the_brainstem_says_it_and_the_model_is_not_asked(tmp_path):
    start = datetime(2026, 12, 1, 9, 0, tzinfo=BERLIN).astimezone(UTC)
    clock = StepClock(start, end=start + timedelta(hours=2))
    async with RecordingBody() as body, FakeAnthropic() as fake:
        fake.reply(message(call("remind", words="stretch your legs", after="30 min"), call("sleep", minutes=20)))
        fake.default = speaks_when_due("the model's words", sleep=20)
        soul = soul_for(
            tmp_path, body, clock, anthropic_model(fake), budget={"maxWakesPerDay": 1, "hungrySleepMinutes": 240}
        )
        await live_until_over(soul, clock)
    sentence = reminder_sentence(EN["brainstem"], "stretch your legs", "Ana")
    assert body.spoken == [sentence]  # said by the brainstem, not the model
    assert not any(DUE_LINE in texts_of(b["messages"][-1]) for b in fake.bodies)
    assert stored(tmp_path)["recent"][0]["late_s"] <= 30  # the hungry 4-hour sleep ended at its time


# --- honest delivery --------------------------------------------------------------------


async def test_a_failed_speak_is_retried_with_an_alarm_naming_it_and_said_once_the_body_mends(tmp_path):
    start = datetime(2026, 12, 1, 9, 0, tzinfo=BERLIN).astimezone(UTC)
    broken_until = start + timedelta(minutes=20)
    clock = StepClock(start, end=broken_until)
    async with RecordingBody(fail={"speak": 503}) as body, FakeAnthropic() as fake:
        fake.reply(message(call("remind", words="feed the cat", after="10 min"), call("sleep", minutes=60)))
        fake.default = speaks_when_due("Ana, the cat is hungry.")
        soul = soul_for(tmp_path, body, clock, anthropic_model(fake))
        async with Running(soul) as running:
            await asyncio.wait_for(clock.over.wait(), 60)
            async with aiohttp.ClientSession() as http:
                async with http.get(running.url + "/health") as response:
                    health = await response.json()
        tries = [r for r in body.received if r[0] == "speak (failed)"]
        # its waking's speak, then the body asked straight away and after 10, 20, 40, 80, 120... s
        assert 5 <= len(tries) <= 12
        assert health["reminders"]["delivered"] == 0 and health["reminders"]["missed"] == 0
        alarm = next(a for a in health["alarms"] if a["code"] == "reminder_undelivered")
        assert "feed the cat" in alarm["message"] and "Tuesday 09:10" in alarm["message"]
        assert "the speak device is broken" in alarm["message"]  # the body's own reason
        assert health["reminders"]["retrying"][0]["words"] == "feed the cat"

        # The soul starts again (its retries are in REMINDERS.json) and the body has mended.
        del body.fail["speak"]
        clock = StepClock(broken_until, end=broken_until + timedelta(minutes=10))
        await live_until_over(soul_for(tmp_path, body, clock, anthropic_model(fake)), clock)
    assert body.spoken == [reminder_sentence(EN["brainstem"], "feed the cat", "Ana")]
    kept = stored(tmp_path)
    assert kept["delivered"] == 1 and kept["reminders"] == []
    assert "my body said a reminder" in (tmp_path / "soul" / "DIARY.md").read_text()


async def test_a_reminder_the_body_said_while_the_soul_slept_is_known_to_the_echo_guard(tmp_path):
    start = datetime(2026, 12, 1, 9, 0, tzinfo=BERLIN).astimezone(UTC)
    said_at = start + timedelta(minutes=11)
    clock = StepClock(start, end=said_at)
    async with RecordingBody(fail={"speak": 503}) as body:
        soul = soul_for(tmp_path, body, clock)
        await use(soul, "remind", words="water the plants", after="10 min")
        await live_until_over(soul, clock)
        assert stored(tmp_path)["reminders"][0]["attempts"] >= 1  # left to be retried while asleep

        del body.fail["speak"]  # the body mends; the soul starts again and sleeps, held
        clock = StepClock(said_at)
        clock.hold(after=1)  # the sleep to the retry passes; the next is held
        soul = soul_for(tmp_path, body, clock, hears_itself=True)
        async with Running(soul) as running:
            await until(lambda: body.spoken)
            assert body.spoken == [reminder_sentence(EN["brainstem"], "water the plants", "Ana")]
            # Its microphone hears its speaker, and speech-to-text made it words again: no person's words.
            async with aiohttp.ClientSession() as http:
                heard = {"words": "Ana, time to water the plants"}
                async with http.post(running.url + "/nudge", json=heard) as response:
                    assert (response.status, await response.json()) == (202, {"queued": False, "echo": True})
            clock.release()
        assert not soul.inbox.entries


async def test_a_reminder_never_said_is_missed_after_the_bound_and_health_names_it(tmp_path):
    start = datetime(2026, 12, 1, 9, 0, tzinfo=BERLIN).astimezone(UTC)
    clock = StepClock(start, end=start + timedelta(hours=2))
    async with RecordingBody(fail={"speak": 500}) as body:
        soul = soul_for(tmp_path, body, clock)
        await use(soul, "remind", words="lock the door", after="5 min", repeat="daily")
        await live_until_over(soul, clock)
        health = soul.reminders.health()
    assert health["missed"] == 1 and health["delivered"] == 0
    assert any(a["code"] == "reminder_missed" and "lock the door" in a["message"] for a in health["alarms"])
    kept = stored(tmp_path)
    (daily,) = kept["reminders"]  # the repeat rolled on to tomorrow's time
    assert daily["wall"].endswith("09:05:00") and daily["wall"].startswith("2026-12-02") and daily["attempts"] == 0


async def test_reminders_are_backed_up_with_the_life_files_and_a_damaged_file_falls_back_to_its_backup(tmp_path):
    start = datetime(2026, 12, 1, 9, 0, tzinfo=BERLIN)
    async with RecordingBody() as body:
        soul = soul_for(tmp_path, body, StepClock(start.astimezone(UTC)))
        await use(soul, "remind", words="call the dentist", at="2026-12-02 10:00")
        soul.life.backup_daily(start.date())
        backup = tmp_path / "soul" / "backups" / "2026-12-01" / "REMINDERS.json"
        assert json.loads(backup.read_text())["reminders"][0]["words"] == "call the dentist"

        path = tmp_path / "soul" / "REMINDERS.json"
        path.write_text('{"reminders": [{"id": 1, "wor')  # torn by something other than our atomic write
        again = soul_for(tmp_path, body, StepClock(start.astimezone(UTC)))
        assert [r.words for r in again.reminders.store.reminders] == ["call the dentist"]
        assert (tmp_path / "soul" / "REMINDERS.json.damaged").read_text().startswith('{"reminders"')
        assert any("REMINDERS.json cannot be read" in problem for problem in again.life.problems)


async def test_the_backups_promises_replace_the_damage_and_no_damage_becomes_a_backup(tmp_path):
    """A trial's soul lost a reminder on its second start of the day: the damaged file stayed, and that
    day's backup copied it, so the next start found no good backup."""
    start = datetime(2026, 12, 1, 9, 0, tzinfo=BERLIN)
    async with RecordingBody() as body:
        soul = soul_for(tmp_path, body, StepClock(start.astimezone(UTC)))
        await use(soul, "remind", words="water the plants", at="2026-12-03 10:00")
        soul.life.backup_daily(start.date())
        path = tmp_path / "soul" / "REMINDERS.json"
        path.write_text("{broken")
        soul.life.backup_daily(date(2026, 12, 2))  # the next day's backup, before the soul reads the file
        assert not (tmp_path / "soul" / "backups" / "2026-12-02" / "REMINDERS.json").exists()
        again = soul_for(tmp_path, body, StepClock(start.astimezone(UTC)))
        assert [r.words for r in again.reminders.store.reminders] == ["water the plants"]
        assert [r["words"] for r in json.loads(path.read_text())["reminders"]] == ["water the plants"]
        assert (tmp_path / "soul" / "REMINDERS.json.damaged").read_text() == "{broken"
        third = soul_for(tmp_path, body, StepClock(start.astimezone(UTC)))  # a second start that day
        assert [r.words for r in third.reminders.store.reminders] == ["water the plants"]
        assert not any("REMINDERS.json" in problem for problem in third.life.problems)


async def test_a_file_with_fields_of_the_wrong_type_is_damage_and_its_backup_is_used(tmp_path):
    start = datetime(2026, 12, 1, 9, 0, tzinfo=BERLIN)
    async with RecordingBody() as body:
        soul = soul_for(tmp_path, body, StepClock(start.astimezone(UTC)))
        await use(soul, "remind", words="call the dentist", at="2026-12-02 10:00")
        soul.life.backup_daily(start.date())
        path = tmp_path / "soul" / "REMINDERS.json"
        good = json.loads(path.read_text())
        damaged = [{"next_id": None}, {"delivered": "12"}, {"missed": None}, {"next_id": True}, {"recent": "x"}]
        damaged += [{"reminders": [{**good["reminders"][0], "due": "tomorrow"}]}]
        damaged += [{"reminders": [{**good["reminders"][0], "wall": "not a time"}]}, {"reminders": None}]
        for change in damaged:
            path.write_text(json.dumps({**good, **change}))
            again = soul_for(tmp_path, body, StepClock(start.astimezone(UTC)))
            assert [r.words for r in again.reminders.store.reminders] == ["call the dentist"], change
            assert again.reminders.store.next_id == good["next_id"], change
            assert any("REMINDERS.json cannot be read" in problem for problem in again.life.problems), change
            again.reminders.health()  # it reads what it loaded without a crash


def test_times_the_clock_change_skips_or_repeats_and_the_durations_it_reads():
    from soulstack.soul.reminders.when import parse_after, resolve

    before = datetime(2026, 3, 28, 12, 0, tzinfo=BERLIN)
    skipped = resolve(before, "2026-03-29 02:30", None, None)  # 02:00 jumps to 03:00 that night
    assert skipped.strftime("%H:%M %z") == "03:30 +0200"
    twice = resolve(datetime(2026, 10, 24, 12, 0, tzinfo=BERLIN), "2026-10-25 02:30", None, None)
    assert twice.strftime("%H:%M %z") == "02:30 +0200"  # the first of the two
    assert [parse_after(text).total_seconds() for text in ("2 h 10 min", "1h30m", "45 s", "90", "1 day")] == [
        7800,
        5400,
        45,
        5400,
        86400,
    ]


async def test_a_soul_that_speaks_chinese_echoes_and_reminds_in_chinese(tmp_path):
    zh = texts("zh").TEXT
    tuesday = datetime(2026, 12, 1, 12, 50, tzinfo=BERLIN)
    clock = StepClock(tuesday.astimezone(UTC), end=tuesday.astimezone(UTC) + timedelta(hours=3))
    async with RecordingBody() as body:
        soul = soul_for(tmp_path, body, clock, persona={"language": "zh", "human": "小明"})
        answer, ok = await use(soul, "remind", words="给妈妈打电话", at="15:00")
        assert ok and "星期二 15:00，2小时10分钟后" in answer
        await live_until_over(soul, clock)  # the brainstem says it, in the soul's language
    assert body.spoken == [reminder_sentence(zh["brainstem"], "给妈妈打电话", "小明")]
