"""The metabolism wired into a living soul: drives and vitals (cost meter + hunger) on its hooks.

`Metabolism(soul)` builds the organs from the soul's config; build_soul
(host/soul/run.py) hangs its functions on the soul's hooks (host/soul/hooks.py)
and the loop itself knows nothing of them. What each hook does:

  on_waking       count the waking (vitals), grow boredom outside the night (drives)
  felt            the drives and hunger as sensations for the snapshot's last block
  on_usage        price every real model call (the brainstem costs nothing); waking None:
                  a keep-warm call made while asleep (host/soul/memory/keepwarm.py), booked apart
  on_tool_result  a successful non-routine tool discharges boredom; a good speak is contact
  on_nudge        a nudge carrying a person's words is contact
  on_contact      the human really reached the soul (converse words: loop.deliver)
  adjust_sleep    a starving soul sleeps at least budget.hungrySleepMinutes
  on_waking_end   remember whether this waking fell back to the brainstem (/health)

The context ceiling (the fold) lives with the rest of the soul's memory: host/soul/memory/ceiling.py.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from soulstack.soul.metabolism.costs import prices_from_config
from soulstack.soul.metabolism.drives import Drives
from soulstack.soul.metabolism.vitals import Vitals

if TYPE_CHECKING:
    from soulstack.soul.hooks import ToolEvent
    from soulstack.soul.loop import Soul, Waking


class Metabolism:
    def __init__(self, soul: Soul):
        cfg = soul.cfg
        now = soul.clock.now()
        self.soul = soul
        self.drives = Drives.load(
            cfg.soul_dir,
            now,
            boredom_thresholds=cfg.drives.boredom_thresholds,
            missing_hours=cfg.drives.missing_hours,
        )
        budget = cfg.budget
        self.vitals = Vitals.load(
            cfg.soul_dir,
            now,
            soul.tz,
            max_wakes_per_day=budget.max_wakes_per_day,
            max_usd_per_day=budget.max_usd_per_day,
            hungry_sleep_minutes=budget.hungry_sleep_minutes,
            prices=prices_from_config(cfg.prices),
            cache_ttl=cfg.model.cache_ttl,
        )
        self.last_fell_back = False

    # --- the hooks ------------------------------------------------------------------------

    def on_waking(self, soul: Soul, waking: Waking) -> None:
        now = soul.clock.now()
        self.vitals.on_waking(now, waking.why.in_a_word())  # a reminder's waking was "alarm" here
        self.drives.on_waking(now, soul.is_night())

    def felt(self, soul: Soul, now) -> str | None:
        parts = [self.drives.felt(now, soul.lang), self.vitals.felt(now, soul.lang)]
        return "\n".join(p for p in parts if p) or None

    def on_usage(self, soul: Soul, waking: Waking | None, reply) -> None:
        if reply.model == soul.brainstem.model_id:
            return
        self.vitals.on_model_call(
            soul.clock.now(), reply.model or soul.model.model_id, reply.usage, keep_warm=waking is None
        )

    def on_tool_result(self, soul: Soul, event: ToolEvent) -> None:
        tools = soul.toolbox  # what the tool is: its facts (host/soul/tools/)
        self.drives.on_tool_result(
            event.name, event.ok, soul.clock.now(), routine=tools.routine(event.name), speaks=tools.speaks(event.name)
        )

    def on_nudge(self, soul: Soul, nudge) -> None:
        self.drives.on_nudge(nudge, soul.clock.now())

    def on_contact(self, soul: Soul, kind: str) -> None:
        self.drives.on_contact(soul.clock.now(), kind)

    def adjust_sleep(self, soul: Soul, plan):
        stretched = self.vitals.stretch_sleep(plan.minutes, soul.clock.now())
        if stretched > plan.minutes:
            # why it grew, for the sleep tool's answer (the soul is told the real value)
            plan.minutes, plan.why = stretched, soul.lang.TEXT["hunger_sleep"].format(minutes=stretched)
        return plan

    def on_waking_end(self, soul: Soul, waking: Waking) -> None:
        self.last_fell_back = waking.fell_back

    # The context ceiling's counters, read here by the tests written while it lived in the metabolism.
    @property
    def folds(self) -> int:
        return self.soul.ceiling.folds

    @property
    def token_scale(self) -> float:
        return self.soul.ceiling.token_scale
