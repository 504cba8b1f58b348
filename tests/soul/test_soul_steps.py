"""How many model steps a waking takes: a reply may call several tools at once, and one that
calls sleep ends the waking right after its tools ran — unless an answer still needs reading
(a look, a failure). Every step re-reads the whole context, so each one saved is money saved.

Real body on loopback, the real anthropic SDK against host/fakes/anthropic_api.py, StepClock."""

import json

from soulstack.clocks import StepClock
from soulstack.soul.run import build_soul
from soulstack.fakes.anthropic_api import FakeAnthropic, message
from soulstack.fakes.soul_body import JPEG_B64, RecordingBody
from tests.helpers import until
from tests.soul.helpers import AFTERNOON, Running, anthropic_model, make_cfg, sleep_forever, texts_of


def calls(*tools, words=None):
    """One reply calling each (name, input) in `tools`, with optional words before."""
    blocks = [{"type": "text", "text": words}] if words else []
    blocks += [
        {"type": "tool_use", "id": f"toolu_step{i}", "name": name, "input": arguments}
        for i, (name, arguments) in enumerate(tools)
    ]
    return message(*blocks)


def living(tmp_path, body, fake, clock):
    return build_soul(make_cfg(tmp_path, body), clock=clock, model=anthropic_model(fake))


async def test_one_reply_that_acts_and_sleeps_is_the_whole_waking(tmp_path):
    async with RecordingBody() as body, FakeAnthropic(default=sleep_forever) as fake:
        fake.reply(
            calls(
                ("speak", {"text": "Good afternoon, Ana."}),
                ("express", {"emotion": "happy"}),
                ("diary", {"entry": "Said good afternoon."}),
                ("sleep", {"minutes": 30}),
                words="The light is warm.",
            )
        )
        clock = StepClock(AFTERNOON)
        clock.hold(after=1)  # the first sleep passes; the soul is held in its second
        soul = living(tmp_path, body, fake, clock)
        async with Running(soul):
            await until(lambda: clock.held == 2, what="the second waking's sleep")
    # Waking 1 was one model call; every tool of it ran, in order.
    assert len(fake.bodies) == 2
    assert body.spoken == ["Good afternoon, Ana."]
    assert ("express", {"emotion": "happy"}) in body.received
    assert "Said good afternoon." in (tmp_path / "soul" / "DIARY.md").read_text()
    # Waking 2 sees all four answers, settled into a line each (host/soul/memory/settle.py), then its own
    # snapshot: the chosen 30 minutes were slept.
    last = fake.bodies[1]["messages"][-1]
    assert [b["text"] for b in fake.bodies[1]["messages"][-2]["content"]] == ["The light is warm."]
    assert last["content"][0]["text"] == (
        'What you did then:\n- speak: "Good afternoon, Ana." \u2192 You said it aloud.\n'
        "- express: \"happy\" \u2192 Your body took the expression 'happy'; it shows the nearest face it has.\n"
        '- diary: "Said good afternoon." \u2192 Written in your diary.\n'
        "- sleep: 30 \u2192 You will sleep 30 minutes."
    )
    assert texts_of(last).endswith("Your own alarm woke you.")


async def test_a_look_called_with_sleep_is_seen_before_the_waking_ends(tmp_path):
    async with RecordingBody() as body, FakeAnthropic(default=sleep_forever) as fake:
        fake.reply(
            calls(("look", {"question": "is anyone there?"}), ("sleep", {"minutes": 25})), "Nobody. The chair is empty."
        )  # the second step: words only, no new sleep
        clock = StepClock(AFTERNOON)
        clock.hold(after=1)
        soul = living(tmp_path, body, fake, clock)
        async with Running(soul):
            await until(lambda: clock.held == 2, what="the second waking's sleep")
    assert len(fake.bodies) == 3  # waking 1 took two steps: the second one saw the picture
    seen = fake.bodies[1]["messages"][-1]["content"][0]
    assert seen["type"] == "tool_result" and any(b.get("source", {}).get("data") == JPEG_B64 for b in seen["content"])
    # The sleep chosen together with the look still holds.
    assert "You will sleep 25 minutes." in json.dumps(fake.bodies[2]["messages"])
    assert texts_of(fake.bodies[2]["messages"][-1]).endswith("It is 14:25, your local time.\nYour own alarm woke you.")


async def test_a_failure_in_a_reply_with_sleep_reaches_the_soul_in_the_same_waking(tmp_path):
    async with RecordingBody(fail={"speak": 500}) as body, FakeAnthropic(default=sleep_forever) as fake:
        fake.reply(
            calls(("speak", {"text": "Are you there?"}), ("sleep", {"minutes": 20})),
            calls(("diary", {"entry": "My voice failed me today."})),
        )
        clock = StepClock(AFTERNOON)
        clock.hold()  # held in the first sleep
        soul = living(tmp_path, body, fake, clock)
        async with Running(soul):
            await until(lambda: clock.held == 1, what="the first sleep")
    assert len(fake.bodies) == 2  # one more step, to read the failure; the diary call then ended the waking
    failed = fake.bodies[1]["messages"][-1]["content"][0]
    assert failed["is_error"] is True and "Your body did not respond" in texts_of({"content": [failed]})
    assert "My voice failed me today." in (tmp_path / "soul" / "DIARY.md").read_text()
    assert body.spoken == []
