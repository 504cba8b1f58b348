"""model.routine: a cheaper model for quiet wakings (no person, no nudge, nothing new); the main
model whenever someone is there or something happened. Real anthropic SDK against the fake."""

import json

from soulstack.clocks import StepClock
from soulstack.soul.config import ConfigError, from_dict
from soulstack.soul.run import build_soul
from soulstack.fakes.anthropic_api import FakeAnthropic, tool_use
from soulstack.fakes.soul_body import RecordingBody
from tests.helpers import until
from tests.soul.helpers import AFTERNOON, Running, anthropic_env, make_cfg, texts_of

MAIN, ROUTINE = "claude-sonnet-5-5", "claude-haiku-5-5"


def routine_cfg(tmp_path, body, **model):
    return make_cfg(
        tmp_path, body, model={"provider": "anthropic", "id": MAIN, "routine": ROUTINE, "retries": 0, **model}
    )


def sleep_an_hour(request):
    return tool_use("sleep", {"minutes": 60})


async def test_quiet_wakings_use_the_routine_mind_and_anything_that_happens_the_main_one(tmp_path):
    clock = StepClock(AFTERNOON)
    clock.hold(after=2)  # the first waking, two quiet ones; then held
    async with RecordingBody() as body, FakeAnthropic(clock=clock.monotonic, default=sleep_an_hour) as fake:
        soul = build_soul(routine_cfg(tmp_path, body), clock=clock, env=anthropic_env(fake))
        async with Running(soul) as running:
            await until(lambda: clock.held == 3, what="three wakings")
            assert (await running.post("/nudge", {"reason": "a face appeared"}))[0] == 202
            await until(lambda: clock.held == 4, what="the nudged waking")
            clock.hold(after=0)
            soul.deliver("hello Pip")
            await until(lambda: clock.held == 5, what="the waking that heard Ana")
        models = [body["model"] for body in fake.bodies]
    # started: main; two quiet alarms: routine; a nudge: main; Ana's words: main.
    assert models == [MAIN, ROUTINE, ROUTINE, MAIN, MAIN]
    assert "a face appeared" in texts_of(fake.bodies[3]["messages"][-1])
    # Both minds are priced, each at its own price (the cost meter books by the reply's model).
    vitals = json.loads((tmp_path / "soul" / "VITALS.json").read_text())
    assert vitals["today"]["usd"] is not None and vitals["today"]["usd"] > 0


async def test_words_that_arrive_mid_turn_bring_the_main_mind_for_the_rest_of_the_waking(tmp_path):
    clock = StepClock(AFTERNOON)
    clock.hold(after=1)
    async with RecordingBody() as body, FakeAnthropic(clock=clock.monotonic, default=sleep_an_hour) as fake:
        soul = build_soul(routine_cfg(tmp_path, body), clock=clock, env=anthropic_env(fake))

        def look_then_hear(request):  # the quiet waking's first step: a look, while Ana starts talking
            soul.deliver("Pip, are you there?")
            return tool_use("look", {"question": "who is there?"})

        fake.reply(sleep_an_hour, look_then_hear)
        async with Running(soul):
            await until(lambda: clock.held == 2, what="the second waking's sleep")
        models = [body["model"] for body in fake.bodies]
    assert models[:3] == [MAIN, ROUTINE, MAIN]  # the look was routine; her words bring the main mind
    assert "Pip, are you there?" in texts_of(fake.bodies[2]["messages"][-1])


def test_routine_is_a_model_id_or_nothing(tmp_path):
    cfg, _ = from_dict({"soulDir": str(tmp_path), "model": {"routine": ROUTINE}})
    assert cfg.model.routine == ROUTINE
    assert from_dict({"soulDir": str(tmp_path)})[0].model.routine is None
    try:
        from_dict({"soulDir": str(tmp_path), "model": {"routine": 3}})
    except ConfigError as error:
        assert "model.routine" in str(error)
    else:
        raise AssertionError("a number was taken as a model id")


async def test_a_routine_model_with_no_known_price_is_named_at_start(tmp_path):
    from tests.helpers import free_port
    from tests.helpers import until_real as until
    from tests.soul.helpers import start_soul, stop_with_ctrl_c, write_config

    async with RecordingBody() as body, FakeAnthropic(default=sleep_an_hour) as fake:
        config_path = write_config(tmp_path, body, free_port(), provider="anthropic", id=MAIN, routine="gpt-4o-mini")
        log_path = tmp_path / "soul.log"
        process = start_soul(config_path, log_path, ANTHROPIC_API_KEY="test-key", ANTHROPIC_BASE_URL=fake.base_url)
        try:
            await until(lambda: "waking 1:" in log_path.read_text(), what="the first waking")
        finally:
            assert await stop_with_ctrl_c(process) == 0
    log = log_path.read_text()
    assert f"mind: anthropic {MAIN} (routine wakings: gpt-4o-mini)" in log
    assert (
        "no price is known for the routine model 'gpt-4o-mini' (model.routine): is it a model of the anthropic provider?"
        in log
    )
