"""What the robot's voice has told a person, kept beside the flock's events so kill -9 loses nothing.

Every flock event has a global, monotonic id (Store.append_event). A voice
(host/flock/voice/robot.py) marks each event it hears: held while a line for it waits
(an utterance held back by the interval or quiet hours, a nudge the soul has not
taken yet), told once the line is delivered, given up, or when the event needed no
telling at all. The cursor — every event up to it is told — is one row per voice
in the flock's SQLite (`told`), each write atomic like every other store write.

After a restart the voice reads the events above its cursor and hears them again,
so what it had not told is told then, merged as usual. A voice that starts for the
first time on an old data dir begins at the newest event: it tells what happens
from now on, not the flock's whole past.
"""

import json
import logging

log = logging.getLogger(__name__)

REPLAY_MOST = 1000  # events re-read after a restart, at most (the newest ones)


class Told:
    def __init__(self, store, voice: str):
        self.store, self.voice = store, voice
        self.heard_up_to = 0
        self.held: list = []  # event ids whose line is not yet delivered, oldest first
        self.saved: int | None = None

    def missed(self) -> list:
        """[(event_id, name, payload)] above the stored cursor: what the voice had not told when it stopped."""
        cursor, newest = self.store.told_cursor(self.voice), self.store.last_event_id()
        if cursor is None:
            self.heard_up_to = newest
            self._save()
            return []
        self.saved = self.heard_up_to = cursor
        start = max(cursor, newest - REPLAY_MOST)
        if start > cursor:
            log.warning(
                "the %s voice missed %d events; telling only the newest %d", self.voice, newest - cursor, REPLAY_MOST
            )
        return [(event_id, name, json.loads(data)) for event_id, name, data in self.store.events_after(start)]

    def heard(self, event_id: int, held: bool) -> None:
        self.heard_up_to = max(self.heard_up_to, event_id)
        if held:
            self.held.append(event_id)
        self._save()

    def told(self, event_ids) -> None:
        done = set(event_ids)
        self.held = [event_id for event_id in self.held if event_id not in done]
        self._save()

    def _save(self) -> None:
        cursor = self.held[0] - 1 if self.held else self.heard_up_to
        if cursor != self.saved:
            self.store.set_told_cursor(self.voice, cursor)
            self.saved = cursor
