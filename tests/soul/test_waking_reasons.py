"""Why a soul woke: its diary (written by the brainstem) and its log line say the same thing, from one
list (WakeReasons.causes). Wakings caused by speech were once written "Woke (my own alarm)" in the
diary while the log said "woke: heard (...)".

A real soul on its brainstem (no model), its body a real Body Protocol server on loopback, on the
converse tests' JumpClock: each sleep ends only by a wake or a jump the test makes.
"""

import logging
import re

from soulstack.fakes.soul_body import RecordingBody
from soulstack.llm.types import ToolCall
from soulstack.soul import life
from soulstack.soul.run import build_soul
from tests.soul.helpers import AFTERNOON, JumpClock, Running, fell_asleep, make_cfg

BRAINSTEM = " without my mind; only my brainstem kept the rhythm."


async def test_the_diary_and_the_log_give_the_same_reason_for_each_waking(tmp_path, caplog):
    caplog.set_level(logging.INFO, logger="soulstack.soul.loop")
    clock = JumpClock(AFTERNOON)
    async with RecordingBody() as body:
        soul = build_soul(make_cfg(tmp_path, body), clock=clock)  # no model: the brainstem lives it
        result, ok = await soul.toolbox.run(soul, ToolCall("t1", "remind", {"words": "stretch", "after": "10 min"}))
        assert ok, result
        async with Running(soul) as running:
            await fell_asleep(soul, 1)  # started
            soul.deliver("is anyone home")  # a person speaks (what converse hands the soul)
            await fell_asleep(soul, 2)
            assert (await running.post("/nudge", {"reason": "the door opened"}))[0] == 202
            await fell_asleep(soul, 3)
            clock.jump(10 * 60)  # the reminder's time
            await fell_asleep(soul, 4)
            clock.jump(20 * 60)  # the brainstem's default sleep: its alarm
            await fell_asleep(soul, 5)
    diary = [line for _when, line in life.Life(tmp_path / "soul").entries(life.DIARY)]
    logged = {}
    for record in caplog.records:
        found = re.match(r"waking (\d+): (woke: .*?) — tools", record.getMessage())
        if found:
            logged[int(found[1])] = found[2]
    assert logged == {
        1: "woke: started",
        2: "woke: heard (is anyone home)",
        3: "woke: nudged (the door opened)",
        4: "woke: reminder (stretch)",
        5: "woke: alarm after 20 min",
    }
    assert diary == [
        "Woke (I had just started)" + BRAINSTEM,
        "Woke (someone spoke to me)" + BRAINSTEM + " Heard: \u201cis anyone home\u201d.",
        "Woke (the door opened)" + BRAINSTEM,
        "Woke (a reminder for Ana: stretch)" + BRAINSTEM,  # its own note: the person in the third person
        "Woke (my own alarm)" + BRAINSTEM,
    ]
    assert body.spoken[-1] == "Ana, time to stretch."  # said aloud: to the person
    # its vitals (/health, VITALS.json) name each waking's reason in a word, from the same list
    assert [w["reason"] for w in soul.metabolism.vitals.wakings] == ["start", "heard", "nudge", "reminder", "alarm"]
