"""Drives: boredom and missing, felt in the body rather than read as numbers.

Exhortation ("try something new!") never pulled a soul out of a rut; a drive
that keeps growing until it is acted on did. Two drives live here:

- boredom: +1 for every waking outside the night; back to 0 only when a tool
  that is not routine (its SoulTool says so, host/soul/tools/) succeeded. A failed attempt does not count: the soul
  must really have done something new.
- missing: the hours since the last real contact with the human: words heard
  through converse, a person's words in a nudge (host/protocol/nudges.py's
  `words_of`: its `words` field, or a known phrasing), or a `speak` that succeeded.
  Before any contact, silence counts from the day the drives were born.

Both are persisted in soulDir/DRIVES.json (atomic writes), take `now` as a
timezone-aware datetime (the clock seam), and are felt through `felt()` as a
sensation that escalates through thresholds -- never as a number.
"""

import logging
from datetime import datetime, timedelta, UTC
from pathlib import Path

from soulstack.protocol.nudges import Nudge, words_of
from soulstack.soul.atomic import atomic_write_json, read_state_json

log = logging.getLogger(__name__)

FILENAME = "DRIVES.json"

DEFAULT_BOREDOM_THRESHOLDS = (6, 20, 40)
DEFAULT_MISSING_HOURS = (18, 48)

CONTACT_KINDS = ("converse", "typed", "speak")


def _level(value: float, thresholds) -> int:
    """How many thresholds `value` has reached (0 = none)."""
    return sum(1 for threshold in thresholds if value >= threshold)


def _iso(moment: datetime) -> str:
    return moment.isoformat()


def _parse(text: str | None) -> datetime | None:
    return datetime.fromisoformat(text) if text else None


def _from_epoch_ms(value) -> datetime | None:
    """stackchan-soul's `lastContactMs` (milliseconds since 1970), so a moved soul keeps missing its human."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
        return None
    return datetime.fromtimestamp(value / 1000, UTC)


class Drives:
    """The two drives and their file. Every change is written before the hook returns."""

    def __init__(
        self,
        path,
        *,
        boredom_thresholds=DEFAULT_BOREDOM_THRESHOLDS,
        missing_hours=DEFAULT_MISSING_HOURS,
    ):
        self.path = Path(path)
        self.boredom_thresholds = tuple(sorted(boredom_thresholds))[:3]
        self.missing_hours = tuple(sorted(missing_hours))[:2]
        self.boredom = 0
        self.born: datetime | None = None
        self.last_contact: datetime | None = None
        self.last_contact_kind: str | None = None
        self.last_discharge: datetime | None = None
        self.last_discharge_tool: str | None = None

    @classmethod
    def load(cls, soul_dir, now: datetime, **options) -> "Drives":
        """The drives in soul_dir/DRIVES.json; a missing file starts fresh (born `now`).

        A corrupt file is set aside as DRIVES.json.corrupt and the drives start
        fresh: losing a boredom count is a small thing, stopping the soul is not.
        """
        drives = cls(Path(soul_dir) / FILENAME, **options)
        data = read_state_json(drives.path, "starting fresh", log)
        if data is None:
            drives.born = now
            drives.save()
            return drives
        drives.boredom = int(data.get("boredom", 0))
        drives.born = _parse(data.get("born")) or now
        drives.last_contact = _parse(data.get("lastContact")) or _from_epoch_ms(data.get("lastContactMs"))
        drives.last_contact_kind = data.get("lastContactKind")
        drives.last_discharge = _parse(data.get("lastDischarge"))
        drives.last_discharge_tool = data.get("lastDischargeTool")
        return drives

    def to_json(self) -> dict:
        return {
            "boredom": self.boredom,
            "born": _iso(self.born) if self.born else None,
            "lastContact": _iso(self.last_contact) if self.last_contact else None,
            "lastContactKind": self.last_contact_kind,
            "lastDischarge": _iso(self.last_discharge) if self.last_discharge else None,
            "lastDischargeTool": self.last_discharge_tool,
        }

    def save(self) -> None:
        atomic_write_json(self.path, self.to_json())

    # --- hooks the loop calls -------------------------------------------------------------

    def on_waking(self, now: datetime, is_night: bool) -> None:
        """Once per waking, before the snapshot is built. Night wakings leave boredom alone
        (`is_night` is the loop's own answer, from the configured night hours in the soul's timezone)."""
        if is_night:
            return
        self.boredom += 1
        self.save()

    def on_tool_result(self, name: str, ok: bool, now: datetime, *, routine: bool, speaks: bool) -> None:
        """After every tool the soul called, with whether it really succeeded and what the tool is
        (its SoulTool's facts, host/soul/tools/): a routine tool keeps a life ticking over and is no
        new deed; one that speaks says words aloud to the human, so its success is also contact
        (only once we know the words went out).
        """
        if not ok or routine:
            return
        if speaks:
            self.last_contact, self.last_contact_kind = now, "speak"
        self.boredom = 0
        self.last_discharge, self.last_discharge_tool = now, name
        self.save()

    def on_contact(self, now: datetime, kind: str) -> None:
        """The human really reached the soul: `converse` words or a `typed` line (or `speak`)."""
        if kind not in CONTACT_KINDS:
            raise ValueError(f"contact kind must be one of {', '.join(CONTACT_KINDS)}, not {kind!r}")
        self.last_contact, self.last_contact_kind = now, kind
        self.save()

    def on_nudge(self, nudge: Nudge, now: datetime) -> bool:
        """For every nudge as it arrives: counts as contact only if it carries a person's words."""
        if not words_of(nudge):
            return False
        self.on_contact(now, "typed")
        return True

    # --- what the soul feels --------------------------------------------------------------

    def silence_hours(self, now: datetime) -> float:
        since = self.last_contact or self.born or now
        return max(0.0, (now - since) / timedelta(hours=1))

    def boredom_level(self) -> int:
        """0 (content) to 3 (unbearable)."""
        return _level(self.boredom, self.boredom_thresholds)

    def missing_level(self, now: datetime) -> int:
        """0 (fine) to 2 (aching)."""
        return _level(self.silence_hours(now), self.missing_hours)

    def felt(self, now: datetime, lang) -> str | None:
        """The sensations for the snapshot's drives slot, or None when nothing is felt, in the soul's
        language `lang` (host/soul/prompts/: TEXT["boredom"], TEXT["missing"], one text a level)."""
        parts = []
        if level := self.boredom_level():
            parts.append(lang.TEXT["boredom"][level - 1])
        if level := self.missing_level(now):
            parts.append(lang.TEXT["missing"][level - 1])
        return "\n".join(parts) or None
