"""The nudge ids the soul has answered: a nudge sent again under its id is counted once.

A body whose nudge went out whole but whose answer never came back (a timeout, a
dropped connection) cannot know whether the soul kept it, so it sends it again
under the same `nudge_id` (host/protocol/nudges.py). The soul answers such a
repeat, within WINDOW_S of the first, with the answer the first one got, and
keeps nothing: the nudge is shown once.

The ids survive a restart, because a 202 is a promise made on disk: an id goes
to disk with its nudge (its line in NUDGES.jsonl, host/soul/nudges/inbox.py), and when
that line leaves the inbox the id moves here (soulDir/NUDGE_IDS.json) before it
does. So a soul killed after its 202 and started again still knows the nudge a
body sends again. An answer that kept nothing (the echo guard's) is written here
at once.

An id is a sender's promise that the nudge is the same one; the soul checks it. Each id is kept
with a fingerprint of what its nudge said, and a nudge that comes under a known id with other
words (a sender that reuses ids: a bug) is kept as a nudge of its own, with a warning: a person's
words are never dropped for an id. An id known only from a line still waiting in NUDGES.jsonl when
the soul restarted has no fingerprint: a repeat of it is trusted, as it was before fingerprints.

Bounded: ids older than WINDOW_S are forgotten, and at most MAX_IDS are kept
(the oldest go first), so a body inventing an id per nudge cannot fill the disk.
Times are the soul's clock's `time()`, seconds since 1970, so the window holds
across a restart.
"""

import asyncio
import hashlib
import json
import logging
from dataclasses import replace
from pathlib import Path

from soulstack.protocol.nudges import Nudge
from soulstack.soul.atomic import atomic_write_text

log = logging.getLogger(__name__)

FILENAME = "NUDGE_IDS.json"
# A body retries a lost answer within seconds, or every 30 s while the soul is down (nudge_sender's
# backoff); a day covers a soul that was down all night.
WINDOW_S = 24 * 3600.0
MAX_IDS = 10_000


def fingerprint(nudge: Nudge) -> str:
    """What a nudge says, in a few bytes: two nudges with the same fingerprint tell the same."""
    said = json.dumps(replace(nudge, nudge_id=None).to_json(), sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(said.encode()).hexdigest()[:16]


class NudgeIds:
    def __init__(self, path, window_s: float = WINDOW_S, max_ids: int = MAX_IDS):
        self.path = Path(path)
        self.window_s = window_s
        self.max_ids = max_ids
        # id -> (when, the answer, the nudge's fingerprint or None when unknown), oldest first
        self.answered: dict[str, tuple[float, dict, str | None]] = {}
        # ids whose first nudge is being kept right now -> (its fingerprint, its answer to come)
        self._answering: dict[str, tuple[str, asyncio.Future]] = {}

    def load(self, now: float) -> "NudgeIds":
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return self
        except (OSError, ValueError) as error:
            log.warning("%s is unreadable (%s); repeats of earlier nudges may be counted again", self.path.name, error)
            return self
        for nudge_id, kept in (data.get("ids") or {}).items() if isinstance(data, dict) else ():
            if isinstance(kept, list) and len(kept) in (2, 3) and isinstance(kept[1], dict):
                said = kept[2] if len(kept) == 3 and isinstance(kept[2], str) else None  # an older file has none
                self.answered[nudge_id] = (float(kept[0]), kept[1], said)
        self._forget_old(now)
        return self

    def reused(self, nudge_id: str, said: str, now: float) -> bool:
        """True when `nudge_id` is known, within the window, for a nudge that said something else."""
        if nudge_id in self._answering:
            return self._answering[nudge_id][0] != said
        kept = self.answered.get(nudge_id)
        return kept is not None and now - kept[0] < self.window_s and kept[2] is not None and kept[2] != said

    async def earlier_answer(self, nudge_id: str, now: float) -> dict | None:
        """The answer a nudge with this id got within the window; None when this is the first."""
        while nudge_id in self._answering:  # the first is still being written down: its answer is ours
            answer = await asyncio.shield(self._answering[nudge_id][1])
            if answer is not None:
                return answer
        kept = self.answered.get(nudge_id)
        if kept is None or now - kept[0] >= self.window_s:
            return None
        return kept[1]

    def answering(self, nudge_id: str, said: str) -> None:
        """A nudge with this id, saying `said` (its fingerprint), is being kept: a repeat arriving
        meanwhile waits for its answer."""
        self._answering[nudge_id] = (said, asyncio.get_running_loop().create_future())

    def answered_with(self, nudge_id: str, answer: dict | None, now: float, said: str | None = None) -> None:
        """The first nudge with this id was answered `answer` (None: it was not kept; a repeat is new).
        `said`: its fingerprint; None keeps the one known already, if any (a line read back at start)."""
        waiting = self._answering.pop(nudge_id, None)
        if answer is not None:
            known = self.answered.pop(nudge_id, None)
            self.answered[nudge_id] = (now, answer, said if said is not None else known[2] if known else None)
            self._forget_old(now)
        if waiting is not None and not waiting[1].done():
            waiting[1].set_result(answer)

    async def save(self) -> None:
        """Write every id down (off the event loop), e.g. before their nudges leave NUDGES.jsonl."""
        text = json.dumps({"ids": {key: list(kept) for key, kept in self.answered.items()}})
        await asyncio.to_thread(atomic_write_text, self.path, text)

    def _forget_old(self, now: float) -> None:
        for key in [key for key, (at, _, _) in self.answered.items() if now - at >= self.window_s]:
            del self.answered[key]
        for key in list(self.answered)[: max(0, len(self.answered) - self.max_ids)]:  # the oldest first
            del self.answered[key]
