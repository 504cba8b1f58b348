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
  debounced, kept while the soul is down). The soul decides what to say.

Both listen to the event log in-process and do their work in one background
task, so the flock's own work never waits for a robot.
"""

import asyncio
import logging

from soulstack.clocks import Clock
from soulstack.protocol.client import BodyClient, BodyError
from soulstack.protocol.nudges import NudgeSender
from soulstack.protocol.shapes import MAX_SPEAK_CHARS

log = logging.getLogger("flock.robot")

FACES = {"requester.pranked": "angry", "list.finished": "happy", "crow.flying": "thinking"}
MAX_ITEMS_REMEMBERED = 500


def short(text: str, limit: int = 60) -> str:
    text = " ".join((text or "").split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


class FlockNews:
    """Turns flock events into (line for a person, face); remembers item words to name them."""

    def __init__(self):
        self.items: dict = {}  # item_id -> its words, from list.started

    def read(self, name: str, payload: dict) -> tuple[str | None, str | None, bool]:
        """(line, face, needs a person) for one event."""
        if name == "list.started":
            for item in payload.get("items", []):
                self.items[item["item_id"]] = item["text"]
            while len(self.items) > MAX_ITEMS_REMEMBERED:
                self.items.pop(next(iter(self.items)))
        item_id = payload.get("item_id", "")
        words = short(self.items.get(item_id, item_id))
        if name == "item.triaged" and payload.get("needs_approval"):
            return f"the Sentry needs your OK to start on '{words}' (item {item_id})", None, True
        if name == "item.answered" and payload.get("needs_approval"):
            crow = (payload.get("crows") or ["a crow"])[0]
            return f"{crow} needs your OK on the answer to '{words}' (item {item_id})", "happy", True
        if name == "item.answered":
            return f"the flock answered '{words}': {short(payload.get('answer', ''), 200)}", "happy", False
        if name == "crow.landed" and not payload.get("ok", True):
            return None, "sad", False
        if name == "item.skipped":
            return f"the flock dropped '{words}' ({short(payload.get('reason', ''), 80)})", "sad", False
        if name == "list.finished":
            return None, "happy", False
        return None, FACES.get(name), False


class BodyVoice:
    """Speaks and shows faces on a body through the Body Protocol client."""

    def __init__(self, body_url: str, token: str | None = None, min_interval_s: float = 30.0,
                 quiet_hours: tuple | None = None, clock: Clock | None = None):
        self.client = BodyClient.at(body_url, token=token, timeout_s=15)
        self.min_interval_s = min_interval_s
        self.quiet_hours = quiet_hours  # (start hour, end hour) local, e.g. (22, 7)
        self.clock = clock or Clock()
        self.news = FlockNews()
        self.lines: list = []
        self.face: str | None = None
        self.last_spoken: float | None = None
        self.wake = asyncio.Event()
        self.spoken: list = []  # what reached the body, for the log and tests

    def on_event(self, name: str, payload: dict):
        line, face, needs_person = self.news.read(name, payload)
        if line and needs_person:
            self.lines.append(line)
        if face:
            self.face = face
        if line or face:
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

    async def deliver(self):
        face, self.face = self.face, None
        speak = bool(self.lines) and not self.quiet() and self.seconds_until_speaking() == 0
        if not face and not speak:
            return
        try:
            if not (await self.client.status())["online"]:
                log.info("the body is offline; the flock's news is not shown (%s)", "; ".join(self.lines) or face)
                self.lines = [] if speak else self.lines
                return
            if face:
                await self.client.express(face)
            if speak:
                utterance = "; ".join(self.lines)[:MAX_SPEAK_CHARS]
                self.lines = []
                self.last_spoken = self.clock.monotonic()
                await self.client.speak(utterance)
                self.spoken.append(utterance)
        except BodyError as error:
            log.warning("the body did not take the flock's news (%s); dropped, not retried", error)


class SoulVoice:
    """Tells the soul living in the body, as nudges; the soul chooses what to say."""

    def __init__(self, nudge_url: str, token: str | None = None):
        self.sender = NudgeSender(nudge_url, token=token)
        self.news = FlockNews()

    def on_event(self, name: str, payload: dict):
        line, _face, needs_person = self.news.read(name, payload)
        if line:
            self.sender.nudge(("your flock asks: " if needs_person else "your flock says: ") + line)

    async def run(self):
        await self.sender.run()
