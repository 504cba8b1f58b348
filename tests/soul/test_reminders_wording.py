"""The snapshot's line for a due reminder reads naturally when the reminder names nobody
(host/soul/reminders/delivery.py's Due.line, en.py's and zh.py's TEXT["reminders"]["due"/"due_unnamed"]).

A real soul on a StepClock, its model the real anthropic SDK against the fake Messages API, its body
a real Body Protocol server on loopback, as in tests/soul/test_reminders.py.
"""

from datetime import datetime, timedelta, UTC

import pytest

from soulstack.clocks import StepClock
from soulstack.fakes.anthropic_api import FakeAnthropic, message
from soulstack.fakes.soul_body import RecordingBody
from tests.soul.helpers import anthropic_model, texts_of
from tests.soul.test_reminders import BERLIN, DUE_LINE, call, live_until_over, soul_for, speaks_when_due


async def due_snapshot(tmp_path, human, **remind):
    """The text of the model call that showed the reminder due, for a soul whose persona.human is `human`."""
    noon = datetime(2026, 12, 1, 12, 0, tzinfo=BERLIN)
    clock = StepClock(noon.astimezone(UTC), end=noon.astimezone(UTC) + timedelta(minutes=40))
    async with RecordingBody() as body, FakeAnthropic() as fake:
        fake.reply(
            message(call("remind", words="water the basil", after="10 min", **remind), call("sleep", minutes=30))
        )
        fake.default = speaks_when_due("The basil is thirsty.", sleep=30)
        soul = soul_for(tmp_path, body, clock, anthropic_model(fake), persona={"human": human})
        await live_until_over(soul, clock)
    assert body.spoken == ["The basil is thirsty."]  # it was due, shown, and said
    return next(texts_of(b["messages"][-1]) for b in fake.bodies if DUE_LINE in texts_of(b["messages"][-1]))


async def test_a_reminder_for_nobody_named_with_the_default_human_says_no_for(tmp_path):
    snapshot = await due_snapshot(tmp_path, "my human")
    line = next(line for line in snapshot.splitlines() if DUE_LINE in line)
    assert "\u201cwater the basil\u201d" in line
    assert "my human" not in line and " for " not in line.split("(set for")[0], line


@pytest.mark.parametrize(("human", "remind", "named"), [("Ana", {}, "Ana"), ("my human", {"who": "Ben"}, "Ben")])
async def test_the_line_names_the_persons_human_or_the_one_the_reminder_names(tmp_path, human, remind, named):
    snapshot = await due_snapshot(tmp_path, human, **remind)
    assert f"for {named}: \u201cwater the basil\u201d" in snapshot, snapshot
