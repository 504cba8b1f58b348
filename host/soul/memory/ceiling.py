"""The context ceiling, wired into a living soul: fold when the history (with system and tools) is too big.

`Ceiling` hangs on two of the soul's hooks (build_soul in host/soul/run.py puts it there):

  before_turn   awaited once per waking, after the snapshot is stored: fold when the
                live history, as the view shows it (host/soul/memory/view.py), passes
                model.maxContextTokens (fold.fold_context keeps model.keepRecentTokens)
  on_usage      a waking's model call reports the whole prompt as the provider counted
                it: the ratio to our own count of the same request rescales the ceiling

The ceiling is in the provider's tokens; the soul's own count (fold.estimate_tokens,
~4 characters a token) is only a guess, and tokenizers differ (Claude 5's counts about
30% more than older ones for the same text), hence the scale.

The fold's summary is asked of the model with the history exactly as the turn sends
it (same system, tools and messages, so the prefix is a cache read) plus one
instruction, instead of the folded part on its own, which would be re-sent as fresh,
uncached input (docs/metabolism.md, "Folding: the context ceiling"). When the model
fails, or on the brainstem, a plain digest is written instead. The summary's own call
is booked by `book` (the vitals' cost meter: build_soul passes it in).
"""

from __future__ import annotations

import json
import logging
from typing import TYPE_CHECKING
from collections.abc import Callable

from soulstack.llm.types import ModelError, TextBlock
from soulstack.soul.memory import fold as folding
from soulstack.soul.memory.archive import Entry, stamp
from soulstack.soul.memory.view import settled, view

if TYPE_CHECKING:
    from soulstack.soul.loop import Soul, Waking

# The ceiling's lines keep the logger name they had while it lived in the metabolism (a log reader filters by it).
log = logging.getLogger(__name__)

# Bounds for the token scale: a usage report this far off our count is a provider's quirk, not a tokenizer.
MIN_TOKEN_SCALE, MAX_TOKEN_SCALE = 0.5, 3.0


class Ceiling:
    def __init__(self, soul: Soul, book: Callable):
        self.soul = soul
        self.book = book  # book(now, model_id, usage): the summary's own model call, on the day's meter
        self.token_scale = 1.0  # provider tokens per token of our count (see the module)
        self.folds = 0  # folds done by this process (tools/bench-life reads it)

    # --- the hooks ------------------------------------------------------------------------

    def on_usage(self, soul: Soul, waking: Waking | None, reply) -> None:
        if reply.model == soul.brainstem.model_id or waking is None:
            return  # the brainstem counts nothing; a keep-warm refresh (waking None) is not a waking's request
        self._calibrate(soul, reply.usage)

    async def before_turn(self, soul: Soul, waking: Waking) -> None:
        """The context ceiling: fold when the live history (with system and tools) is too big."""
        session, model_cfg = soul.session, soul.cfg.model
        # Estimated as it is sent: images of earlier wakings are already placeholders.
        start = soul.snapshot_at if soul.snapshot_at is not None else len(session.messages) - 1
        live = folding.strip_old_images(session.messages[session.fold_upto :], start - session.fold_upto, soul.lang)

        def shown(messages):  # as the model sees them: the size the ceiling is about
            return settled(session, messages, start - session.fold_upto, soul.toolbox, soul.lang)

        scale = self.token_scale  # provider tokens per token of our count: the limits in our units
        result = await folding.fold_context(
            live,
            lambda folded: self._summarize(soul, live, folded),
            soul.lang,
            max_context_tokens=int(model_cfg.max_context_tokens / scale),
            keep_recent_tokens=int(model_cfg.keep_recent_tokens / scale),
            previous_summary=session.fold_summary,
            base=session.fold_upto,
            extra_tokens=fixed_tokens(soul),
            now=soul.clock.now(),
            shown=shown,
        )
        if result is None:
            return
        record = result.record
        summary = Entry(stamp(soul.local_now()), "digest", "", record["summary"])  # recall finds those days by it
        session.append_fold(record["summary"], record["upto"], record["at"], remember=summary)
        self.folds += 1
        log.info(
            "folded %d messages into a summary (~%d -> ~%d tokens)",
            record["folded"],
            record["tokensBefore"],
            record["tokensAfter"],
        )

    # --- helpers --------------------------------------------------------------------------

    def _calibrate(self, soul: Soul, usage) -> None:
        """Rescale our token count by the provider's count of the request just answered (run before
        the reply joins the history, so the view is still exactly what was sent)."""
        counted = usage.input_tokens + usage.cache_read_tokens + usage.cache_write_tokens
        if counted <= 0:
            return  # a provider that reports no usage (some local servers): keep the last scale
        ours = folding.estimate_tokens(view(soul)) + fixed_tokens(soul)
        self.token_scale = min(MAX_TOKEN_SCALE, max(MIN_TOKEN_SCALE, counted / max(1, ours)))

    async def _summarize(self, soul: Soul, live: list, folded: list) -> str:
        """The model's summary, asked with the cached history; a plain digest when it cannot."""
        lang = soul.lang
        if soul.model is soul.brainstem or (soul.waking and soul.waking.on_brainstem):
            return folding.plain_digest(folded, lang, soul.toolbox)
        messages = view(soul)
        instruction = lang.TEXT["summary_instruction"]
        first_kept = live[len(folded)] if len(folded) < len(live) else None
        line = _first_line(first_kept)
        if line:
            instruction += lang.TEXT["summary_kept_from"].format(line=line)
        request = folding.summary_request(messages, instruction)
        try:
            reply = await soul.model.complete(
                soul.system, request, soul.tools, max_tokens=soul.cfg.model.max_tokens, cache=True
            )
        except ModelError as error:
            log.warning("the model could not summarize (%s); a plain digest is folded instead", error)
            return folding.plain_digest(folded, lang, soul.toolbox)
        self.book(soul.clock.now(), reply.model or soul.model.model_id, reply.usage)
        words = "\n".join(b.text for b in reply.message.content if isinstance(b, TextBlock)).strip()
        return words or folding.plain_digest(folded, lang, soul.toolbox)


def fixed_tokens(soul: Soul) -> int:
    """Our count of what every request sends besides its messages: the system prompt and the tools."""
    tools = json.dumps([[t.name, t.description, t.input_schema] for t in soul.tools], ensure_ascii=False)
    return folding.estimate_text_tokens(soul.system) + folding.estimate_text_tokens(tools)


def _first_line(message) -> str:
    """The first line of a waking's volatile block ("It is 2024-05-01 14:00, ..."), to name where the kept part starts."""
    if message is None:
        return ""
    texts = [b.text for b in message.content if isinstance(b, TextBlock) and b.text.strip()]
    return texts[-1].strip().splitlines()[0][:80] if texts else ""
