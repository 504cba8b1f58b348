"""Banter: a one-line aside between two crows who worked on the same item.

When two or more crows have landed from one item (split or murder), one of them
says a line to another. The line is generated: the speaker's backstory, the
other crow's, how the two get on (`relationship` in crows.json) and the list's
recent events go to the flock's model, and the speaker answers in character.
The result is the `crow.banter` event; it is never part of an answer.

The contract's rules, and where each is kept:
- at most 2 per list: `start` counts the calls it begins (those already in the
  event log too, so a restart does not grant two more);
- counted against the list budget: the call's tokens go through `spend`, and no
  banter starts once the budget is spent;
- never blocks work: the call runs as its own task, outside the flock's model
  call slots, and nothing in an item's life waits for it;
- a failed or unusable line is dropped (logged, no event);
- `list.finished` waits up to 20 s (on the clock seam) for banter in flight,
  then cancels what is left, so no banter ever follows its list's end.
"""

import asyncio
import json
import logging

from soulstack.flock.payloads import CrowBanter
from soulstack.flock.personas import BY_NAME, relationship
from soulstack.flock.rows import ListRow
from soulstack.llm.types import Message, ModelError

log = logging.getLogger(__name__)

PER_LIST = 2
FINISH_WAIT_S = 20.0
MAX_CHARS = 240  # one line a person reads in a speech bubble
RECENT_EVENTS = 12
MAX_TOKENS = 120


def pick_pair(crows: list) -> tuple | None:
    """-> (speaker, addressee) among distinct crows, a pair with a history first; None with fewer than two."""
    names = list(dict.fromkeys(crows))
    pairs = [(a, b) for i, a in enumerate(names) for b in names[i + 1 :]]
    if not pairs:
        return None
    return next((pair for pair in pairs if relationship(*pair)), pairs[0])


def usable(text: str, speaker: str) -> str | None:
    """The line as the page will show it, or None when it cannot be used: empty, several lines, too long."""
    line = text.strip()
    if line.lower().startswith(speaker.lower() + ":"):  # models like to write a script
        line = line[len(speaker) + 1 :].strip()
    if len(line) >= 2 and line[0] == line[-1] and line[0] in "\"'“”":
        line = line[1:-1].strip()
    if line.startswith("“") and line.endswith("”"):
        line = line[1:-1].strip()
    if not line or "\n" in line or len(line) > MAX_CHARS:
        return None
    return line


def recent_lines(rows: list) -> list:
    """The list's last events as short lines for the prompt (answers clipped: they can be long)."""
    lines = []
    for _id, name, data in rows[-RECENT_EVENTS:]:
        fields = json.loads(data)
        fields.pop("list_id", None), fields.pop("ts", None)
        for key, value in fields.items():
            if isinstance(value, str) and len(value) > 120:
                fields[key] = value[:119] + "…"
        lines.append(f"{name} {json.dumps(fields, ensure_ascii=False)}")
    return lines


def prompt(speaker: str, to: str, item_text: str, recent: list) -> tuple:
    """-> (system, user) for one line of banter."""
    me, other = BY_NAME[speaker], BY_NAME[to]
    bond = relationship(speaker, to) or "flockmates with no particular history"
    system = (
        f"You are {me.name}, {me.epithet}, a crow in a flock that works through people's todo lists. "
        f"{me.backstory}\n\nYou are about to say one short aside to {other.name}, {other.epithet}. "
        f"{other.backstory}\nHow you two get on: {bond}.\n\n"
        f"Write exactly one line (under {MAX_CHARS} characters) that {me.name} says to {other.name} about the work "
        "you just did together, in character, warm or teasing. No name prefix, no quotes, no explanation."
    )
    user = f"The task you both worked on: {item_text}\n\nWhat just happened in the flock:\n" + "\n".join(recent)
    return system, user


class Banter:
    """Banter tasks per list. `call(system, messages, max_tokens)` is the model seam; `spend(list_id, tokens)`
    counts tokens against the list budget; `budget_left(lst)` says whether any is left."""

    def __init__(self, store, events, clock, call, spend, budget_left):
        self.store, self.events, self.clock = store, events, clock
        self.call, self.spend, self.budget_left = call, spend, budget_left
        self.started = {}  # list_id -> banter calls begun (from the event log after a restart)
        self.in_flight = {}  # list_id -> set of tasks

    def start(self, lst: ListRow, item_id: str, item_text: str, crows: list) -> None:
        """Begin one line of banter between the item's crows, if the list may still have one."""
        list_id, pair = lst.list_id, pick_pair(crows)
        if pair is None or not self.budget_left(lst):
            return
        if list_id not in self.started:
            rows = self.store.events_after(0, list_id)
            self.started[list_id] = sum(1 for _id, name, _data in rows if name == CrowBanter.NAME)
        if self.started[list_id] >= PER_LIST:
            return
        self.started[list_id] += 1
        task = asyncio.ensure_future(self._say(list_id, item_id, item_text, *pair))
        tasks = self.in_flight.setdefault(list_id, set())
        tasks.add(task)
        task.add_done_callback(tasks.discard)

    async def settle(self, list_id: str) -> None:
        """Before `list.finished`: wait for banter in flight, at most FINISH_WAIT_S, then drop the rest."""
        tasks = self.in_flight.pop(list_id, set())
        self.started.pop(list_id, None)
        if not tasks:
            return
        timer = asyncio.ensure_future(self.clock.sleep_until(self.clock.time() + FINISH_WAIT_S))
        all_said = asyncio.gather(*tasks, return_exceptions=True)
        try:
            await asyncio.wait({all_said, timer}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            timer.cancel()
            all_said.cancel()  # cancels what is still in flight: its line would come after the list's end
            await asyncio.gather(all_said, return_exceptions=True)

    async def stop(self) -> None:
        """The server is stopping: banter in flight is dropped."""
        tasks = [task for tasks in self.in_flight.values() for task in tasks]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    async def _say(self, list_id, item_id, item_text, speaker, to) -> None:
        system, user = prompt(speaker, to, item_text, recent_lines(self.store.events_after(0, list_id)))
        try:
            reply = await self.call(system, [Message.user(user)], MAX_TOKENS)
        except ModelError as error:
            log.info("banter from %s to %s dropped: %s", speaker, to, error)
            return
        except Exception:  # banter is an aside: a bug here must not reach the list
            log.exception("banter from %s to %s failed", speaker, to)
            return
        self.spend(list_id, reply.usage.total)
        line = usable(reply.message.text(), speaker)
        if line is None:
            log.info("banter from %s to %s dropped: unusable line %r", speaker, to, reply.message.text()[:300])
            return
        self.events.emit(CrowBanter(list_id=list_id, item_id=item_id, crow=speaker, to=to, text=line))
