"""The flock's voice on the robot: what a person should hear about the flock, and on which face.

Events that need a person (an approval) become short lines in the acting
crow's voice ("Pepper needs your OK on the answer to 'launch copy'"); the
flock's mood shows on the face (a prank: angry; a crow that failed: sad; a
list done: happy; crows out: thinking). Two ways to reach the person:

- `BodyVoice`: the flock drives a body itself (`soulstack flock --body URL`).
  At most one utterance per `min_interval_s` (lines waiting meanwhile are
  merged into it), none in quiet hours (kept for the morning), `/status`
  checked first; a body that is offline or fails is logged and the utterance
  dropped, never retried in a storm.
- `SoulVoice`: a soul lives in that body (`soulstack flock --soul URL`), so the
  flock never talks over it: it tells the soul instead, with nudges written
  from the world's point of view, through the nudge contract's sender (merged,
  debounced, kept while the soul is down). Each carries its news as a code
  (`flock_asks_start`, `flock_asks_answer`, `flock_answered`, `flock_dropped`:
  soulstack.protocol.nudges' CODES) beside the plain reason, so a soul tells it
  in its own language. The soul decides what to say.

Both listen to the event log in-process and do their work in one background
task, so the flock's own work never waits for a robot. Neither loses news to a
kill -9: what a voice has told is a cursor in the flock's store (told.py), and
after a restart it tells what came after it (an approval only while it still
waits), merged into one utterance or nudge.
"""

import asyncio
import logging

from soulstack.clocks import Clock
from soulstack.llm.brainstem import FLOCK_ASKS  # the head the soul's brainstem knows an ask by
from soulstack.flock import payloads as p
from soulstack.flock.rows import ItemState, OpenFlag
from soulstack.flock.voice.told import Told
from soulstack.protocol.client import BodyClient, BodyError
from soulstack.protocol.nudge_sender import Debouncer, NudgeEvent, NudgeSender
from soulstack.protocol.nudges import coded, plain_reason, quoted
from soulstack.protocol.shapes import MAX_SPEAK_CHARS

log = logging.getLogger(__name__)

FACES = {p.RequesterPranked: "angry", p.ListFinished: "happy", p.CrowFlying: "thinking"}
MAX_ITEMS_REMEMBERED = 500


def short(text: str, limit: int = 60) -> str:
    # A list's words are no person's: quoted, no piece of a merged nudge reads as a person's line.
    text = quoted(text)
    return text if len(text) <= limit else text[: limit - 1] + "…"


class FlockNews:
    """Turns flock events into (line for a person, face, what it asks); remembers item words to name them."""

    def __init__(self):
        self.items: dict = {}  # item_id -> its words, from list.started
        self.lookup = lambda item_id: None  # the store's words for an item heard of before a restart

    def words(self, item_id: str) -> str:
        return short(self.items.get(item_id) or self.lookup(item_id) or item_id)

    def read(self, name: str, payload: dict) -> tuple:
        """(news, face, asks) for one event: news is the codes that tell it (soulstack.protocol.nudges'
        `coded`), asks is (item_id, target) when it needs a person's verdict.
        The payload is read through its declaration (soulstack.flock.payloads), a field it lacks as None."""
        event = p.loose(name, payload)
        if isinstance(event, p.ListStarted):
            for item in event.items or []:
                self.items[item["item_id"]] = item["text"]
            while len(self.items) > MAX_ITEMS_REMEMBERED:
                self.items.pop(next(iter(self.items)))
        item_id = getattr(event, "item_id", None) or ""
        if isinstance(event, p.ItemTriaged) and event.needs_approval:
            news = coded("flock_asks_start", item=self.words(item_id), item_id=item_id)
            return news, None, (item_id, "triage")
        if isinstance(event, p.ItemAnswered) and event.needs_approval:
            crow = (event.crows or ["a crow"])[0]
            news = coded("flock_asks_answer", crow=crow, item=self.words(item_id), item_id=item_id)
            return news, "happy", (item_id, "output")
        if isinstance(event, p.ItemAnswered):
            news = coded("flock_answered", item=self.words(item_id), answer=short(event.answer or "", 200))
            return news, "happy", None
        if isinstance(event, p.CrowLanded) and event.ok is not None and not event.ok:
            return None, "sad", None
        if isinstance(event, p.ItemSkipped):
            return coded("flock_dropped", item=self.words(item_id), why=short(event.reason or "", 80)), "sad", None
        if isinstance(event, p.ListFinished):
            return None, "happy", None
        return None, FACES.get(type(event)), None


def flag_news(flag: OpenFlag) -> tuple:
    """The codes that ask the person for a verdict on a Sentry flag (its `why` is from a crow's words)."""
    return coded("flock_asks_flag", crow=flag.crow, why=short(flag.why, 120), item_id=flag.flag_msg_id)


def waits_for_verdict(store, item_id: str, target: str) -> bool:
    """Whether the flock still waits for a person's verdict: a pending row, or an item the flow will
    wait on when it resumes (a kill between the event and the row leaves only the item's state)."""
    item = store.item(item_id)
    return store.pending_deadline(item_id, target) is not None or (
        item is not None and item.state == ItemState.awaiting(target)
    )


class Voice:
    """What both voices share: the news reader and the told cursor in the flock's store."""

    name = "voice"

    def __init__(self):
        self.news = FlockNews()
        self.told: Told | None = None  # None until attached to a store (a voice on its own, in a test)
        self.still_waiting = lambda item_id, target: True

    def attach(self, store) -> None:
        """Keep the told cursor in `store`, and hear again what was not told before the last stop."""
        self.told = Told(store, self.name)
        self.news.lookup = lambda item_id: getattr(store.item(item_id), "text", None)
        self.still_waiting = lambda item_id, target: waits_for_verdict(store, item_id, target)
        for event_id, name, payload in self.told.missed():
            self.hear(event_id, name, payload, replay=True)

    def on_event(self, event_id: int, name: str, payload: dict) -> None:
        self.hear(event_id, name, payload, replay=False)

    def hear_flags(self, harness) -> None:
        """Ask about each flag the nests' Sentry raises from now on, and about those that still wait
        (asked before a restart too, perhaps: a flag that waits is asked again rather than never)."""
        for flag in harness.open_flags():
            self.on_flag(flag)
        harness.flag_listeners.append(self.on_flag)

    def on_flag(self, flag: OpenFlag) -> None:
        raise NotImplementedError

    def read(self, name: str, payload: dict, replay: bool) -> tuple:
        news, face, asks = self.news.read(name, payload)
        if replay:
            face = None  # a restart shows no old moods
            if asks and not self.still_waiting(*asks):
                news = None  # answered or timed out while the flock was down: nothing to ask
        return news, face, asks

    def hear(self, event_id: int, name: str, payload: dict, replay: bool) -> None:
        raise NotImplementedError

    def heard(self, event_id: int, held: bool) -> None:
        if self.told is not None:
            self.told.heard(event_id, held)

    def done(self, event_ids) -> None:
        if self.told is not None and event_ids:
            self.told.told(event_ids)


class BodyVoice(Voice):
    """Speaks and shows faces on a body through the Body Protocol client."""

    name = "body"

    def __init__(
        self,
        body_url: str,
        token: str | None = None,
        min_interval_s: float = 30.0,
        quiet_hours: tuple | None = None,
        clock: Clock | None = None,
    ):
        super().__init__()
        self.client = BodyClient.at(body_url, token=token, timeout_s=15)
        self.min_interval_s = min_interval_s
        self.quiet_hours = quiet_hours  # (start hour, end hour) local, e.g. (22, 7)
        self.clock = clock or Clock()
        self.lines: list = []  # (event_id, line) waiting to be spoken
        self.face: str | None = None
        self.last_spoken: float | None = None
        self.wake = asyncio.Event()
        self.spoken: list = []  # what reached the body, for the log and tests

    def hear(self, event_id, name, payload, replay):
        news, face, asks = self.read(name, payload, replay)
        held = bool(news and asks)  # only what needs the person is spoken; news shows on the face
        line = news and plain_reason(news).removeprefix(FLOCK_ASKS)  # the flock's own words, no soul's head
        if held:
            self.lines.append((event_id, line))
        self.heard(event_id, held)
        if face:
            self.face = face
        if held or face:
            self.wake.set()

    def on_flag(self, flag):
        self.lines.append((None, plain_reason(flag_news(flag)).removeprefix(FLOCK_ASKS)))  # no event to mark told
        self.wake.set()

    def quiet(self) -> bool:
        if not self.quiet_hours:
            return False
        start, end = self.quiet_hours
        hour = self.clock.now().astimezone().hour  # quiet hours are the computer's local hours
        return start <= hour < end if start < end else hour >= start or hour < end

    def seconds_until_speaking(self) -> float:
        if self.last_spoken is None:
            return 0.0
        return max(0.0, self.last_spoken + self.min_interval_s - self.clock.monotonic())

    async def run(self):
        try:
            while True:
                await self.wake.wait()
                self.wake.clear()
                await self.deliver()
                if self.lines:  # held back by the interval or quiet hours: come back when it may speak
                    delay = self.seconds_until_speaking() or (60.0 if self.quiet() else 0.0)
                    asyncio.get_running_loop().call_later(delay, self.wake.set)
        finally:
            await self.client.close()

    def take_lines(self) -> tuple:
        """(the merged utterance, its event ids); the lines leave the queue."""
        taken, self.lines = self.lines, []
        event_ids = [event_id for event_id, _ in taken if event_id is not None]  # None: a flag, no event
        return "; ".join(line for _, line in taken)[:MAX_SPEAK_CHARS], event_ids

    async def deliver(self):
        face, self.face = self.face, None
        speak = bool(self.lines) and not self.quiet() and self.seconds_until_speaking() == 0
        if not face and not speak:
            return
        utterance, event_ids = self.take_lines() if speak else ("", [])
        try:
            if not (await self.client.status())["online"]:
                log.info("the body is offline; the flock's news is not shown (%s)", utterance or face)
                return
            if face:
                await self.client.express(face)
            if speak:
                self.last_spoken = self.clock.monotonic()
                await self.client.speak(utterance)
                self.spoken.append(utterance)
        except BodyError as error:
            log.warning("the body did not take the flock's news (%s); dropped, not retried", error)
        finally:
            self.done(event_ids)  # spoken, or dropped on purpose (never retried in a storm): told either way


class SoulVoice(Voice):
    """Tells the soul living in the body, as nudges; the soul chooses what to say.

    The nudge contract's sender merges, debounces and retries while the soul is
    down; what it has not delivered is held in the told cursor, so a flock
    killed meanwhile tells it after its restart.
    """

    name = "soul"

    def __init__(self, nudge_url: str, token: str | None = None, min_interval_s: float = 10.0):
        super().__init__()
        self.sender = NudgeSender(
            nudge_url, token=token, listener=self.on_sent, debouncer=Debouncer(min_interval_s=min_interval_s)
        )
        self.sending: list = []  # (event_id, reason) offered to the sender, not yet taken by the soul

    def hear(self, event_id, name, payload, replay):
        news, _face, asks = self.read(name, payload, replay)
        held = False
        if news:
            reason = plain_reason(news)  # opens with FLOCK_ASKS for an ask, 'your flock says: ' for news
            held = self.sender.nudge(reason, codes=news)  # False: a repeat the sender collapsed, told moments ago
            if held:
                self.sending.append((event_id, " ".join(reason.split())))
        self.heard(event_id, held)

    def on_flag(self, flag):
        news = flag_news(flag)
        self.sender.nudge(plain_reason(news), codes=news)  # no event to mark told: on_sent finds no match

    def on_sent(self, event: NudgeEvent) -> None:
        """The sender's report: delivered (the soul has it on disk), or given up (a refusal retrying cannot fix)."""
        if event.kind not in ("delivered", "rejected"):
            return
        done = []
        for reason in event.reasons:
            match = next((entry for entry in self.sending if entry[1] == reason), None)
            if match is not None:
                self.sending.remove(match)
                done.append(match[0])
        self.done(done)

    async def run(self):
        await self.sender.run()
