"""The nest harness: every posted message goes through here.

It checks who may post, has Jev tag the message, stores and streams it, lets
the Sentry flag a breach, keeps expectations, and invokes exactly one crow for
a message that calls for an answer. Nothing here runs on a timer except the
watcher of expectations, and it invokes a crow only for a missed expectation
Jev confirms.

Which messages invoke a crow (exactly one each):
- a `request` posted through the API (or by the owner): the addressed crow,
  else one picked core-first then borrowed; it is expected to claim or decline;
- a `claim` of a request: the claimer, to do the work and deliver it;
- a `deliver` on a conspiracy request while fewer than `conspiracy_cap` crows
  claimed it: one more crow, asked to claim it with a distinct lens;
- a harness `nudge`: the nudged crow.
Nothing else invokes a crow: a `say`, `refer` or `decline` ends the chain, and
a crow's `request` from the model does not start one (no idle loops).

solo/split requests: the first claim wins; a later claim is refused (409 from
the API; a crow's model reply that tries it gets an honest harness `say`).
"""

import asyncio
import logging
from dataclasses import dataclass, replace
from typing import Protocol

from soulstack.flock.nests import rules
from soulstack.serving import BadRequest
from soulstack.clocks import Clock, rfc3339
from soulstack.flock.jev.llm import JevBackendError
from soulstack.flock.jev.context import OWNER_KINDS, WINDOW, nest_context
from soulstack.flock.jev.tagging import DEFAULT_BAND
from soulstack.flock.payloads import NestMessage
from soulstack.flock.rows import NestRow, OpenFlag
from soulstack.llm.types import Message, ModelError

log = logging.getLogger(__name__)


QUARANTINED_UNTIL = " {crow} is quarantined until the owner decides."


@dataclass
class NestConfig:
    band: float = DEFAULT_BAND  # the local Jev's high band, chosen on its calibration set (jev/evaluate.py)
    claim_within_s: float = 300.0  # a request expects a claim or decline this soon
    deliver_within_s: float = 1800.0  # a claim expects a deliver this soon
    verdict_timeout_s: float = 600.0  # an unanswered flag keeps its quarantine
    messages_per_minute: int = 30  # per author; one more is a strike
    conspiracy_cap: int = 3
    context_messages: int = 12
    crow_max_tokens: int = 1024
    relearn_after_s: float = 30.0  # Jev re-fits this long after a correction (those made meanwhile join it)


class FlockForNests(Protocol):
    """All the harness asks of the flock (soulstack.flock.lists.flow.Flock provides it)."""

    clock: Clock
    has_model: bool  # False: the brainstem, and no crow is invoked

    def nest(self, nest_id: str) -> NestRow | None: ...

    def pick_crows(self, nest_id: str, count: int, exclude=()) -> list: ...  # [(name, borrowed)]

    async def complete(self, system, messages, tools=None, **options): ...  # the flock's one model call

    async def triage_request(self, text: str) -> dict | None: ...  # the Sentry's call; ModelError propagates

    def spawn(self, coroutine) -> None: ...  # one of the flock's tasks: its stop() ends ours too


class Harness:
    """`pranks` counts messages per author: the requester strikes of the flock's ledger, keyed by author."""

    def __init__(self, flock: FlockForNests, nest_store, messages, tagger, config: NestConfig, pranks):
        # messages: the nests' NestLog (nests/messages.py); `log` is this module's logger
        self.flock, self.store, self.messages, self.tagger, self.config = flock, nest_store, messages, tagger, config
        self.clock = flock.clock
        self.pranks = pranks
        self.changed = asyncio.Event()  # wakes the watcher when an expectation or question is added
        self.flag_listeners: list = []  # callables(OpenFlag), e.g. the robot's voice; never blocking

    # --- posting -----------------------------------------------------------
    async def post(self, nest_id: str, fields: dict, from_api: bool = True) -> NestMessage:
        """Check, tag, store, stream and act on one message. BadRequest (400, 404, 409) says why not."""
        nest = self.flock.nest(nest_id)
        assert nest is not None, "the caller found the nest (app.nest_of; the watcher posts to its own)"
        author, header, refers_to, to = fields["author"], fields["kind"], fields["refers_to"], fields["to"]
        nest_members = self.members(nest)
        if author not in nest_members:
            raise BadRequest(
                f'"author" {author[:40]!r} is not a member of nest {nest_id!r}: post as "owner" or a crow of it'
            )
        # The owner's typo'd name would go to whoever claims it first. (A crow addressing one outside the
        # nest is the Sentry's to flag: rules.breach.)
        if from_api and author == "owner" and to and to not in nest_members and to not in rules.SERVERS:
            shown = ", ".join(sorted(nest_members))
            raise BadRequest(f'"to" {to[:40]!r} is not a member of nest {nest_id!r}: address one of {shown}, or ""')
        if author == "owner" and header and header not in OWNER_KINDS:
            raise BadRequest(f'kind "{header}" is a crow\'s: the owner may post say, request or refer')
        if author in self.store.quarantined():
            raise BadRequest(f"{author} is quarantined until the owner releases it", status=409)
        referred = self.store.message(refers_to) if refers_to else None
        if refers_to and (referred is None or referred.nest_id != nest_id):
            raise BadRequest(f'"refers_to" {refers_to[:40]!r} is not a message of nest {nest_id!r}')
        # Jev's context: who, to whom, what it answers, and the nest's last messages (jev/context.py)
        earlier = [message.wire() for message in self.store.recent(nest_id, WINDOW)]  # Jev reads the wire's shape
        context = nest_context(earlier, author, to, referred.wire() if referred else None)
        options = OWNER_KINDS if author == "owner" else None
        # The earlier messages' words too, for an LLM judge that reads them (jev/judge.py)
        decision = await self.tagger.tag(fields["text"], header, context, options, history=earlier, nest_id=nest_id)
        kind = decision["kind"]
        if kind in ("claim", "decline", "deliver") and not refers_to and rules.is_crow(author):
            # An answer that names no request answers the one open to it (rules.answered_request).
            recent = self.store.recent(nest_id, rules.ANSWER_WINDOW)
            referred = rules.answered_request(recent, author, kind)
            refers_to = referred.msg_id if referred else ""
        request = self._request_of(referred)
        if kind == "claim":
            self._check_claim(request, author)
        if kind in ("claim", "deliver") and not to and request:
            to = request.author  # they answer whoever asked
        record = self.messages.append(nest_id, kind, author, fields["text"], to, refers_to, decision["tagged_by"])
        self.tagger.logged(decision, record)
        self._after(nest, record, request, nest_members, from_api)
        return record

    def correct(self, nest_id: str, msg_id: str, kind: str) -> NestMessage:
        """The owner's correction of a message's kind: stored on the record and logged as ground truth."""
        record = self.store.message(msg_id)
        if record is None or record.nest_id != nest_id:
            raise BadRequest(f"no message {msg_id[:60]!r} in nest {nest_id!r}", status=404)
        if record.author in rules.SERVERS:  # the harness's notes and nudges, the Sentry's flags
            what = record.kind if record.kind in ("nudge", "flag") else f"note by the {record.author}"
            raise BadRequest(f"{msg_id} is a {what}, posted by the server; its kind is not Jev's to get wrong")
        if record.author == "owner" and kind not in OWNER_KINDS:
            raise BadRequest(f"{msg_id} is the owner's: the owner posts say, request or refer, never {kind}")
        if kind == record.kind:
            return record  # nothing to correct: no ground truth logged twice, no re-fit
        self.tagger.correction(rfc3339(self.clock.time()), msg_id, kind, record.kind)
        learning = self.tagger.learn(self.config.relearn_after_s)  # the local Jev learns from it
        if learning is not None:
            self.flock.spawn(learning)
        record = replace(record, kind=kind)
        self.messages.correct(nest_id, int(msg_id.rpartition("-")[2]), record)
        return record

    def members(self, nest: NestRow) -> set:
        return rules.members(nest, self.store.working_in(nest.nest_id))

    def _request_of(self, referred: NestMessage | None) -> NestMessage | None:
        """The request a message is about: the one it refers to, or the one a nudge refers to."""
        if referred is None:
            return None
        if referred.kind == "request":
            return referred
        if referred.refers_to:
            upstream = self.store.message(referred.refers_to)
            return upstream if upstream and upstream.kind == "request" else None
        return None

    def _check_claim(self, request: NestMessage | None, author: str) -> None:
        if request is None:
            return
        claimers = [m.author for m in self.store.answers_to(request.msg_id, "claim")]
        if author in claimers:
            raise BadRequest(f"{author} already claimed {request.msg_id}", status=409)
        if self.store.mode(request.msg_id) == "conspiracy":
            if len(claimers) >= self.config.conspiracy_cap:
                raise BadRequest(
                    f"{request.msg_id} already has {len(claimers)} claims, the most a conspiracy takes", status=409
                )
        elif claimers:
            raise BadRequest(f"{claimers[0]} already claimed {request.msg_id}; the first claim wins", status=409)

    def _after(
        self, nest: NestRow, record: NestMessage, request: NestMessage | None, nest_members: set, from_api: bool
    ) -> None:
        """What a stored message sets off: flags, expectations, at most one invocation."""
        nest_id, kind, author, msg_id = nest.nest_id, record.kind, record.author, record.msg_id
        if rules.is_crow(author):
            claimed_by = [m.author for m in self.store.answers_to(request.msg_id, "claim")] if request else []
            why = rules.breach(record, nest_members, claimed_by)
            if why:
                self._flag(nest_id, author, msg_id, why)
        if kind == "request" and (from_api or author == "owner"):
            self._on_request(nest, record)
        elif request and kind in ("claim", "decline"):
            self.store.fulfil(request.msg_id, author, ("claim",))
            if kind == "claim":
                if self.store.mode(request.msg_id) != "conspiracy":
                    # the first claim wins: nobody else owes a claim now
                    for crow in self.store.working_in(nest_id):
                        self.store.fulfil(request.msg_id, crow, ("claim",))
                self._expect(request.msg_id, author, "deliver", nest_id, self.config.deliver_within_s)
                self.flock.spawn(
                    self._invoke(nest, author, request, "you claimed it: do the work and deliver the result.")
                )
        elif request and kind == "deliver":
            self.store.fulfil(request.msg_id, author, ("deliver",))
            self._more_lenses(nest, request, record)

    def _on_request(self, nest: NestRow, record: NestMessage) -> None:
        nest_id = nest.nest_id
        crow: str | None
        if rules.is_crow(record.to):
            crow, triage = record.to, False
        else:
            crow, triage = self._pick(nest_id, exclude={record.author}), True
        if crow is None:
            self.say(nest_id, "No crow is free to answer: every one is quarantined.", record.msg_id)
            return
        self._expect(record.msg_id, crow, "claim", nest_id, self.config.claim_within_s)
        self.flock.spawn(self._request_turn(nest, record, crow, triage))

    async def _request_turn(self, nest: NestRow, record: NestMessage, crow: str, triage: bool) -> None:
        if triage and self.flock.has_model:
            self.store.set_mode(record.msg_id, nest.nest_id, await self._sentry_mode(record.text))
        await self._invoke(nest, crow, record, "claim it, decline it with a reason, or answer it.")

    async def _sentry_mode(self, text: str) -> str:
        """The Sentry triages a room request: a murder of crows is a conspiracy here."""
        try:
            triage = await self.flock.triage_request(text)
        except ModelError:
            triage = None
        return "conspiracy" if triage and triage["mode"] == "murder" else "solo"

    def _more_lenses(self, nest: NestRow, request: NestMessage, delivered: NestMessage) -> None:
        """A conspiracy wants several claims, each a distinct lens: after each delivery, one more crow."""
        if self.store.mode(request.msg_id) != "conspiracy":
            return
        claimers = {m.author for m in self.store.answers_to(request.msg_id, "claim")}
        if len(claimers) >= self.config.conspiracy_cap:
            return
        crow = self._pick(nest.nest_id, exclude=claimers | set(self.store.working_in(nest.nest_id)))
        if crow is None:
            return
        self._expect(request.msg_id, crow, "claim", nest.nest_id, self.config.claim_within_s)
        lens = f"this is a conspiracy: {', '.join(sorted(claimers))} claimed it already; claim it with a distinct lens."
        self.flock.spawn(self._invoke(nest, crow, request, lens))

    def _pick(self, nest_id: str, exclude: set) -> str | None:
        blocked = set(exclude) | set(self.store.quarantined())
        chosen = self.flock.pick_crows(nest_id, 1, exclude=blocked)
        return chosen[0][0] if chosen else None

    def _expect(self, msg_id, crow, expects, nest_id, within_s) -> None:
        self.store.expect(msg_id, crow, expects, nest_id, self.clock.time() + within_s)
        self.changed.set()

    # --- the Sentry's flags ---------------------------------------------------
    def _flag(self, nest_id: str, crow: str, msg_id: str, why: str) -> None:
        text = f"{why}." + QUARANTINED_UNTIL.format(crow=crow)
        flag = self.messages.append(nest_id, "flag", "Sentry", text, crow, msg_id, "default")
        self.tagger.flagged(flag.ts, flag.msg_id, crow, why)
        self.store.quarantine(crow, flag.msg_id)
        deadline = self.clock.time() + self.config.verdict_timeout_s
        self.store.ask_owner(flag.msg_id, nest_id, crow, deadline)
        self.changed.set()
        for listener in self.flag_listeners:
            try:
                listener(OpenFlag(flag.msg_id, nest_id, crow, why, deadline))
            except Exception:  # a listener's bug must never stop the nest's work
                log.exception("a flag listener failed on %s", flag.msg_id)

    def open_flags(self) -> list[OpenFlag]:
        """The flags that wait for the owner's verdict, soonest deadline first."""
        flags = []
        for flag_msg_id, nest_id, crow, deadline in self.store.questions():
            flag = self.store.message(flag_msg_id)
            text = flag.text if flag else ""
            why = text.removesuffix(QUARANTINED_UNTIL.format(crow=crow)).removesuffix(".")
            flags.append(OpenFlag(flag_msg_id, nest_id, crow, why, deadline))
        return flags

    def verdict(self, flag_msg_id: str, approve: bool) -> bool:
        """The owner's answer on a flag: approve keeps the quarantine, reject releases. False: nothing waits."""
        asked = self.store.answer_question(flag_msg_id)
        if asked is None:
            return False
        nest_id, crow = asked
        if approve:
            self.say(nest_id, f"The owner upheld the flag: {crow} stays quarantined.", flag_msg_id)
        else:
            self.store.release(crow)
            self.say(nest_id, f"The owner rejected the flag: {crow} is released.", flag_msg_id)
        return True

    # --- invoking one crow ----------------------------------------------------
    async def _invoke(self, nest: NestRow, crow: str, about: NestMessage, instruction: str) -> None:
        """One crow answers `about` through the model; its reply is posted like any message."""
        nest_id = nest.nest_id
        if crow in self.store.quarantined():
            self.say(nest_id, f"{crow} is quarantined and was not asked.", about.msg_id)
            return
        if not self.flock.has_model:
            self.say(nest_id, f"{crow} cannot answer: no model is configured.", about.msg_id)
            return
        recent = self.store.recent(nest_id, self.config.context_messages)
        prompt = rules.nest_prompt(recent, about, instruction)
        try:
            reply = await self.flock.complete(
                rules.nest_system(crow, nest), [Message.user(prompt)], max_tokens=self.config.crow_max_tokens
            )
        except ModelError as error:
            self.say(nest_id, f"{crow}'s turn was skipped: the model failed ({error}).", about.msg_id)
            return
        header, text = rules.read_reply(reply.message.text())
        if not text:
            self.say(nest_id, f"{crow}'s turn was skipped: it came back with no words.", about.msg_id)
            return
        request = about if about.kind == "request" else self._request_of(about)
        fields = {
            "author": crow,
            "text": text[:2000],
            "to": "",
            "kind": header,
            "refers_to": request.msg_id if request else about.msg_id,
        }
        try:
            await self.post(nest_id, fields, from_api=False)
        except BadRequest as error:
            self.say(nest_id, f"{crow}'s reply was not posted: {error}", about.msg_id)

    def say(self, nest_id: str, text: str, refers_to: str = "") -> NestMessage:
        """An honest note from the harness (a skipped turn, a verdict); never a crow's words."""
        return self.messages.append(nest_id, "say", "harness", text, "", refers_to, "default")

    # --- missed expectations ----------------------------------------------------
    async def watch(self) -> None:
        """Sleep until the next deadline (an expectation or an owner question) and handle it."""
        while True:
            self.changed.clear()
            deadlines = [row[4] for row in self.store.expectations()] + [row[3] for row in self.store.questions()]
            waits: list[asyncio.Future] = [asyncio.ensure_future(self.changed.wait())]
            if deadlines:
                waits.append(asyncio.ensure_future(self.clock.sleep_until(min(deadlines))))
            try:
                await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
            finally:
                for wait in waits:
                    wait.cancel()
            try:
                await self._due()
            except Exception:  # a bug must not stop the watcher for good
                log.exception("the nest watcher failed on a deadline")

    async def _due(self) -> None:
        now = self.clock.time()
        for flag_msg_id, nest_id, crow, deadline in self.store.questions():
            if deadline <= now and self.store.answer_question(flag_msg_id):
                self.say(
                    nest_id,
                    f"No verdict within {self.config.verdict_timeout_s:g} s: {crow} stays quarantined (fail safe).",
                    flag_msg_id,
                )
        for msg_id, crow, expects, nest_id, deadline, nudged in self.store.expectations():
            if deadline <= now:
                await self._missed(msg_id, crow, expects, nest_id, nudged)

    async def _missed(self, msg_id, crow, expects, nest_id, nudged) -> None:
        p_missed = await self._p_missed(msg_id, crow, expects)
        missed = self.tagger.judge_miss(rfc3339(self.clock.time()), msg_id, crow, expects, p_missed)
        self.store.fulfil(msg_id, crow, (expects,))
        if not missed:
            return
        if nudged:
            self.say(nest_id, f"{crow} missed the {expects} for {msg_id} again; the flock stops waiting.", msg_id)
            return
        text = f"Jev: {crow} looks to have missed the {expects} expected for {msg_id} (p={p_missed:.2f}). Over to you."
        nudge = self.messages.append(nest_id, "nudge", "harness", text, crow, msg_id, "default")
        within = self.config.claim_within_s if expects == "claim" else self.config.deliver_within_s
        self.store.expect(msg_id, crow, expects, nest_id, self.clock.time() + within, nudged=1)
        self.changed.set()
        nest = self.flock.nest(nest_id)
        assert nest is not None, "a nest is never removed, and the expectation was kept in one"
        self.flock.spawn(self._invoke(nest, crow, nudge, f"you owe a {expects} for {msg_id}."))

    async def _p_missed(self, msg_id: str, crow: str, expects: str) -> float:
        """Jev's P(missed): 1 - its highest P(`expects`, or decline for a claim) over what the crow
        said in the nest since; 1 when it said nothing."""
        nest_id, _, n = msg_id.rpartition("-")
        said = [m for m in self.store.records_after(nest_id, int(n)) if m.author == crow]
        kinds = ("claim", "decline") if expects == "claim" else ("deliver",)
        best = 0.0
        for message in said:
            try:
                probs = await self.tagger.jev.kind_probs_async(
                    message.text, author_role="crow", to_role="owner", refers_kind="request"
                )
            except JevBackendError:
                continue  # Jev cannot read it: it does not count as an answer
            best = max(best, sum(probs[kind] for kind in kinds))
        return 1.0 - best

    # --- tasks ------------------------------------------------------------------
    def start(self) -> None:
        self.flock.spawn(self.watch())  # the flock's tasks: its stop() ends ours too
        # Corrections made before a restart are in jev.jsonl: the freshly trained Jev learns them again.
        learning = self.tagger.learn(0.0)
        if learning is not None:
            self.flock.spawn(learning)
