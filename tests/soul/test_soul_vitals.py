"""Vitals: wakes and dollars per day in the soul's timezone, hunger and its sleep stretch, the cost meter."""

import json
import re
from datetime import datetime, timedelta, UTC
from zoneinfo import ZoneInfo

import pytest

from soulstack.llm.prices import DEFAULT_PRICES, price_for
from soulstack.llm.types import Usage
from soulstack.soul.metabolism.costs import Meter, prices_from_config
from soulstack.soul.metabolism.vitals import Vitals
from soulstack.soul.prompts import texts

EN = texts("en").TEXT  # the English words (host/soul/prompts/en.py)

SHANGHAI = ZoneInfo("Asia/Shanghai")
MORNING = datetime(2025, 3, 10, 8, 0, tzinfo=SHANGHAI)


def load(tmp_path, now=MORNING, **options):
    return Vitals.load(tmp_path, now, SHANGHAI, **options)


def wake(vitals, times, now=MORNING):
    for i in range(times):
        vitals.on_waking(now + timedelta(minutes=i), "its own alarm")


def test_wakes_are_counted_and_persisted(tmp_path):
    vitals = load(tmp_path)
    wake(vitals, 3)
    vitals.on_waking(MORNING + timedelta(minutes=5), "woken by: a face appeared")  # nudged wakings count too
    assert vitals.wakes_today(MORNING + timedelta(minutes=6)) == 4
    reloaded = load(tmp_path, MORNING + timedelta(minutes=7))
    assert reloaded.wakes == 4
    assert [w["reason"] for w in reloaded.wakings][-1] == "woken by: a face appeared"
    saved = json.loads((tmp_path / "VITALS.json").read_text())
    assert saved["day"] == "2025-03-10" and saved["wakes"] == 4


def test_day_rolls_over_at_midnight_in_the_souls_timezone(tmp_path):
    vitals = load(tmp_path)
    wake(vitals, 5)
    # 15:59 UTC is 23:59 in Shanghai: still the same day
    assert vitals.wakes_today(datetime(2025, 3, 10, 15, 59, tzinfo=UTC)) == 5
    # 16:00 UTC is midnight in Shanghai: a new day, although still March 10th in UTC
    new_day = datetime(2025, 3, 10, 16, 0, tzinfo=UTC)
    assert vitals.wakes_today(new_day) == 0
    assert vitals.day == "2025-03-11"
    assert vitals.history[-1]["day"] == "2025-03-10" and vitals.history[-1]["wakes"] == 5
    vitals.on_waking(new_day, "its own alarm")
    assert load(tmp_path, new_day).wakes == 1


def test_history_keeps_two_weeks(tmp_path):
    vitals = load(tmp_path)
    for day in range(20):
        vitals.on_waking(MORNING + timedelta(days=day), "its own alarm")
    assert len(vitals.history) == 14
    assert vitals.history[-1]["day"] == "2025-03-28"


@pytest.mark.parametrize("language", ["en", "zh"])
def test_hunger_felt_at_80_percent_and_starving_at_100(tmp_path, language):
    vitals = load(tmp_path, max_wakes_per_day=10)
    wake(vitals, 7)
    assert vitals.hunger(MORNING) == "fed" and vitals.felt(MORNING, texts(language)) is None
    wake(vitals, 1)
    assert vitals.hunger(MORNING) == "peckish"
    assert vitals.felt(MORNING, texts(language)) == texts(language).TEXT["hunger"][0]
    wake(vitals, 2)
    assert vitals.hunger(MORNING) == "starving"
    text = vitals.felt(MORNING, texts(language))
    assert text == texts(language).TEXT["hunger"][1] and not re.search(r"\d", text)


def test_starving_stretches_every_sleep_until_the_next_day(tmp_path):
    vitals = load(tmp_path, max_wakes_per_day=4, hungry_sleep_minutes=150)
    wake(vitals, 3)
    assert vitals.stretch_sleep(20, MORNING) == 20  # not yet
    wake(vitals, 1)
    assert vitals.stretch_sleep(20, MORNING) == 150
    assert vitals.stretch_sleep(2, MORNING) == 150
    assert vitals.stretch_sleep(400, MORNING) == 400  # never shortens a longer sleep
    tomorrow = MORNING + timedelta(days=1)
    assert vitals.stretch_sleep(20, tomorrow) == 20


def test_usd_budget_is_enforced_from_the_meter(tmp_path):
    vitals = load(tmp_path, max_wakes_per_day=1000, max_usd_per_day=1.0, hungry_sleep_minutes=90)
    vitals.on_waking(MORNING, "its own alarm")
    # claude-sonnet-4 input is $3 per million tokens: 100k = $0.30
    usd = vitals.on_model_call(MORNING, "claude-sonnet-4-20250514", Usage(input_tokens=100_000))
    assert usd == pytest.approx(0.30)
    assert vitals.hunger(MORNING) == "fed"
    vitals.on_model_call(MORNING, "claude-sonnet-4-20250514", Usage(input_tokens=200_000))
    assert vitals.hunger(MORNING) == "peckish"  # $0.90
    vitals.on_model_call(MORNING, "claude-sonnet-4-20250514", Usage(input_tokens=40_000))
    assert vitals.hunger(MORNING) == "starving"  # $1.02
    assert vitals.stretch_sleep(10, MORNING) == 90
    assert vitals.budget_state(MORNING)["usd"] == pytest.approx(1.02)


def test_meter_records_per_waking_and_per_day(tmp_path):
    vitals = load(tmp_path)
    first = Usage(input_tokens=1000, output_tokens=200, cache_read_tokens=50_000, cache_write_tokens=2000)
    vitals.on_waking(MORNING, "process start")
    vitals.on_model_call(MORNING, "claude-sonnet-4", first)
    vitals.on_model_call(MORNING, "claude-sonnet-4", first)
    vitals.on_waking(MORNING + timedelta(minutes=20), "its own alarm")
    vitals.on_model_call(MORNING + timedelta(minutes=20), "claude-sonnet-4", Usage(input_tokens=10))

    # 1h TTL writes at $6/M: (1000*3 + 200*15 + 50000*0.3 + 2000*6) / 1e6 = 0.033
    per_call = 0.033
    reloaded = load(tmp_path, MORNING + timedelta(minutes=21))
    assert reloaded.today.calls == 3
    assert reloaded.today.usage.cache_read_tokens == 100_000
    assert reloaded.today.usd == pytest.approx(2 * per_call + 10 * 3 / 1e6)
    assert [w["calls"] for w in reloaded.wakings] == [2, 1]
    assert reloaded.wakings[0]["usd"] == pytest.approx(2 * per_call)
    assert reloaded.wakings[0]["usage"]["output_tokens"] == 400
    assert reloaded.waking["meter"].calls == 1
    assert reloaded.today.cache_ratio() == pytest.approx(25.0)


def test_cache_ttl_prices_writes(tmp_path):
    write = Usage(cache_write_tokens=1_000_000)
    one_hour = load(tmp_path / "a", cache_ttl="1h").on_model_call(MORNING, "claude-sonnet-4", write)
    five_min = load(tmp_path / "b", cache_ttl="5m").on_model_call(MORNING, "claude-sonnet-4", write)
    assert (one_hour, five_min) == (pytest.approx(6.0), pytest.approx(3.75))


def test_a_model_with_no_price_is_counted_and_its_cost_is_unknown_not_zero(tmp_path):
    vitals = load(tmp_path)
    assert vitals.on_model_call(MORNING, "llama3.2", Usage(input_tokens=5000, output_tokens=100)) is None
    assert vitals.today.calls == 1 and vitals.today.usage.input_tokens == 5000
    assert vitals.today.known_usd is None and vitals.budget_state(MORNING)["usd"] is None
    assert vitals.today.unpriced == ["llama3.2"]
    assert load(tmp_path).today.unpriced == ["llama3.2"]  # kept across a restart


def test_config_prices_override_per_model_id(tmp_path):
    prices = prices_from_config(
        {
            "claude-sonnet-4": {"input": 1.0},
            "my-local-model": {"input": 1, "output": 2, "cacheRead": 0, "cacheWrite5m": 0, "cacheWrite1h": 0},
        }
    )
    assert price_for("claude-sonnet-4-20250514", prices).input == 1.0
    assert price_for("claude-sonnet-4-20250514", prices).output == 15.0  # default kept
    assert price_for("claude-haiku-4-5", prices) == DEFAULT_PRICES["claude-haiku-4-5"]
    vitals = load(tmp_path, prices=prices)
    assert vitals.on_model_call(MORNING, "my-local-model", Usage(output_tokens=1_000_000)) == pytest.approx(2.0)


@pytest.mark.parametrize(
    "entry,message",
    [
        ({"claude-sonnet-4": {"input": -1}}, r"prices\.claude-sonnet-4\.input must be a number >= 0"),
        ({"claude-sonnet-4": {"inputs": 1}}, r"prices\.claude-sonnet-4\.inputs is not a price field"),
        ({"claude-sonnet-4": 3}, r"prices\.claude-sonnet-4 must be an object"),
        ({"qwen": {"input": 1}}, r"prices\.qwen\.output is needed"),
    ],
)
def test_bad_price_config_names_the_key(entry, message):
    with pytest.raises(ValueError, match=message):
        prices_from_config(entry)


def test_meter_json_round_trip():
    meter = Meter()
    meter.add(Usage(1, 2, 3, 4), 0.5)
    again = Meter.from_json(json.loads(json.dumps(meter.to_json())))
    assert again == meter
    assert Meter().cache_ratio() is None


def test_corrupt_vitals_are_set_aside(tmp_path):
    (tmp_path / "VITALS.json").write_text("\x00\x00")
    vitals = load(tmp_path)
    assert vitals.wakes == 0
    assert (tmp_path / "VITALS.json.corrupt").exists()


def test_stretch_texts_name_the_real_minutes():
    assert "150 minutes" in EN["hunger_sleep"].format(minutes=150)
    assert "150 分钟" in texts("zh").TEXT["hunger_sleep"].format(minutes=150)
