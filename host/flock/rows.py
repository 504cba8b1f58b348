"""The flock's stored lists, items and nests as typed rows (host/flock/store.py reads and writes them).

The database keeps what it kept before rows were typed: the same columns, and the same JSON text
in `items.triage` and `items.crows` (`Triage.json` writes the keys in the order the flow's dict
had them, with json's default separators), so a flock.db written by an older flock loads, and one
written now reads the same to an older one (tests/flock/test_flock_rows.py).
"""

import json
from dataclasses import dataclass
from enum import StrEnum
from typing import Any


class ItemState(StrEnum):
    """Where an item stands (soulstack.flock.lists.flow's diagram); the value is the stored word."""

    QUEUED = "queued"
    TRIAGING = "triaging"
    AWAITING_TRIAGE = "awaiting_triage"
    APPROVED = "approved"
    FLYING = "flying"
    AWAITING_OUTPUT = "awaiting_output"
    DONE = "done"
    SKIPPED = "skipped"

    @classmethod
    def awaiting(cls, target: str) -> "ItemState":
        """The state of an item waiting for a person's verdict on `target` (triage / output)."""
        return cls(f"awaiting_{target}")


@dataclass(frozen=True, slots=True)
class OpenFlag:
    """A Sentry flag that waits for the owner's verdict (a row of nest_questions, with the flag's why):
    GET /api/waiting lists it, the robot's voice asks about it."""

    flag_msg_id: str
    nest_id: str
    crow: str
    why: str  # the Sentry's reason, from the crow's own words: no person's
    deadline: float  # Unix time when the quarantine stays for good (fail safe)


@dataclass(frozen=True, slots=True, kw_only=True)
class NestRow:
    """A nest (soulstack.flock.nests.registry): its id, a slug of its name; its name; its core crows (none for
    `todo`, whose crows are the whole roster)."""

    nest_id: str
    name: str
    crows: list[str]

    def wire(self) -> dict[str, Any]:
        """As /api/nests and nests.json show it."""
        return {"nest_id": self.nest_id, "name": self.name, "crows": self.crows}


@dataclass(frozen=True, slots=True, kw_only=True)
class Triage:
    """The Sentry's call on an item (soulstack.flock.lists.sentry), and whether a person must approve it."""

    mode: str  # solo / split / murder
    task_type: str
    subtasks: list[str]
    reason: str
    needs_approval: bool = False  # decided by trust after the Sentry's call

    @classmethod
    def of(cls, call: dict[str, Any], needs_approval: bool = False) -> "Triage":
        """From sentry.normalize's dict (or a stored one: an older row lacking a key reads as empty)."""
        return cls(
            mode=call["mode"],
            task_type=call["task_type"],
            subtasks=list(call.get("subtasks") or []),
            reason=call.get("reason", ""),
            needs_approval=bool(call.get("needs_approval", needs_approval)),
        )

    def fields(self) -> dict[str, Any]:
        """The item.triaged event's fields, and the stored JSON's keys, in their order."""
        return {
            "mode": self.mode,
            "task_type": self.task_type,
            "subtasks": self.subtasks,
            "reason": self.reason,
            "needs_approval": self.needs_approval,
        }

    def json(self) -> str:
        return json.dumps(self.fields())


@dataclass(frozen=True, slots=True, kw_only=True)
class ListRow:
    list_id: str
    requester: str
    nest_id: str
    token_budget: int
    tokens_used: int
    finished: bool
    created: float  # clock seconds


LIST_COLUMNS = ("list_id", "requester", "nest_id", "token_budget", "tokens_used", "finished", "created")


def list_row(row: tuple[Any, ...]) -> ListRow:
    values = dict(zip(LIST_COLUMNS, row, strict=True))
    values["finished"] = bool(values["finished"])  # stored 0/1
    return ListRow(**values)


@dataclass(frozen=True, slots=True, kw_only=True)
class ItemRow:
    item_id: str  # <list_id>-<n>
    list_id: str
    n: int
    text: str
    state: ItemState
    triage: Triage | None
    answer: str | None
    crows: list[str]


ITEM_COLUMNS = ("item_id", "list_id", "n", "text", "state", "triage", "answer", "crows")


def item_row(row: tuple[Any, ...]) -> ItemRow:
    item_id, list_id, n, text, state, triage, answer, crows = row
    return ItemRow(
        item_id=item_id,
        list_id=list_id,
        n=n,
        text=text,
        state=ItemState(state),
        triage=Triage.of(json.loads(triage)) if triage else None,
        answer=answer,
        crows=json.loads(crows) if crows else [],
    )
