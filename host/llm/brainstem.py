"""The brainstem: a `Model` with no model behind it.

It keeps a soul's rhythm when no language model is configured, or while the
configured one keeps failing. It cannot think, and says so plainly. Each
waking it makes the same few calls, each only if the tool exists:

1. body_status — is the body there?
2. then, in one step: express (sleepy at night, glad when someone spoke,
   neutral otherwise; only if the body answered), speak each reminder that
   is due (a fixed sentence with the person's own words: `reminder_sentence`),
   say each of the flock's asks once (`flock_asks`: the `FLOCK_ASKS` head the
   flock's nudges open with; TEXT["brainstem"]["flock_ask"]),
   speak once to each thing the human said ("I heard you, I will think about
   it when my mind is back"), one diary line with what woke it and what it
   heard, and sleep(the default).

It reads what woke it from `situation()`, a callable the soul hands it, so it
never parses the snapshot's prose. Its words are the soul's too: this seam never
imports the soul, so the soul hands them over in its language (`words`: its
prompts' TEXT["brainstem"], host/soul/prompts/), as a mapping with the keys
answer ({words}: what the human said), diary ({why}: what woke it), heard
({words}: appended to the diary line), nothing (the `why` when nothing but the
alarm woke it), rest (its reply when it has nothing left to do), reminder ({words}: a
reminder that is due, said to its person, host/soul/reminders/), reminder_named (the same,
with {who}: the person's name) and flock_ask ({ask}:
what the flock asks the person, docs/flock-and-soul.md).

An ask counts as said only when the body's speak answered 2xx: a waking that says one sleeps a
step later, once the brainstem has read the speak's result. A failed one is said again at the next
waking (never twice in one: no storm); one said is never said again.

What it said survives a restart (`memory`, the soul's soulDir/BRAINSTEM.json, 0600: it holds a
person's words): the asks said, the asks owed (a failed speak, or one still out when the process
died: said again rather than never, as the nudge that brought it left the inbox long ago), and the
words answered. The flock delivers at least once, so the same ask can come again after a restart.
It stays small: an ask is forgotten a week after it last came, words a day after they were
answered, and of each only the newest MOST_KEPT are kept. A file that cannot be read is one log
line and an empty memory, never a soul that cannot start.
"""

import itertools
import json
import logging
import secrets
from dataclasses import dataclass, field
from pathlib import Path
from collections.abc import Callable, Mapping

from soulstack.clocks import Clock
from soulstack.llm.types import Message, Reply, TextBlock, ToolCall, ToolResult, Usage
from soulstack.private_files import write_atomically

log = logging.getLogger(__name__)

# The head every flock nudge that needs the person opens with (host/flock/voice/robot.py writes it
# from here, docs/flock-and-soul.md documents it): the flock's marker for "this asks the person".
FLOCK_ASKS = "your flock asks: "
MERGED = "; "  # how merged reasons are joined (the nudge contract's SEPARATOR; llm may not import protocol)

MEMORY_FILE = "BRAINSTEM.json"  # in soulDir: what it said, so a restart repeats nothing (the soul hands the path)
ASK_KEPT_S = 7 * 86400  # an ask the flock no longer sends is forgotten after a week
WORDS_KEPT_S = 86400  # the same words are answered at most once a day
MOST_KEPT = 100  # of asks, and of words: the newest


@dataclass
class Situation:
    """What the brainstem needs to know about the current waking."""

    reasons: list = field(default_factory=list)  # what the nudges that woke it said (the flock's asks are read here)
    heard: list = field(default_factory=list)  # the human's own words this waking
    night: bool = False
    default_sleep_minutes: float = 20
    step: int = 0  # model calls already made in this waking (0: it just woke)
    reminders: list = field(default_factory=list)  # (key, words, name) of each reminder due: said once per key
    why: list = field(default_factory=list)  # why it woke, in the soul's words, for the diary (else: reasons)


class Brainstem:
    provider = "brainstem"
    model_id = "brainstem"

    def __init__(
        self,
        situation: Callable[[], Situation] | None = None,
        *,
        words: Mapping[str, str],
        memory: Path | None = None,
        clock: Clock | None = None,
    ):
        self.situation = situation or Situation
        self.words = words
        self.memory = memory  # the file that keeps what it said across a restart; None: kept in memory only
        self.clock = clock or Clock()
        self._answered: dict = {}  # a person's words -> when (clock.time()) they were answered
        self._reminded: set = set()  # the keys of the reminders it said (REMINDERS.json keeps their delivery)
        self._asks_out: dict = {}  # speak call id -> the flock's ask it says, its result not seen yet
        self._words_out: dict = {}  # speak call id -> the person's words it answers, its result not seen yet
        self._asks_said: set = set()  # asks the body's speak took (2xx): never said again
        self._asks_owed: list = []  # asks whose speak failed: said again at the next waking
        self._asks_came: dict = {}  # ask (said, owed or out) -> when it last came: how long it is kept
        self._ids = itertools.count(1)
        # Its calls' ids stay in the session across restarts, and the Messages API refuses a request that
        # repeats one: each life's ids carry their own prefix.
        self._life = secrets.token_hex(4)
        self._kept = self._load()

    @property
    def asks_said(self) -> frozenset:
        """The flock's asks the body's speak took (2xx): each said once, never again."""
        return frozenset(self._asks_said)

    def _call(self, name: str, **arguments) -> ToolCall:
        return ToolCall(f"brainstem_{self._life}_{next(self._ids):05d}", name, arguments)

    async def complete(self, system, messages, tools=None, *, tool_choice=None, max_tokens=4096, cache=False) -> Reply:
        self._forget()
        reply = self._step({tool.name for tool in tools or []}, messages)
        self._keep()  # what this step said or owes is on disk before the soul acts on the reply
        return reply

    def _step(self, names: set, messages: list) -> Reply:
        now, words = self.situation(), self.words
        self._asks_came.update(
            dict.fromkeys(flock_asks(now.reasons, words.get("flock_asks_head", FLOCK_ASKS)), self.clock.time())
        )  # the flock still sends them
        if now.step == 0:
            self._words_out.clear()  # a new waking: the last one's turn ended, its speaks were made
        heard_back = self._read_results(messages)
        if now.step == 0 and "body_status" in names:
            return self._reply([self._call("body_status")])
        if now.step == 0 or (now.step == 1 and _previous_calls(messages) == ["body_status"]):
            return self._reply(self._live(names, now, words, body_answered=now.step == 0 or _status_answered(messages)))
        # The waking's acts are done. Words that arrived since get their answer; otherwise rest.
        answers = self._answers(names, now, words)
        if answers or heard_back:  # a waking that answered words or said an ask sleeps once it read the body's answer
            answering = any(isinstance(block, ToolCall) and block.id in self._words_out for block in answers)
            sleep = [] if answering else [self._call("sleep", minutes=now.default_sleep_minutes)]
            return self._reply(answers + sleep)
        return Reply(Message("assistant", [TextBlock(words["rest"])]), "end_turn", Usage(), self.model_id)

    def _live(self, names, now: Situation, words, body_answered: bool) -> list:
        calls = []
        if "express" in names and body_answered:
            feeling = "sleepy" if now.night else ("happy" if now.heard else "neutral")
            calls.append(self._call("express", emotion=feeling))
        owed, self._asks_owed = self._asks_owed, []
        asking = self._asks(names, owed + flock_asks(now.reasons, words.get("flock_asks_head", FLOCK_ASKS)), words)
        calls += asking + self._answers(names, now, words)
        if "diary" in names:
            entry = words["diary"].format(why="; ".join(now.why or now.reasons) or words["nothing"])
            if now.heard:
                entry += said(words["heard"], " / ".join(f"\u201c{w}\u201d" for w in now.heard))
            calls.append(self._call("diary", entry=entry))
        if not asking and not self._words_out:  # with a speak out it sleeps a step later, once it is answered
            calls.append(self._call("sleep", minutes=now.default_sleep_minutes))
        return calls

    def _answers(self, names, now: Situation, words) -> list:
        """One answer per thing the human said, never twice for the same words: spoken
        through the body, or, for a body with no voice, said as the reply's own text
        (which is what a voice pipeline talking to the soul hears)."""
        answers = self._asks(names, flock_asks(now.reasons, words.get("flock_asks_head", FLOCK_ASKS)), words)
        for key, what, who in now.reminders:
            if key in self._reminded:
                continue
            self._reminded.add(key)
            sentence = reminder_sentence(words, what, who)
            answers.append(self._call("speak", text=sentence) if "speak" in names else TextBlock(sentence))
        for heard in now.heard:
            if heard in self._answered:
                continue
            self._answered[heard] = self.clock.time()
            answer = said(words["answer"], heard)
            if "speak" in names:
                call = self._call("speak", text=answer)
                self._words_out[call.id] = heard
                answers.append(call)
            else:
                answers.append(TextBlock(answer))
        return answers

    def _asks(self, names, asks: list, words) -> list:
        """A speak for each of the flock's asks not said and not out already; without speak, none: the
        reply's own text reaches no one who could answer."""
        if "speak" not in names:
            return []
        calls = []
        for ask in dict.fromkeys(asks):
            self._asks_came.setdefault(ask, self.clock.time())
            if ask in self._asks_said or ask in self._asks_out.values() or ask in self._asks_owed:
                continue
            call = self._call("speak", text=words["flock_ask"].format(ask=ask))
            self._asks_out[call.id] = ask
            calls.append(call)
        return calls

    def _read_results(self, messages: list) -> bool:
        """Counts an ask said when its speak's result (in the last message) is a success; a failed one
        is owed. Words are answered once their speak has a result, whichever. Whether any was read."""
        read = False
        for block in messages[-1].content if messages and (self._asks_out or self._words_out) else []:
            if not isinstance(block, ToolResult):
                continue
            if self._words_out.pop(block.tool_call_id, None) is not None:
                read = True
                continue
            ask = self._asks_out.pop(block.tool_call_id, None)
            if ask is None:
                continue
            read = True
            if block.is_error:
                log.warning("the brainstem could not say the flock's ask; it tries again next waking: %s", ask)
                self._asks_owed.append(ask)
            else:
                log.info("the brainstem said the flock's ask: %s", ask)
                self._asks_said.add(ask)
        return read

    def _load(self) -> dict:
        """What a previous process kept (nothing when there is no file, or one that cannot be read)."""
        if self.memory is None:
            return {}
        try:
            kept = json.loads(Path(self.memory).read_bytes())
            said, owed, answered = (_times(kept[key]) for key in ("said", "owed", "answered"))
        except FileNotFoundError:
            return {"said": {}, "owed": {}, "answered": {}}  # nothing said yet: nothing to write
        except (OSError, ValueError, KeyError, TypeError) as error:
            log.warning(
                "%s cannot be read (%s); the brainstem starts with no memory of what it said", MEMORY_FILE, error
            )
            return {}  # differs from anything kept: the next step rewrites the file whole
        self._asks_said, self._asks_owed, self._answered = set(said), list(owed), answered
        self._asks_came = {**said, **owed}
        return kept

    def _forget(self) -> None:
        """Asks that stopped coming a week ago, words answered a day ago, all but the newest MOST_KEPT."""
        now = self.clock.time()
        out = set(self._asks_out.values())
        came = {ask: t for ask, t in self._asks_came.items() if now - t < ASK_KEPT_S or ask in out}
        self._asks_came = dict(sorted(came.items(), key=lambda item: item[1])[-MOST_KEPT:])
        self._asks_said &= self._asks_came.keys()
        self._asks_owed = [ask for ask in self._asks_owed if ask in self._asks_came]
        answered = {words: t for words, t in self._answered.items() if now - t < WORDS_KEPT_S}
        self._answered = dict(sorted(answered.items(), key=lambda item: item[1])[-MOST_KEPT:])

    def _keep(self) -> None:
        """Write what it said and owes, when that changed."""
        out = set(self._asks_out.values())
        owes = [*self._asks_owed, *out]  # an ask still out when the process dies is owed: said again, not never
        kept = {
            "said": {ask: t for ask, t in self._asks_came.items() if ask in self._asks_said},
            "owed": {ask: self._asks_came[ask] for ask in owes if ask in self._asks_came},
            # Words whose speak is out when the process dies are answered again after the restart, not never
            # (the soul's inbox shows them again: host/soul/nudges/inbox.py). A copy: the next step's differ.
            "answered": {w: t for w, t in self._answered.items() if w not in self._words_out.values()},
        }
        if self.memory is None or kept == self._kept:
            return
        try:
            write_atomically(self.memory, json.dumps(kept, ensure_ascii=False, indent=1).encode())
        except OSError as error:  # a full disk: it goes on saying things, and says it could not keep them
            log.warning(
                "%s could not be written (%s): a restart may repeat what the brainstem said", MEMORY_FILE, error
            )
            return
        self._kept = kept

    def _reply(self, blocks: list) -> Reply:
        # Text before tool calls, the order a model writes them in.
        ordered = [b for b in blocks if isinstance(b, TextBlock)] + [b for b in blocks if not isinstance(b, TextBlock)]
        return Reply(Message("assistant", ordered), "tool_use", Usage(), self.model_id)


# A sentence's own end: the template's full stop after a quote that already ends one is dropped
# ("I heard you: “what is your name?”." reads as a stutter).
SENTENCE_ENDS = (".", "?", "!", "\u2026", "\u3002", "\uff1f", "\uff01")
STOPS = (".", "\u3002")


def said(template: str, text: str) -> str:
    """`template` with `text` as its {words}, without a second full stop after text that ends a sentence."""
    out = template.format(words=text)
    bare = text.rstrip("\u201d\"'")
    if not bare.endswith(SENTENCE_ENDS):
        return out
    for stop in STOPS:
        for quote in ("\u201d", ""):
            out = out.replace(f"{text}{quote}{stop}", f"{text}{quote}", 1)
    return out


def reminder_sentence(words: Mapping[str, str], what: str, who: str) -> str:
    """The fixed sentence a reminder is said in when no mind words it: `words` are the soul's (TEXT["brainstem"]).

    It is said aloud to the person it is for, so it speaks to them ("Time to stretch."), by name when
    the reminder has one (`who`; "" for the default "my human", which is no way to address anyone)."""
    what = what.strip().rstrip(".!。！")  # the sentence ends itself
    if who:
        return words["reminder_named"].format(who=who, words=what)
    return words["reminder"].format(words=what)


def flock_asks(reasons: list, head: str = FLOCK_ASKS) -> list:
    """What the flock asks the person in what woke the soul: each piece of a (merged) reason that
    opens with `FLOCK_ASKS` (or `head`, the soul's own words for it: a coded ask told in its language),
    without the head."""
    return [
        piece[len(start) :].strip()
        for reason in reasons
        for piece in reason.split(MERGED)
        for start in dict.fromkeys((FLOCK_ASKS, head))
        if piece.startswith(start) and piece[len(start) :].strip()
    ]


def _times(value) -> dict:
    """A kept {text: when} mapping, checked: a TypeError for anything else."""
    if not isinstance(value, dict) or not all(
        isinstance(t, (int, float)) and not isinstance(t, bool) for t in value.values()
    ):
        raise TypeError("not a mapping of texts to times")
    return dict(value)


def _previous_calls(messages: list) -> list:
    """Names of the tools called by the assistant message just before the last user message."""
    if len(messages) < 2 or messages[-2].role != "assistant":
        return []
    return [call.name for call in messages[-2].tool_calls()]


def _status_answered(messages: list) -> bool:
    """Whether the body answered the body_status call just made (a failure comes back as an error)."""
    if len(messages) < 2 or messages[-2].role != "assistant":
        return True  # no status call was made: try to express anyway; a failure is reported honestly
    ids = {call.id for call in messages[-2].tool_calls() if call.name == "body_status"}
    if not ids:
        return True
    for block in messages[-1].content:
        if isinstance(block, ToolResult) and block.tool_call_id in ids:
            return not block.is_error
    return False
