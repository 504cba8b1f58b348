"""A reminder said aloud is said to its person ("Time to stretch.", "你该伸展一下了。"), by name when it
has one; the soul's own notes keep the third person ("a reminder for Ana: stretch"). It was once
"A reminder for my human: stretch", spoken to that human.

A real soul on its brainstem (no model: the fixed sentence is the brainstem's), on a StepClock, its
body a real Body Protocol server on loopback, as in tests/soul/test_reminders.py.
"""

from datetime import datetime, timedelta, UTC

import pytest

from soulstack.clocks import StepClock
from soulstack.fakes.soul_body import RecordingBody
from soulstack.soul import life
from tests.soul.test_reminders import BERLIN, live_until_over, soul_for, use


@pytest.mark.parametrize(
    ("language", "human", "words", "spoken", "noted"),
    [
        ("en", "my human", "stretch", "Time to stretch.", "a reminder for my human: stretch"),
        ("en", "Ana", "stretch.", "Ana, time to stretch.", "a reminder for Ana: stretch."),
        ("zh", "my human", "伸展一下", "你该伸展一下了。", "给my human的提醒：伸展一下"),
        ("zh", "小明", "伸展一下", "小明，你该伸展一下了。", "给小明的提醒：伸展一下"),
    ],
)
async def test_a_spoken_reminder_speaks_to_its_person(tmp_path, language, human, words, spoken, noted):
    noon = datetime(2026, 12, 1, 12, 0, tzinfo=BERLIN)
    clock = StepClock(noon.astimezone(UTC), end=noon.astimezone(UTC) + timedelta(minutes=30))
    async with RecordingBody() as body:
        soul = soul_for(tmp_path, body, clock, persona={"language": language, "human": human})
        answer, ok = await use(soul, "remind", words=words, after="10 min")
        assert ok, answer
        await live_until_over(soul, clock)
    assert body.spoken == [spoken]
    diary = life.Life(tmp_path / "soul").read(life.DIARY)
    assert noted in diary, diary  # its own note of why it woke: about the person, not to them
