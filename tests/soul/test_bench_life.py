"""tools/bench-life counts every simulated day: `--days 2` end to end (its last line sums both days'
rows), the per-day accounting on hand-made calls across midnight (tools/bench_life_tally.py), and the
Player's nightly consolidation (tools/bench_life_player.py)."""

import re
import subprocess
from datetime import datetime, timedelta, UTC

import pytest

from tools import bench_life_player as play, bench_life_tally as tally
from soulstack.soul.prompts import texts
from tests.helpers import ROOT

EN = texts("en").TEXT  # the English words (host/soul/prompts/en.py)

DAY_ROW = re.compile(
    r"^  (\d{4}-\d{2}-\d{2}) +(\d+) +(\d+) +(\d+) +(\d+) +([\d,]+) +([\d,]+) +([\d,]+) +([\d,]+)"
    r" +([\d,]+) +([\d,]+) +(\d+) +(\d+) +(\d+\.\d{4})$"
)


@pytest.mark.timeout(600)
def test_days_2_prints_two_day_rows_and_its_last_line_sums_them():
    run = subprocess.run(
        [str(ROOT / "tools" / "bench-life"), "--days", "2"], capture_output=True, text=True, timeout=580, check=False
    )
    assert run.returncode == 0, run.stderr[-3000:]
    lines = run.stdout.splitlines()
    rows = [m.groups() for m in map(DAY_ROW.match, lines) if m]
    assert [row[0] for row in rows] == ["2025-03-10", "2025-03-11"]
    assert all(int(row[1]) > 30 and int(row[2]) >= int(row[1]) for row in rows)  # wakings, calls: a real day each
    last = dict(re.findall(r"(\w+)=(\S+)", lines[-1]))
    assert set(last) == {"usd_per_day_2", "max_day_usd", "cache_read_write_ratio"}, lines[-1]
    usd = [row[-1] for row in rows]
    assert abs(float(last["usd_per_day_2"]) - sum(map(float, usd)) / 2) <= 0.0001 + 1e-9  # rows and total at 4 decimals
    assert last["max_day_usd"] == max(usd, key=float)
    read = sum(int(row[7].replace(",", "")) for row in rows)
    write = sum(int(row[8].replace(",", "")) for row in rows)
    assert last["cache_read_write_ratio"] == f"{read / write:.2f}"


def usage(input=0, output=0, read=0, write_1h=0, write_5m=0):
    return {
        "input_tokens": input,
        "output_tokens": output,
        "cache_read_input_tokens": read,
        "cache_creation_input_tokens": write_1h + write_5m,
        "cache_creation": {"ephemeral_5m_input_tokens": write_5m, "ephemeral_1h_input_tokens": write_1h},
    }


def test_per_day_puts_each_call_in_the_day_it_happens_in_and_prices_it_by_its_own_model():
    first = datetime(2025, 3, 10, tzinfo=UTC)
    at = lambda day, h, m, s: first + timedelta(days=day, hours=h, minutes=m, seconds=s)  # noqa: E731
    sonnet, haiku = "claude-sonnet-5-5", "claude-haiku-5-5"
    calls = [
        # A waking begun before midnight: its first call on day 1, its second past midnight on day 2.
        tally.Call(at(0, 23, 59, 55), sonnet, usage(100, 50, 10_000, write_1h=2_000)),
        tally.Call(at(1, 0, 0, 0), sonnet, usage(0, 20, 12_000, write_1h=600, write_5m=400)),
        tally.Call(at(1, 3, 0, 0), sonnet, usage(10, 1, 12_600), "keep-warm"),
        tally.Call(at(1, 9, 0, 0), haiku, usage(10, 10, 5_000)),  # the routine mind
        tally.Call(at(1, 14, 0, 0), sonnet, usage(0, 400), "fold"),  # a fold's summary (its prompt left out here)
        tally.Call(at(1, 23, 0, 0), sonnet, usage(0, 30, 9_000, write_1h=300), "consolidation"),
        tally.Call(at(2, 0, 0, 5), sonnet, usage(0, 10, 9_300)),  # past the end: the last waking's tail, day 2
    ]
    wakings = [first.date(), first.date(), (first + timedelta(days=1)).date()]
    rows = tally.per_day(calls, wakings, first.date(), 2, sonnet)
    assert [row["day"].isoformat() for row in rows] == ["2025-03-10", "2025-03-11"]
    one, two = rows
    assert (one["wakings"], one["calls"], two["wakings"], two["calls"]) == (2, 1, 1, 6)
    assert (two["keepWarm"], two["routine"], two["consolidations"], one["folds"], two["folds"]) == (1, 1, 1, 0, 1)
    assert (one["input"], one["output"], one["cacheRead"], one["cacheWrite"]) == (100, 50, 10_000, 2_000)
    assert (two["input"], two["output"], two["cacheRead"], two["cacheWrite"]) == (20, 471, 47_900, 1_300)
    assert (one["lastContext"], one["peakContext"]) == (12_100, 12_100)
    assert (two["lastContext"], two["peakContext"]) == (9_300, 13_000)
    # Sonnet 5.5 per million: input 2, output 10, cache read 0.10, write 2.50 (5 m) / 4.00 (1 h); Haiku 5.5: 0.10, 0.50, 0.01.
    assert one["usd"] == pytest.approx((100 * 2 + 50 * 10 + 10_000 * 0.10 + 2_000 * 4.00) / 1e6)
    day_two = [
        20 * 10 + 12_000 * 0.10 + 600 * 4.00 + 400 * 2.50,
        10 * 2 + 1 * 10 + 12_600 * 0.10,
        10 * 0.10 + 10 * 0.50 + 5_000 * 0.01,
        400 * 10,
        30 * 10 + 9_000 * 0.10 + 300 * 4.00,
        10 * 10 + 9_300 * 0.10,
    ]
    assert two["usd"] == pytest.approx(sum(day_two) / 1e6)
    assert two["keepWarmUsd"] == pytest.approx(day_two[1] / 1e6)
    totals = tally.totals(rows)
    assert totals["usd_per_day"] == pytest.approx((one["usd"] + two["usd"]) / 2)
    assert totals["max_day_usd"] == max(one["usd"], two["usd"])
    assert totals["cache_read_write_ratio"] == pytest.approx((10_000 + 47_900) / (2_000 + 1_300))
    assert tally.last_line(rows).startswith("usd_per_day_2=")
    with pytest.raises(ValueError):
        tally.per_day([tally.Call(first - timedelta(seconds=1), sonnet, usage(1, 1))], [], first.date(), 2, sonnet)


def snapshot(night=False):
    return {"type": "text", "text": "It is Monday, your local time is 23:10." + (" It is night." if night else "")}


def test_the_player_plays_the_consolidation_without_touching_the_waking_plans():
    from soulstack.clocks import StepClock

    player = play.Player(7, StepClock(play.START))
    plans, words = player.rng.getstate(), player.words.getstate()
    for instruction in (EN["consolidate"], EN["consolidate_resume"]):
        asked = [{"role": "user", "content": [snapshot(night=True), {"type": "text", "text": instruction}]}]
        kept = player.answer({"messages": asked})
        calls = [b for b in kept["content"] if b["type"] == "tool_use"]
        assert calls and calls[0]["name"] == "diary" and kept["stop_reason"] == "tool_use"
        assert {c["name"] for c in calls} <= {"diary", "keep_in_mind", "reflect", "set_aspiration"}
        results = [{"type": "tool_result", "tool_use_id": c["id"], "content": "done"} for c in calls]
        request = {
            "messages": asked
            + [{"role": "assistant", "content": kept["content"]}, {"role": "user", "content": results}]
        }
        assert play.request_kind(request) == "digest"
        digest = player.answer(request)
        assert [b["type"] for b in digest["content"]] == ["text"] and digest["stop_reason"] == "end_turn"
        assert 150 <= len(digest["content"][0]["text"].split()) <= 200
        # A keep-warm refresh after it is one word; the next waking is an ordinary one again.
        keep_warm = {"role": "user", "content": [{"type": "text", "text": EN["keep_warm"]}]}
        ping = {"messages": request["messages"] + [{"role": "assistant", "content": digest["content"]}, keep_warm]}
        assert play.request_kind(ping) == "keep-warm"
        morning = request["messages"] + [
            {"role": "assistant", "content": digest["content"]},
            {"role": "user", "content": [snapshot()]},
        ]
        assert play.request_kind({"messages": morning}) == "waking"
    assert player.rng.getstate() == plans and player.words.getstate() == words
    # Reflect or set_aspiration about once a week: over a year of nights, between 30 and 80 times.
    night = [{"role": "user", "content": [{"type": "text", "text": EN["consolidate"]}]}]
    rare = sum(
        any(b.get("name") in ("reflect", "set_aspiration") for b in player.answer({"messages": night})["content"])
        for _ in range(365)
    )
    assert 30 <= rare <= 80


def test_a_day_plans_the_same_whatever_the_days_before_it_did():
    from soulstack.clocks import StepClock

    def second_day_plans(wakings_on_the_first):
        clock = StepClock(play.START)
        player = play.Player(7, clock)
        for _ in range(wakings_on_the_first):
            player.answer({"messages": [{"role": "user", "content": [snapshot()]}]})
        clock.advance(24 * 3600)
        plans = []
        for _ in range(5):
            reply = player.answer({"messages": [{"role": "user", "content": [snapshot()]}]})
            calls = [(b["name"], b["input"]) for b in reply["content"] if b["type"] == "tool_use"]
            plans.append(calls + player.plan)
        return plans

    assert second_day_plans(3) == second_day_plans(8)
