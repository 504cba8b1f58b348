"""Waking the soul: the one nudge contract, for every body, the bridge and the soul.

A nudge is `POST <soul>/nudge` with `{"reason": "<what happened>"}` (Body
Protocol v1) or, as our documented addition, `{"words": "<a person's exact
words>"}` from a body that knows a person spoke or typed: the words once, and
the soul renders the reason from them (`TYPED`: "your human typed: <words>",
what a typed line has always read). A body may send both (older terminal
bodies, a wake word: `someone called the robot by its wake word: "..."`).
Two more fields, also ours: `speaker` (who spoke the `words`; absent = the
soul's human, as before) and `heard` (what the person actually heard of the
soul's speech: `{"played": [...], "cut": "...", "cut_fraction": 0.42}`, sent
when speech was cut off; `cut`/`cut_fraction` only when one utterance was cut,
and a nudge may carry `heard` alone: the soul is told "you were cut off after
'…'"). This module owns all of it: the shape and its validation (`parse_nudge`, the
soul's /nudge, once), the length cap both sides share (`MAX_REASON_CHARS`),
the one rule for "a person spoke" (`words_of`: the `words` field, else the
phrasings known bodies use in a reason) and which of those words are shown
beside the reason (`words_apart`), the sender's debounce, merge and delivery.

The sender keeps a body from waking the soul over and over (a face seen every
frame once caused wake storms):

- the same reason offered again within `same_reason_window_s` of the last time
  it was accepted is dropped: it is the same event seen again;
- nudges go out at most once per `min_interval_s`. A *different* reason that
  arrives sooner waits, and every reason waiting when the interval passes goes
  out merged ("; "), in as few nudges as the cap allows. A person's line is
  never merged: it goes out as its own nudge, with its `words`.

Nothing accepted is lost. While the soul is down (connection refused, 5xx, a
timeout, 408/429) the sender keeps the nudges and retries with a growing
backoff. A 400 for a merged nudge is split: each part is sent alone, and only
a part the soul refuses by itself is given up. Other 4xx (a wrong token)
cannot be fixed by retrying: the nudge is given up, reported to the listener
and logged with the soul's answer (at most once a minute, with a count).
"""

import asyncio
import contextlib
import logging
import re
import time
from collections import deque
from dataclasses import dataclass

import aiohttp

log = logging.getLogger(__name__)

# One cap on both sides: the soul refuses a longer reason (400), the sender never merges past it.
MAX_REASON_CHARS = 2000
MAX_WORDS_CHARS = 2000
SEPARATOR = "; "  # between merged reasons
# 408 and 429 say "try again later", unlike the other 4xx.
RETRYABLE_4XX = (408, 429)
EXAMPLE = '{"reason": "<what happened>"} or {"words": "<a person\'s exact words>"}'
# The reason of a nudge that carries only a person's words: what a typed line has always read.
TYPED = "your human typed: "
MAX_SPEAKER_CHARS = 64
MAX_PLAYED = 20  # utterances in heard.played; older ones are not news


def cut(text: str, cap: int) -> str:
    """`text`, or its first `cap - 1` characters and "…" when it is longer than `cap`."""
    return text if len(text) <= cap else text[: cap - 1] + "…"


@dataclass(frozen=True)
class Nudge:
    reason: str | None  # what happened; None only in a nudge a body sends with just `words` or `heard`
    words: str | None = None  # a person's exact words, when the body knows a person spoke or typed
    speaker: str | None = None  # who spoke the words (a voiceprint's name); None: the soul's human
    heard: dict | None = None  # what the person heard of the soul's speech (`parse_heard`'s shape)

    @property
    def said(self) -> str | None:
        """The nudge's reason (naming its speaker), or for words sent alone `TYPED` (or "<speaker> said: ")
        and the words."""
        head = f"{self.speaker} said: " if self.speaker else TYPED
        if self.reason is not None:
            if self.speaker and not self.reason.startswith(head):
                return f"{self.reason} (said by {self.speaker})"
            return self.reason
        if self.words is None:
            return None
        return cut(" ".join((head + self.words).split()), MAX_REASON_CHARS)

    @property
    def told(self) -> str:
        """What woke the soul, in words: `said`, then what the person heard (`heard_line`)."""
        parts = [part for part in (self.said, heard_line(self.heard) if self.heard else None) if part]
        return " — ".join(parts)

    @property
    def plain(self) -> bool:
        """Only a reason: such nudges may be merged; one with words, a speaker or `heard` goes alone."""
        return self.words is None and self.speaker is None and self.heard is None

    def to_json(self) -> dict:
        fields = (("reason", self.reason), ("words", self.words), ("speaker", self.speaker), ("heard", self.heard))
        return {key: value for key, value in fields if value is not None}

    def rendered(self) -> "Nudge":
        """The nudge as the soul keeps it: with a reason, also when it came with words alone."""
        if self.reason is not None or self.words is None:
            return self
        return Nudge(self.said, self.words, self.speaker, self.heard)

    @classmethod
    def from_json(cls, data: dict) -> "Nudge":
        """The nudge in a kept line (NUDGES.jsonl); KeyError or TypeError when the line holds none."""
        if not isinstance(data, dict):
            raise TypeError(f"a nudge is a JSON object, not {type(data).__name__}")
        heard = data.get("heard") if isinstance(data.get("heard"), dict) else None
        if data.get("reason") is None and data.get("words") is None and heard is None:
            raise KeyError("reason")
        speaker = data.get("speaker") if isinstance(data.get("speaker"), str) else None
        return cls(data.get("reason"), data.get("words"), speaker, heard).rendered()


class BadNudge(ValueError):
    """A request body that is not a nudge; str() says what is wrong (the soul answers it with 400)."""


def parse_nudge(body) -> Nudge:
    """The nudge in a decoded JSON body, whitespace in `reason` collapsed; BadNudge naming the problem.

    `reason`, `words`, `heard`, or any of them together (`speaker` only beside `words`); without a
    reason the reason is rendered (`Nudge.told`), so the nudge the soul keeps always says what
    happened. Other keys are ignored: bodies from elsewhere may send more.
    """
    if not isinstance(body, dict):
        raise BadNudge(f"send a JSON object: {EXAMPLE}")
    reason, words = body.get("reason"), body.get("words")
    if words is not None:
        if not isinstance(words, str) or not words.strip():
            raise BadNudge('"words", when sent, must be a non-empty string: the person\'s exact words')
        words = words.strip()
        if len(words) > MAX_WORDS_CHARS:
            raise BadNudge(f'"words" is {len(words)} characters; at most {MAX_WORDS_CHARS}')
    speaker = parse_speaker(body.get("speaker"), words)
    heard = parse_heard(body.get("heard")) if body.get("heard") is not None else None
    if reason is None and words is None and heard is not None and not (heard["played"] or "cut" in heard):
        raise BadNudge('"heard" alone needs "played" (utterances heard in full) or "cut" (the one cut off)')
    if reason is None and (words is not None or heard is not None):
        return Nudge(None, words, speaker, heard).rendered()
    if not isinstance(reason, str) or not reason.strip():
        raise BadNudge(f'"reason" must be a non-empty string (or send only "words"): {EXAMPLE}')
    reason = " ".join(reason.split())
    if len(reason) > MAX_REASON_CHARS:
        raise BadNudge(f'"reason" is {len(reason)} characters; at most {MAX_REASON_CHARS}')
    return Nudge(reason, words, speaker, heard)


def parse_speaker(speaker, words) -> str | None:
    """Who spoke the words, whitespace collapsed and quoted (`quoted`); BadNudge when it is not a name."""
    if speaker is None:
        return None
    if not isinstance(speaker, str) or not speaker.strip():
        raise BadNudge('"speaker", when sent, must be a non-empty string: the name of who spoke the words')
    if words is None:
        raise BadNudge('"speaker" names who spoke the "words": send it beside them')
    speaker = quoted(speaker)
    if len(speaker) > MAX_SPEAKER_CHARS:
        raise BadNudge(f'"speaker" is {len(speaker)} characters; at most {MAX_SPEAKER_CHARS}')
    return speaker


def parse_heard(heard) -> dict:
    """`heard` as the soul keeps it: {"played": [...]} and/or {"cut": "...", "cut_fraction": 0..1}
    ({"played": []}: none of the speech was heard); BadNudge naming what is wrong. Unknown keys inside
    it are dropped."""
    if not isinstance(heard, dict):
        raise BadNudge('"heard" must be an object: {"played": ["..."], "cut": "...", "cut_fraction": 0.42}')
    played, cut_off, fraction = heard.get("played", []), heard.get("cut"), heard.get("cut_fraction")
    if not isinstance(played, list) or not all(isinstance(p, str) and p.strip() for p in played):
        raise BadNudge('"heard.played" must be a list of the utterances played in full (non-empty strings)')
    if cut_off is not None and (not isinstance(cut_off, str) or not cut_off.strip()):
        raise BadNudge('"heard.cut", when sent, must be the non-empty text of the utterance that was cut off')
    if fraction is not None:
        if cut_off is None:
            raise BadNudge('"heard.cut_fraction" says how much of "heard.cut" was played: send it with "cut"')
        if isinstance(fraction, bool) or not isinstance(fraction, (int, float)) or not 0 <= fraction <= 1:
            raise BadNudge('"heard.cut_fraction" must be a number from 0 to 1 (the part of "cut" played)')
    for text in [*played, cut_off or ""]:
        if len(text) > MAX_WORDS_CHARS:
            raise BadNudge(f'an utterance in "heard" is {len(text)} characters; at most {MAX_WORDS_CHARS}')
    kept = {"played": [" ".join(p.split()) for p in played[-MAX_PLAYED:]]}
    if cut_off is not None:
        kept["cut"] = " ".join(cut_off.split())
        if fraction is not None:
            kept["cut_fraction"] = round(float(fraction), 3)
    return kept


def heard_part(text: str, fraction: float) -> str:
    """The start of `text` a listener heard when `fraction` of it was played, ending on a whole word."""
    if fraction >= 1:
        return text
    end = round(len(text) * max(0.0, fraction))
    head = text[:end]
    if " " in head and end < len(text) and not text[end].isspace():
        head = head.rsplit(" ", 1)[0]  # a word half said was not heard as a word
    return head.rstrip(" ,;:")


def heard_line(heard: dict) -> str:
    """What the person heard, for the soul: where its speech was cut off, and what played in full."""
    parts = []
    cut_off, fraction = heard.get("cut"), heard.get("cut_fraction")
    if cut_off is not None and fraction is None:
        parts.append(f"you were cut off while saying \u2018{cut_off}\u2019")
    elif cut_off is not None:
        part = heard_part(cut_off, fraction)
        where = f"after \u2018{part}\u2019" if part else "before a word of it was heard"
        parts.append(f"you were cut off {where} (saying \u2018{cut_off}\u2019: the rest was never heard)")
    played = heard.get("played") or []
    if played:
        parts.append("Heard in full before that: " if cut_off else "heard in full: ")
        parts[-1] += ", ".join(f"\u2018{text}\u2019" for text in played)
    return ". ".join(parts)


# --- a person's words ----------------------------------------------------------------------

# How bodies that send only `reason` mark a person's words, each phrasing once: ours (the
# terminal body before `words` existed) and stackchan-soul's terminal body, which sends
# `大哥在终端里对你说："…"（想回应就用 speak）` (the name is its human's; the quotes vary).
_HEADS = (
    r"your human (?:typed|said)\s*[:：]",
    r"你的人类(?:打字)?说\s*[:：]",
    r"\S{1,20}?在终端里对你说\s*[:：]",
)
_PHRASINGS = (
    re.compile(r"your human (?:typed|said)\s*[:：]\s*(.+)", re.IGNORECASE | re.DOTALL),
    re.compile(r"你的人类(?:打字)?说\s*[:：]\s*(.+)", re.DOTALL),
    re.compile(r"\S{1,20}?在终端里对你说\s*[:：]\s*[\"“「](.+)[\"”」]\s*(?:[（(]想回应就用\s*speak[）)])?", re.DOTALL),
)
_HEAD = re.compile("|".join(f"(?:{head})" for head in _HEADS), re.IGNORECASE)


def _pieces(reason: str) -> list:
    """`reason` cut where a merged reason starts a new phrasing ("a; your human typed: b" -> two)."""
    pieces = []
    for part in reason.split(SEPARATOR):
        if pieces and not _HEAD.match(part.lstrip()):
            pieces[-1] += SEPARATOR + part  # a line that itself contains "; " stays whole
        else:
            pieces.append(part)
    return pieces


def words_in_reason(reason: str) -> list:
    """Every person's line a reason carries by a known phrasing, each whole and apart."""
    found = []
    for piece in _pieces(reason or ""):
        for phrasing in _PHRASINGS:
            match = phrasing.fullmatch(piece.strip())
            if match and match.group(1).strip():
                found.append(match.group(1).strip())
                break
    return found


def words_of(nudge: Nudge) -> list:
    """A person's words in a nudge: its `words` when it has them, else those its reason carries.

    The one rule for "a person spoke": the inbox (a person is answered within seconds), the
    drives (contact), the loop (what the brainstem hears) and `flock_verdict` all ask this.
    """
    return [nudge.words] if nudge.words else words_in_reason(nudge.reason or "")


def words_apart(nudge: Nudge) -> list:
    """The person's words to show beside the nudge's reason: those its reason does not quote.

    None for words sent alone (the rendered reason quotes them) or with a reason that quotes
    them (an older terminal body, a wake word); a reason's own phrasings are in it by definition.
    """
    return [words for words in words_of(nudge) if words not in nudge.told]


def quoted(text: str) -> str:
    """Text from no person (a list's words, an unchecked robot) made safe to quote in a reason:
    without ";", no merged piece of it can start a phrasing `words_in_reason` takes for a person's."""
    return " ".join((text or "").replace(";", ",").split())


# --- merging -------------------------------------------------------------------------------


def merge(nudges: list) -> Nudge:
    """One nudge for a group `pack` made: a person's line (or what was heard) alone, or plain reasons joined."""
    if len(nudges) == 1:
        return nudges[0]
    return Nudge(SEPARATOR.join(n.reason for n in nudges))


def pack(nudges: list, cap: int = MAX_REASON_CHARS) -> list:
    """Groups to send, in order: a nudge with words (or a speaker, or `heard`) alone; plain reasons together
    up to `cap` characters."""
    groups, size = [], 0
    for nudge in nudges:
        last = groups[-1] if groups else None
        fits = last is not None and last[-1].plain and size + len(SEPARATOR) + len(nudge.told) <= cap
        if nudge.plain and fits:
            last.append(nudge)
            size += len(SEPARATOR) + len(nudge.told)
        else:
            groups.append([nudge])
            size = len(nudge.told)
    return groups


def _capped(text: str, cap: int, what: str) -> str:
    if len(text) > cap:
        log.warning("a nudge's %s is %d characters; sending its first %d", what, len(text), cap)
    return cut(text, cap)


class RateLimitedLog:
    """Logs a kind of message at most once per `every_s`; the next one says how many were held back."""

    def __init__(self, logger: logging.Logger, every_s: float = 60.0, clock=time.monotonic):
        self.logger, self.every_s, self.clock = logger, every_s, clock
        self._last: dict = {}
        self._held: dict = {}

    def log(self, level: int, kind: str, message: str, *args) -> bool:
        """Log `message % args` unless a `kind` message went out within `every_s`; True when logged."""
        now, last = self.clock(), self._last.get(kind)
        if last is not None and now - last < self.every_s:
            self._held[kind] = self._held.get(kind, 0) + 1
            return False
        held = self._held.pop(kind, 0)
        suffix = f" ({held} more like it in the last {self.every_s:g} s not logged)" if held else ""
        self.logger.log(level, message + suffix, *args)
        self._last[kind] = now
        return True


# --- the sender ----------------------------------------------------------------------------


def _same(reason: str) -> str:
    return " ".join(reason.split()).lower()


class Debouncer:
    """Decides which nudges go out, and when. Pure logic on an injected clock."""

    def __init__(self, same_reason_window_s: float = 60.0, min_interval_s: float = 10.0, clock=time.monotonic):
        self.same_reason_window_s = same_reason_window_s
        self.min_interval_s = min_interval_s
        self.clock = clock
        self._accepted_at: dict[str, float] = {}
        self._pending: list[Nudge] = []
        self._last_sent: float | None = None

    def offer(
        self, reason: str | None, words: str | None = None, speaker: str | None = None, heard: dict | None = None
    ) -> bool:
        """Queue a nudge (a reason, a person's words with who spoke them, what was heard, or several);
        False when what it tells repeats one accepted within the window (or it is empty)."""
        reason, words = (reason or "").strip() or None, (words or "").strip() or None
        if reason is None and words is None and not heard:
            return False
        reason = reason and _capped(" ".join(reason.split()), MAX_REASON_CHARS, "reason")
        words = words and _capped(words, MAX_WORDS_CHARS, "words")
        nudge = Nudge(reason, words, (speaker or "").strip() or None if words else None, heard or None)
        key, now = _same(nudge.told), self.clock()
        last = self._accepted_at.get(key)
        if last is not None and now - last < self.same_reason_window_s:
            return False
        # Forget reasons whose window has passed, so the table stays small on a long-lived body.
        self._accepted_at = {k: t for k, t in self._accepted_at.items() if now - t < self.same_reason_window_s}
        self._accepted_at[key] = now
        self._pending.append(nudge)
        return True

    @property
    def pending(self) -> list:
        """What the waiting nudges tell, oldest first."""
        return [nudge.told for nudge in self._pending]

    def seconds_until_due(self) -> float | None:
        """None when nothing waits; else how long until the next nudge may go (0 = now)."""
        if not self._pending:
            return None
        if self._last_sent is None:
            return 0.0
        return max(0.0, self._last_sent + self.min_interval_s - self.clock())

    def take(self) -> list:
        """The waiting nudges, removed from the queue (call when `seconds_until_due()` is 0)."""
        taken, self._pending = self._pending, []
        return taken

    def sent(self):
        """Record that a nudge reached the soul now; the next waits `min_interval_s`."""
        self._last_sent = self.clock()


@dataclass
class NudgeEvent:
    """What happened to a nudge, for a body that shows it (the terminal paints these).

    kind: "delivered", "retrying" (the soul is down; kept), "rejected" (a 4xx;
    given up) or "collapsed" (a repeat within the window; not sent again).
    """

    kind: str
    reasons: list
    detail: str = ""
    retry_in_s: float = 0.0


class NudgeSender:
    """Delivers debounced nudges to one soul; run `run()` as a task, call `nudge()` from anywhere on the loop."""

    def __init__(
        self,
        url: str,
        token: str | None = None,
        debouncer: Debouncer | None = None,
        listener=None,
        clock=None,
        timeout_s: float = 10.0,
        first_backoff_s: float = 1.0,
        max_backoff_s: float = 30.0,
    ):
        self.url = url
        self.token = token
        self.debouncer = debouncer or Debouncer(clock=clock or time.monotonic)
        self.clock = clock or self.debouncer.clock
        self.listener = listener or (lambda event: None)
        self.timeout_s = timeout_s
        self.first_backoff_s = first_backoff_s
        self.max_backoff_s = max_backoff_s
        self._undelivered: list[Nudge] = []  # taken from the debouncer, not yet accepted by the soul
        self._retry_at = 0.0
        self._backoff_s = first_backoff_s
        self._wake = asyncio.Event()
        self.refusals = RateLimitedLog(log, clock=self.clock)

    def nudge(
        self,
        reason: str | None = None,
        words: str | None = None,
        speaker: str | None = None,
        heard: dict | None = None,
    ) -> bool:
        """Offer a nudge: what happened, a person's exact words (`words=`, with `speaker=` when known:
        the soul renders the reason), what the person heard of the soul's speech (`heard=`, the shape
        `parse_heard` keeps), or several; False when the debouncer collapsed it as a repeat."""
        accepted = self.debouncer.offer(reason, words, speaker, heard)
        if accepted:
            self._wake.set()
        else:
            told = Nudge((reason or "").strip() or None, (words or "").strip() or None, None, heard or None).told
            self.listener(NudgeEvent("collapsed", [told], "the same reason went out moments ago"))
        return accepted

    @property
    def waiting(self) -> list:
        """What every nudge not yet delivered tells, oldest first."""
        return [nudge.told for nudge in self._undelivered] + self.debouncer.pending

    def seconds_until_attempt(self) -> float | None:
        if self._undelivered:
            return max(0.0, self._retry_at - self.clock())
        return self.debouncer.seconds_until_due()

    async def _sleep_or_wake(self, seconds: float | None):
        self._wake.clear()
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(self._wake.wait(), seconds)

    async def run(self):
        """Deliver nudges until cancelled."""
        async with aiohttp.ClientSession() as session:
            while True:
                wait = self.seconds_until_attempt()
                if wait is None or wait > 0:
                    await self._sleep_or_wake(wait)
                    continue
                await self._attempt(session)

    async def _attempt(self, session: aiohttp.ClientSession):
        # What is not yet accepted stays in `_undelivered` while in flight, so a stop mid-send still knows it.
        self._undelivered = self._undelivered + self.debouncer.take()
        groups = deque(pack(self._undelivered))
        while groups:
            group = groups.popleft()
            status, detail = await self._post(session, merge(group))
            reasons = [nudge.told for nudge in group]
            if 200 <= status < 300:
                self._forget(group)
                self.debouncer.sent()
                self._backoff_s = self.first_backoff_s
                self.listener(NudgeEvent("delivered", reasons))
            elif status == 400 and len(group) > 1:
                groups.extendleft([nudge] for nudge in reversed(group))  # find the one it refuses
            elif 400 <= status < 500 and status not in RETRYABLE_4XX:
                self._forget(group)
                self.refusals.log(
                    logging.ERROR,
                    f"refused {status}",
                    "the soul at %s refused a nudge (it answered %s); gave up on: %s",
                    self.url,
                    detail,
                    merge(group).told,
                )
                self.listener(NudgeEvent("rejected", reasons, detail))
            else:
                self._retry_at = self.clock() + self._backoff_s
                self.listener(NudgeEvent("retrying", self.waiting, detail, retry_in_s=self._backoff_s))
                log.warning("nudge not delivered (%s); retrying in %g s", detail, self._backoff_s)
                self._backoff_s = min(self._backoff_s * 2, self.max_backoff_s)
                return

    def _forget(self, group: list):
        done = {id(nudge) for nudge in group}
        self._undelivered = [nudge for nudge in self._undelivered if id(nudge) not in done]

    async def _post(self, session: aiohttp.ClientSession, nudge: Nudge) -> tuple[int, str]:
        """(HTTP status, what happened); status 0 when the soul did not answer at all."""
        headers = {"Authorization": f"Bearer {self.token}"} if self.token else {}
        try:
            async with session.post(
                self.url, json=nudge.to_json(), headers=headers, timeout=aiohttp.ClientTimeout(total=self.timeout_s)
            ) as response:
                text = (await response.text()).strip()[:200]
                return response.status, f"{response.status} {text}".strip()
        except asyncio.TimeoutError:
            return 0, f"no answer within {self.timeout_s:g} s"
        except aiohttp.ClientConnectorError as error:
            return 0, f"cannot connect to {self.url}: {error.os_error.strerror or error.os_error}"
        except aiohttp.ClientError as error:
            return 0, f"{type(error).__name__}: {error}"
