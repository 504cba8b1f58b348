"""The metabolism wired into a living soul: drives, vitals (cost meter + hunger), the fold, /health.

`attach(soul)` builds the organs from the soul's config and hangs small
functions on the soul's hooks (host/soul/hooks.py); the loop itself knows
nothing of them. What each hook does:

  on_waking       count the waking (vitals), grow boredom outside the night (drives)
  felt            the drives and hunger as sensations for the snapshot's last block
  before_turn     awaited once per waking, after the snapshot is stored: the fold (its ceiling in the
                  provider's tokens: each model call's usage rescales the soul's own rough count)
  transform_messages   old images -> placeholders; the fold's summary in front
  on_usage        price every real model call (the brainstem costs nothing), rescale the token count; waking None:
                  a keep-warm call made while asleep (host/soul/keepwarm.py), booked apart
  on_tool_result  a successful non-routine tool discharges boredom; a good speak is contact
  on_nudge        a nudge carrying a person's words is contact
  on_contact      the human really reached the soul (converse words: loop.deliver)
  adjust_sleep    a starving soul sleeps at least budget.hungrySleepMinutes
  on_waking_end   remember whether this waking fell back to the brainstem (/health); from
                  now on every image is an earlier waking's (what keep-warm sends = the next waking)

The fold's summary is asked of the model with the history exactly as the
turn sends it (same system, tools and messages, so the prefix is a cache
read) plus one instruction, instead of the folded part on its own, which
would be re-sent as fresh, uncached input (~80k tokens, ~$0.16 at Sonnet
prices per fold). When the model fails, or on the brainstem, a plain digest
is written instead.
"""

import bisect
import json
import logging

from soulstack.llm.types import ModelError, TextBlock
from soulstack.soul import fold as folding
from soulstack.soul.costs import prices_from_config
from soulstack.soul.drives import Drives
from soulstack.soul.settle import settle_earlier_calls
from soulstack.soul.turn import context
from soulstack.soul.vitals import STRETCH_TEXTS, Vitals

log = logging.getLogger("soul.metabolism")

# Bounds for the token scale: a usage report this far off our count is a provider's quirk, not a tokenizer.
MIN_TOKEN_SCALE, MAX_TOKEN_SCALE = 0.5, 3.0

KEPT_FROM = {
    "en": "\n\n(Stop your summary before the waking that begins \"{line}\": from there on your memory stays word for word.)",
    "zh": "\n\n（摘要到以“{line}”开头的那次醒来之前为止：从那里起，你的记忆会原样保留。）",
}


class Metabolism:
    def __init__(self, soul):
        cfg = soul.cfg
        now = soul.clock.now()
        self.soul = soul
        self.language = cfg["persona"]["language"]
        self.drives = Drives.load(cfg["soulDir"], now, boredom_thresholds=cfg["drives"]["boredomThresholds"],
                                  missing_hours=cfg["drives"]["missingHours"])
        budget = cfg["budget"]
        self.vitals = Vitals.load(cfg["soulDir"], now, soul.tz, max_wakes_per_day=budget["maxWakesPerDay"],
                                  max_usd_per_day=budget["maxUsdPerDay"], hungry_sleep_minutes=budget["hungrySleepMinutes"],
                                  prices=prices_from_config(cfg["prices"]), cache_ttl=cfg["model"]["cacheTtl"])
        self.waking_start = None  # index in session.messages of this waking's snapshot
        # The context ceiling is in the provider's tokens; the soul's own count (fold.estimate_tokens,
        # ~4 characters a token) is only a guess, and tokenizers differ (Claude 5's counts about 30%
        # more than older ones for the same text). Each waking's model call reports the whole prompt
        # as the provider counted it; the ratio to our count for the same request rescales the ceiling.
        self.token_scale = 1.0
        self.last_fell_back = False
        self.folds = 0  # folds done by this process (tools/bench-life reads it)

    # --- the hooks ------------------------------------------------------------------------

    def on_waking(self, soul, waking) -> None:
        now = soul.clock.now()
        self.waking_start = len(soul.session.messages)  # the snapshot is appended right after this hook
        why = waking.why
        reason = "start" if why.first else "heard" if why.heard else "nudge" if (why.nudged or why.arrived) else "alarm"
        self.vitals.on_waking(now, reason)
        self.drives.on_waking(now, soul.is_night())

    def felt(self, soul, now) -> str | None:
        parts = [self.drives.felt(now, self.language), self.vitals.felt(now, self.language)]
        return "\n".join(p for p in parts if p) or None

    def on_usage(self, soul, waking, reply) -> None:
        if reply.model == soul.brainstem.model_id:
            return
        self.vitals.on_model_call(soul.clock.now(), reply.model or soul.model.model_id, reply.usage,
                                  keep_warm=waking is None)
        if waking is not None:
            self._calibrate(soul, reply.usage)

    def on_tool_result(self, soul, event) -> None:
        self.drives.on_tool_result(event.name, event.ok, soul.clock.now())

    def on_nudge(self, soul, nudge) -> None:
        self.drives.on_nudge(nudge, soul.clock.now())

    def on_contact(self, soul, kind: str) -> None:
        self.drives.on_contact(soul.clock.now(), kind)

    def adjust_sleep(self, soul, plan):
        stretched = self.vitals.stretch_sleep(plan.minutes, soul.clock.now())
        if stretched > plan.minutes:
            texts = STRETCH_TEXTS.get(self.language, STRETCH_TEXTS["en"])
            plan.minutes, plan.why = stretched, texts.format(minutes=stretched)
        return plan

    def on_waking_end(self, soul, waking) -> None:
        self.last_fell_back = waking.fell_back
        # Asleep, the last waking's images are already "earlier" ones: a keep-warm refresh must send
        # them as the next waking will, as placeholders, or its prefix would not match.
        self.waking_start = None

    def transform_messages(self, soul, messages: list) -> list:
        start = self._current_index(soul, messages)
        earlier = self.settled(soul, folding.strip_old_images(messages, start), start)
        return folding.with_summary(earlier, soul.session.fold_summary, self.language)

    def settled(self, soul, messages: list, start: int) -> list:
        """`messages` (the history, or its live part) with the calls that ended each earlier waking
        settled into lines (host/soul/settle.py); `start`: where the current waking begins in them."""
        starts = set(self._snapshots_in(soul, messages).values())
        return settle_earlier_calls(messages, start, starts, soul.toolbox.informs, self.language)

    async def before_turn(self, soul, waking) -> None:
        """The context ceiling: fold when the live history (with system and tools) is too big."""
        session, model_cfg = soul.session, soul.cfg["model"]
        # Estimated as it is sent: images of earlier wakings are already placeholders.
        start = self.waking_start if self.waking_start is not None else len(session.messages) - 1
        live = folding.strip_old_images(session.messages[session.fold_upto:], start - session.fold_upto)

        def shown(messages):  # as the model sees them: the size the ceiling is about
            return self.settled(soul, messages, start - session.fold_upto)

        scale = self.token_scale  # provider tokens per token of our count: the limits in our units
        result = await folding.fold_context(
            live, lambda folded: self._summarize(soul, live, folded),
            max_context_tokens=int(model_cfg["maxContextTokens"] / scale),
            keep_recent_tokens=int(model_cfg["keepRecentTokens"] / scale),
            previous_summary=session.fold_summary, base=session.fold_upto, extra_tokens=self._fixed_tokens(soul),
            now=soul.clock.now(), language=self.language, shown=shown,
        )
        if result is None:
            return
        record = result.record
        session.append_fold(record["summary"], record["upto"], record["at"])
        self.folds += 1
        log.info("folded %d messages into a summary (~%d -> ~%d tokens)", record["folded"],
                 record["tokensBefore"], record["tokensAfter"])

    # --- helpers --------------------------------------------------------------------------

    def _current_index(self, soul, messages: list) -> int:
        """Where this waking starts in the (coalesced) history: the message holding its snapshot; asleep, the end."""
        if self.waking_start is None:
            return len(messages)
        return self._snapshots_in(soul, messages).get(self.waking_start, len(messages))

    @staticmethod
    def _snapshots_in(soul, messages: list) -> dict:
        """{session index of a waking's snapshot: the index in `messages` of the message holding it}, for
        the wakings after the last fold (a snapshot is found by its last block, which coalescing keeps)."""
        session = soul.session
        live = session.waking_starts[bisect.bisect_left(session.waking_starts, session.fold_upto):]
        marks = {id(session.messages[i].content[-1]): i for i in live}
        return {marks[id(b)]: index for index, message in enumerate(messages) for b in message.content if id(b) in marks}

    def _calibrate(self, soul, usage) -> None:
        """Rescale our token count by the provider's count of the request just answered (run before
        the reply joins the history, so the turn's context is still exactly what was sent)."""
        counted = usage.input_tokens + usage.cache_read_tokens + usage.cache_write_tokens
        if counted <= 0:
            return  # a provider that reports no usage (some local servers): keep the last scale
        ours = folding.estimate_tokens(context(soul)) + self._fixed_tokens(soul)
        self.token_scale = min(MAX_TOKEN_SCALE, max(MIN_TOKEN_SCALE, counted / max(1, ours)))

    @staticmethod
    def _fixed_tokens(soul) -> int:
        tools = json.dumps([[t.name, t.description, t.input_schema] for t in soul.tools], ensure_ascii=False)
        return folding.estimate_text_tokens(soul.system) + folding.estimate_text_tokens(tools)

    async def _summarize(self, soul, live: list, folded: list) -> str:
        """The model's summary, asked with the cached history; a plain digest when it cannot."""
        if soul.model is soul.brainstem or (soul.waking and soul.waking.on_brainstem):
            return folding.plain_digest(folded, self.language)
        messages = self.transform_messages(soul, soul.session.history())
        instruction = folding.SUMMARY_INSTRUCTION.get(self.language, folding.SUMMARY_INSTRUCTION["en"])
        first_kept = live[len(folded)] if len(folded) < len(live) else None
        line = _first_line(first_kept)
        if line:
            instruction += KEPT_FROM.get(self.language, KEPT_FROM["en"]).format(line=line)
        request = folding.summary_request(messages, self.language, instruction)
        try:
            reply = await soul.model.complete(soul.system, request, soul.tools, max_tokens=soul.cfg["model"]["maxTokens"],
                                              cache=True)
        except ModelError as error:
            log.warning("the model could not summarize (%s); a plain digest is folded instead", error)
            return folding.plain_digest(folded, self.language)
        self.vitals.on_model_call(soul.clock.now(), reply.model or soul.model.model_id, reply.usage)
        words = "\n".join(b.text for b in reply.message.content if isinstance(b, TextBlock)).strip()
        return words or folding.plain_digest(folded, self.language)


def _first_line(message) -> str:
    """The first line of a waking's volatile block ("It is 2024-05-01 14:00, ..."), to name where the kept part starts."""
    if message is None:
        return ""
    texts = [b.text for b in message.content if isinstance(b, TextBlock) and b.text.strip()]
    return texts[-1].strip().splitlines()[0][:80] if texts else ""


HOOKED = ("on_waking", "felt", "before_turn", "transform_messages", "on_usage", "on_tool_result", "on_nudge",
          "on_contact", "adjust_sleep", "on_waking_end")


def attach(soul) -> Metabolism:
    """Give `soul` a metabolism: its organs as `soul.metabolism`, its functions on the soul's hooks."""
    metabolism = Metabolism(soul)
    soul.metabolism = metabolism
    for name in HOOKED:
        getattr(soul.hooks, name).append(getattr(metabolism, name))
    return metabolism
