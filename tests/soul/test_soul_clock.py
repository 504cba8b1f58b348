"""host/clocks.py StepClock: virtual time moves only by what is waited, and a test can hold a sleep."""

import asyncio
from datetime import datetime, timedelta, UTC

import pytest

from soulstack.clocks import StepClock

START = datetime(2024, 5, 1, 14, 0, tzinfo=UTC)


async def test_waits_pass_at_once_and_move_time_by_exactly_what_was_waited():
    clock = StepClock(START)
    wake = asyncio.Event()
    assert await clock.sleep_until_woken(3600, wake) is False
    await clock.sleep(90)
    clock.advance(5)
    assert clock.monotonic() == 3695
    assert clock.now() == START + timedelta(seconds=3695)
    assert clock.sleeps == 1  # plain sleep() is not a soul's sleep


async def test_a_held_sleep_waits_with_time_standing_still_until_released():
    clock = StepClock(START)
    wake = asyncio.Event()
    clock.hold(after=1)
    await clock.sleep_until_woken(600, wake)  # the first passes
    second = asyncio.create_task(clock.sleep_until_woken(1800, wake))
    for _ in range(5):
        await asyncio.sleep(0.01)
    assert not second.done() and clock.held == 2 and clock.monotonic() == 600
    await clock.sleep(60)  # a plain sleep is never held
    clock.release()
    assert await asyncio.wait_for(second, 1) is False
    assert clock.held == 0 and clock.monotonic() == 600 + 60 + 1800
    await asyncio.wait_for(clock.sleep_until_woken(60, wake), 1)  # released: no longer held


async def test_a_wake_ends_a_held_sleep_early_and_no_time_passes():
    clock = StepClock(START)
    wake = asyncio.Event()
    clock.hold()
    sleeping = asyncio.create_task(clock.sleep_until_woken(240 * 60, wake))
    for _ in range(5):
        await asyncio.sleep(0.01)
    assert clock.held == 1
    wake.set()
    assert await asyncio.wait_for(sleeping, 1) is True
    assert clock.monotonic() == 0 and clock.held == 0


async def test_the_wait_that_would_reach_the_end_sets_over_and_never_returns():
    clock = StepClock(START, end=START + timedelta(hours=1))
    await clock.sleep(1800)
    last = asyncio.create_task(clock.sleep(1800))
    await asyncio.wait_for(clock.over.wait(), 1)
    assert not last.done() and clock.monotonic() == 1800
    last.cancel()
    with pytest.raises(asyncio.CancelledError):
        await last


def test_a_naive_start_is_refused():
    with pytest.raises(ValueError):
        StepClock(datetime(2024, 5, 1, 14, 0))
