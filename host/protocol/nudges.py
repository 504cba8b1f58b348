"""Waking the soul: the one nudge contract, for every body, the bridge and the soul.

A nudge is `POST <soul>/nudge` with `{"reason": "<what happened>"}` (Body
Protocol v1) or, as our documented addition, `{"words": "<a person's exact
words>"}` from a body that knows a person spoke or typed: the words once, and
the soul renders the reason from them ("your human typed: <words>", what a
typed line has always read). A body may send both (older terminal bodies, a
wake word: `someone called the robot by its wake word: "..."`). Two more
fields, also ours: `speaker` (who spoke the `words`; absent = the soul's
human, as before) and `heard` (what the person actually heard of the soul's
speech: `{"played": [...], "cut": "...", "cut_fraction": 0.42}`, sent when
speech was cut off; `cut`/`cut_fraction` only when one utterance was cut, and a
nudge may carry `heard` alone: the soul is told "you were cut off after '…'"). And `nudge_id`: a
string unique per sender that resends keep, so a nudge whose answer was lost and is sent again
reaches the soul once (the soul answers a repeat within its window as it answered the first).
And `codes`: what happened as codes beside the `reason`, so the soul tells it in its own language
(`[{"code": "could_not_hear", "about": {"body": "stackchan"}}]`, one per merged piece; a piece with
no code is `{"reason": "..."}`). The `reason` still says it in plain English, for a soul that knows
no codes; a soul that knows every code in a nudge tells it from its prompts (`CODES` lists them).

This module owns the nudge itself: the shape and its validation (`parse_nudge`,
the soul's /nudge, once), the length cap both sides share (`MAX_REASON_CHARS`),
the one rule for "a person spoke" (`words_of`: the `words` field, else the
phrasings known bodies use in a reason) and which of those words are shown
beside the reason (`words_apart`), and how a nudge's fields are told
(`told_in`): in `PLAIN` words for logs, senders and the kept reason, and in the
soul's own language by the soul, whose prompts hold the same phrases
(host/soul/prompts/, TEXT["nudge"]). Sending (debounce, merge, delivery) is
host/protocol/nudge_sender.py.
"""

import re
import uuid
from dataclasses import dataclass, field, replace

# One cap on both sides: the soul refuses a longer reason (400), the sender never merges past it.
MAX_REASON_CHARS = 2000
MAX_WORDS_CHARS = 2000
SEPARATOR = "; "  # between merged reasons
EXAMPLE = '{"reason": "<what happened>"} or {"words": "<a person\'s exact words>"}'
MAX_SPEAKER_CHARS = 64
MAX_PLAYED = 20  # utterances in heard.played; older ones are not news
# A nudge id is a name, not text: short and plain, so the soul can keep thousands and log them as they are.
MAX_NUDGE_ID_CHARS = 64
_NUDGE_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:-]*")
_CODE = re.compile(r"[a-z][a-z0-9_]{0,39}")
MAX_CODES = 20  # pieces of one merged nudge


def new_nudge_id() -> str:
    """A fresh nudge id: random, so no two senders (nor two runs of one) ever share one."""
    return uuid.uuid4().hex


def cut(text: str, cap: int) -> str:
    """`text`, or its first `cap - 1` characters and "…" when it is longer than `cap`."""
    return text if len(text) <= cap else text[: cap - 1] + "…"


# How a nudge's fields are told, in plain English: for logs, the sender's debounce and the reason kept
# for a nudge sent without one. The soul tells them in its own language: its prompts hold these keys
# (host/soul/prompts/, TEXT["nudge"]) and it calls `told_in` with them.
PLAIN = {
    "typed": "your human typed: {words}",  # words sent alone: what a typed line has always read
    "said": "{speaker} said: {words}",  # words sent alone, with who spoke them
    "said_by": "{reason} (said by {speaker})",  # a body's own reason, beside words someone named spoke
    # Reasons the StackChan adapter sends beside the words they quote (adapters/stackchan/body.py), and
    # reasons our bodies send alone: a reason that reads exactly so is told in the soul's words.
    "typed_to_robot": 'someone typed to the robot: "{words}"',
    "wake_word": 'someone called the robot by its wake word: "{words}"',
    "wake_word_alone": "someone called the robot by its wake word",  # the adapter, no words heard
    "cut_off": "the person cut the robot off while it spoke",  # the adapter, beside `heard`
    "tapped": "someone tapped my screen while I was speaking, so I stopped",  # the firmware, beside `heard`
    # what the person heard of the soul's speech (`heard`)
    "cut_while": "you were cut off while saying \u2018{cut}\u2019",
    "cut_after": "you were cut off after \u2018{part}\u2019 (saying \u2018{cut}\u2019: the rest was never heard)",
    "cut_before": "you were cut off before a word of it was heard (saying \u2018{cut}\u2019: the rest was never heard)",
    "played_before_cut": "Heard in full before that: {played}",
    "played": "heard in full: {played}",
    "quote": "\u2018{text}\u2019",  # one utterance of `played`
    "between_quotes": ", ",
    "between_sentences": ". ",  # the cut, then what played in full
    "between_parts": " \u2014 ",  # what happened, then what was heard
    # Codes (a nudge's `codes`): what ears, the firmware and the flock's voice tell, each with its `about`.
    "could_not_hear": "someone spoke to me ({body} heard it) but I couldn't make out the words",
    "recogniser_failed": "someone spoke to me ({body} heard it) but I couldn't make out the words: {why}",
    "answer_unspoken": "I answered what someone said to {body}, but it could not speak: {error}",
    "body_could_not_hear": "someone spoke to me but I couldn't hear the words: {why}",  # the firmware's
    "flock_asks_start": "your flock asks: the Sentry needs your OK to start on '{item}' (item {item_id})",
    "flock_asks_answer": "your flock asks: {crow} needs your OK on the answer to '{item}' (item {item_id})",
    "flock_answered": "your flock says: the flock answered '{item}': {answer}",
    "flock_dropped": "your flock says: the flock dropped '{item}' ({why})",
    "flock_asks_flag": "your flock asks: the Sentry flagged {crow} ('{why}') and quarantined it: uphold the flag, or release {crow}? Unanswered, {crow} stays quarantined (flag {item_id})",
}
CODES = (
    "could_not_hear",
    "recogniser_failed",
    "answer_unspoken",
    "body_could_not_hear",
    "flock_asks_start",
    "flock_asks_answer",
    "flock_answered",
    "flock_dropped",
    "flock_asks_flag",
)
BODY_REASONS = ("typed_to_robot", "wake_word")  # beside the words they quote
BODY_REASONS_ALONE = ("wake_word_alone", "cut_off", "tapped")


def _phrase(phrases: dict, key: str, **fields) -> str:
    return cut(" ".join(phrases[key].format(**fields).split()), MAX_REASON_CHARS)


def coded(code: str, **about: str) -> tuple:
    """The `codes` of a nudge that tells one coded thing (`about`: its parts, as strings)."""
    return ({"code": code, "about": dict(about)},)


def plain_reason(codes: tuple) -> str:
    """What `codes` tell in `PLAIN` English: the `reason` a body sends beside them."""
    told = codes_in(codes, PLAIN)
    if told is None:
        raise ValueError(f"no plain phrasing for the codes {codes!r}")
    return told


def codes_in(codes: tuple, phrases: dict) -> str | None:
    """What `codes` tell in `phrases`, merged pieces joined as merged reasons are; None when one is a
    code `phrases` does not know or whose `about` lacks a part its phrasing names (the reason is told)."""
    pieces = []
    for piece in codes:
        if "code" not in piece:
            pieces.append(piece["reason"])
            continue
        phrasing = phrases.get(piece["code"])
        if not isinstance(phrasing, str):
            return None
        try:
            pieces.append(phrasing.format(**piece.get("about", {})))
        except (KeyError, IndexError):
            return None
    return cut(" ".join(SEPARATOR.join(pieces).split()), MAX_REASON_CHARS)


def said_in(nudge: "Nudge", phrases: dict) -> str | None:
    """What happened, in `phrases` (`PLAIN`'s keys): words sent alone as typed (or said by their
    speaker); a reason that is one of our phrasings (of the nudge's own words: the one rendered for
    words sent alone, a body's in `BODY_REASONS`; or without words: `BODY_REASONS_ALONE`) told in
    `phrases`; any other reason as the body sent it, naming the speaker when there is one. A nudge with
    `codes` (and no words) is told from them when `phrases` knows them all (`codes_in`)."""
    if nudge.codes and nudge.words is None:
        told = codes_in(nudge.codes, phrases)
        if told is not None:
            return told
    if nudge.words is not None:
        fields = {"words": nudge.words, "speaker": nudge.speaker}
        spoken = "said" if nudge.speaker else "typed"
        if nudge.reason is None or nudge.reason == _phrase(PLAIN, spoken, **fields):
            return _phrase(phrases, spoken, **fields)  # words sent alone (the kept reason rendered from them)
        for key in BODY_REASONS:
            if nudge.reason == _phrase(PLAIN, key, **fields):
                told = _phrase(phrases, key, **fields)
                return _phrase(phrases, "said_by", reason=told, speaker=nudge.speaker) if nudge.speaker else told
        if nudge.speaker:
            return _phrase(phrases, "said_by", reason=nudge.reason, speaker=nudge.speaker)
    for key in BODY_REASONS_ALONE:
        if nudge.words is None and nudge.reason == PLAIN[key]:
            return phrases[key]
    return nudge.reason


def heard_in(heard: dict, phrases: dict) -> str:
    """What the person heard of the soul's speech, in `phrases`: where it was cut off, what played in full."""
    parts = []
    cut_off, fraction = heard.get("cut"), heard.get("cut_fraction")
    if cut_off is not None and fraction is None:
        parts.append(phrases["cut_while"].format(cut=cut_off))
    elif cut_off is not None and fraction is not None:
        part = heard_part(cut_off, fraction)
        key = "cut_after" if part else "cut_before"
        parts.append(phrases[key].format(part=part, cut=cut_off))
    played = heard.get("played") or []
    if played:
        quotes = phrases["between_quotes"].join(phrases["quote"].format(text=text) for text in played)
        parts.append(phrases["played_before_cut" if cut_off else "played"].format(played=quotes))
    return phrases["between_sentences"].join(parts)


def told_in(nudge: "Nudge", phrases: dict) -> str:
    """What woke the soul, in `phrases`: what happened (`said_in`), then what the person heard (`heard_in`)."""
    parts = [said_in(nudge, phrases), heard_in(nudge.heard, phrases) if nudge.heard else None]
    return phrases["between_parts"].join(part for part in parts if part)


@dataclass(frozen=True)
class Nudge:
    reason: str | None  # what happened; None only in a nudge a body sends with just `words` or `heard`
    words: str | None = None  # a person's exact words, when the body knows a person spoke or typed
    speaker: str | None = None  # who spoke the words (a voiceprint's name); None: the soul's human
    heard: dict | None = None  # what the person heard of the soul's speech (`parse_heard`'s shape)
    # Which nudge this is, for the soul to count it once; not part of what it tells, so not compared.
    nudge_id: str | None = field(default=None, compare=False)
    codes: tuple | None = None  # what the reason says, as codes the soul tells in its language (`parse_codes`)

    @property
    def said(self) -> str | None:
        """What happened, in `PLAIN` words (`said_in`)."""
        return said_in(self, PLAIN)

    @property
    def told(self) -> str:
        """What woke the soul, in `PLAIN` words (`told_in`)."""
        return told_in(self, PLAIN)

    @property
    def plain(self) -> bool:
        """Only a reason: such nudges may be merged; one with words, a speaker, `heard` or its own id
        (a robot's, which the bridge passes on: the robot may send it again) goes alone."""
        return self.words is None and self.speaker is None and self.heard is None and self.nudge_id is None

    def to_json(self) -> dict:
        fields = (
            ("reason", self.reason),
            ("words", self.words),
            ("speaker", self.speaker),
            ("heard", self.heard),
            ("nudge_id", self.nudge_id),
            ("codes", list(self.codes) if self.codes else None),
        )
        return {key: value for key, value in fields if value is not None}

    def rendered(self) -> "Nudge":
        """The nudge as the soul keeps it: with a reason, also when it came with words alone."""
        if self.reason is not None or self.words is None:
            return self
        return replace(self, reason=self.said)

    @classmethod
    def from_json(cls, data: dict) -> "Nudge":
        """The nudge in a kept line (NUDGES.jsonl); KeyError or TypeError when the line holds none."""
        if not isinstance(data, dict):
            raise TypeError(f"a nudge is a JSON object, not {type(data).__name__}")
        heard = data.get("heard") if isinstance(data.get("heard"), dict) else None
        if data.get("reason") is None and data.get("words") is None and heard is None:
            raise KeyError("reason")
        speaker = data.get("speaker") if isinstance(data.get("speaker"), str) else None
        nudge_id = data.get("nudge_id") if isinstance(data.get("nudge_id"), str) else None
        try:
            codes = parse_codes(data.get("codes"))
        except BadNudge:
            codes = None  # a kept line is read as well as it can be
        return cls(data.get("reason"), data.get("words"), speaker, heard, nudge_id, codes).rendered()


class BadNudge(ValueError):
    """A request body that is not a nudge; str() says what is wrong (the soul answers it with 400)."""


def parse_nudge(body) -> Nudge:
    """The nudge in a decoded JSON body, whitespace in `reason` collapsed; BadNudge naming the problem.

    `reason`, `words`, `heard`, or any of them together (`speaker` only beside `words`); without a
    reason the reason is rendered (`Nudge.told`), so the nudge the soul keeps always says what
    happened. `nudge_id` may come with any of them (`parse_nudge_id`). Other keys are ignored: bodies
    from elsewhere may send more.
    """
    if not isinstance(body, dict):
        raise BadNudge(f"send a JSON object: {EXAMPLE}")
    nudge_id = parse_nudge_id(body.get("nudge_id"))
    codes = parse_codes(body.get("codes"))
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
        return Nudge(None, words, speaker, heard, nudge_id, codes).rendered()
    if reason is None and codes is not None:
        told = codes_in(codes, PLAIN)
        if told is not None:  # codes alone: the reason kept is what they tell in plain words
            return Nudge(told, None, None, None, nudge_id, codes)
    if reason is None and "words" in body:  # {"words": null}: the words were meant, and are missing
        raise BadNudge('"words" is null: send the person\'s exact words as a string (or a "reason")')
    if not isinstance(reason, str) or not reason.strip():
        raise BadNudge(f'"reason" must be a non-empty string (or send only "words"): {EXAMPLE}')
    reason = " ".join(reason.split())
    if len(reason) > MAX_REASON_CHARS:
        raise BadNudge(f'"reason" is {len(reason)} characters; at most {MAX_REASON_CHARS}')
    return Nudge(reason, words, speaker, heard, nudge_id, codes)


def parse_codes(codes) -> tuple | None:
    """A nudge's `codes` as sent (None when it has none); BadNudge when they are not a list of
    `{"code": "<name>", "about": {"<name>": "<text>"}}` or `{"reason": "<text>"}` pieces."""
    if codes is None:
        return None
    if not isinstance(codes, list) or not 0 < len(codes) <= MAX_CODES:
        raise BadNudge(
            f'"codes", when sent, must be a list of 1 to {MAX_CODES} pieces: [{{"code": "...", "about": {{}}}}]'
        )
    kept: list[dict] = []
    for piece in codes:
        if isinstance(piece, dict) and set(piece) == {"reason"} and isinstance(piece["reason"], str):
            kept.append({"reason": " ".join(piece["reason"].split())})
            continue
        if not isinstance(piece, dict) or not isinstance(piece.get("code"), str) or not _CODE.fullmatch(piece["code"]):
            raise BadNudge('each of "codes" is {"code": "<lower_case_name>", "about": {...}} or {"reason": "..."}')
        about = piece.get("about", {})
        if not isinstance(about, dict) or not all(
            isinstance(k, str) and _CODE.fullmatch(k) and isinstance(v, str) and len(v) <= MAX_WORDS_CHARS
            for k, v in about.items()
        ):
            raise BadNudge(f'a code\'s "about" maps lower_case names to texts of at most {MAX_WORDS_CHARS} characters')
        kept.append({"code": piece["code"], "about": {k: " ".join(v.split()) for k, v in about.items()}})
    return tuple(kept)


def parse_nudge_id(nudge_id) -> str | None:
    """A nudge's id as sent, or None when it has none; BadNudge when it is not one: a string of 1 to 64
    letters, digits and . _ : - (starting with a letter or digit)."""
    if nudge_id is None:
        return None
    if not isinstance(nudge_id, str):
        raise BadNudge(f'"nudge_id", when sent, must be a string, not {type(nudge_id).__name__}')
    if len(nudge_id) > MAX_NUDGE_ID_CHARS:
        raise BadNudge(f'"nudge_id" is {len(nudge_id)} characters; at most {MAX_NUDGE_ID_CHARS}')
    if not _NUDGE_ID.fullmatch(nudge_id):
        raise BadNudge('"nudge_id" may hold only letters, digits and . _ : - (and start with a letter or digit)')
    return nudge_id


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
    kept: dict = {"played": [" ".join(p.split()) for p in played[-MAX_PLAYED:]]}
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
    pieces: list[str] = []
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
