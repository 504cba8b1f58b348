"""sleep and wait: how a waking ends, and a pause inside one."""

from soulstack.soul.snapshot import fmt_minutes
from soulstack.soul.tools import ENDS_WAKING, Outcome, SoulTool

MIN_WAIT_S, MAX_WAIT_S = 1, 7


async def sleep(soul, minutes: float) -> Outcome:
    """Choose the next alarm; the answer tells the real length after the clamp (and any stretch)."""
    text = soul.lang.TEXT
    plan = soul.plan_sleep(float(minutes))
    if plan.why == "floor":
        why = text["why_floor"].format(minutes=fmt_minutes(plan.floor))
    elif plan.why == "ceiling":
        why = text["why_ceiling"].format(minutes=fmt_minutes(plan.ceiling))
    else:
        why = plan.why  # a stretch from a sleep hook (hunger) explains itself
    if why and plan.minutes != float(minutes):
        words = text["sleep_clamped"].format(
            minutes=fmt_minutes(plan.minutes), asked=fmt_minutes(float(minutes)), why=why
        )
    else:
        words = text["sleep_told"].format(minutes=fmt_minutes(plan.minutes))
    words += soul.reminders.cuts_sleep(plan.minutes)  # a reminder due sooner ends it then: say so
    plan.told = True
    soul.waking.sleep = plan
    return Outcome.text(words)


async def wait(soul, seconds: float) -> Outcome:
    seconds = max(MIN_WAIT_S, min(MAX_WAIT_S, float(seconds)))
    await soul.clock.sleep(seconds)
    return Outcome.text(soul.lang.TEXT["waited"].format(seconds=fmt_minutes(seconds)))


def sleep_tools() -> list:
    return [
        SoulTool(
            "sleep",
            "End this waking stretch and set your next alarm. The answer tells how long you will really sleep.",
            {"minutes": {"type": "number", "description": "how long to sleep, in minutes"}},
            sleep,
            ["minutes"],
            informs=False,
            routine=True,
            role=ENDS_WAKING,
        ),
        SoulTool(
            "wait",
            f"Stay awake and pause {MIN_WAIT_S}-{MAX_WAIT_S} seconds (e.g. after speaking, for an answer).",
            {"seconds": {"type": "number", "description": f"{MIN_WAIT_S} to {MAX_WAIT_S}"}},
            wait,
            ["seconds"],
            informs=False,
            routine=True,
        ),
    ]
