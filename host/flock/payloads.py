"""The flock's events, declared once: each event's name and its fields, in the order they go out.

The contract (docs/events.md) is the spec; these classes are its one statement in code. `EventLog.emit`
(host/flock/events.py) takes one of them, the journal and the robot's voice read them, and `/api/ui`
serves the names and fields to the page (`catalogue`). tests/flock/test_event_declarations.py checks
docs/events.md against them, both ways.

A declaration's field order is the wire's: `payload(ts)` gives the fields in exactly the order the
flock wrote them before they were declared, so the SSE stream and the stored event log keep their
bytes (tests/flock/test_flock_rows.py: an older flock's log written back byte for byte). `ts` is no
field of a list event: `emit` stamps it from the clock. `loose` reads a stored or heard payload back.
"""

from dataclasses import MISSING, dataclass, field, fields
from enum import StrEnum
from typing import Any, ClassVar, TypedDict


class Verdict(StrEnum):
    """A judgment on a target. Its value is the wire's word; a StrEnum so json writes it as that word."""

    APPROVED = "approved"
    REJECTED = "rejected"
    AUTO = "auto"  # trust skipped the question
    TIMEOUT = "timeout"  # nobody answered in time: counts as a rejection

    @classmethod
    def of_answer(cls, approve: bool) -> "Verdict":
        return cls.APPROVED if approve else cls.REJECTED

    @property
    def approves(self) -> bool:
        """Whether trust counts it as a yes (`auto` never reaches the ledger)."""
        return self is Verdict.APPROVED


class Skip(StrEnum):
    """Why an item was dropped: the member's name is the code a program matches, its value the words
    people read (the wire's `reason`, unchanged from before the codes; `/api/ui` serves the pairs)."""

    NO_MODEL = "no model configured"
    TRIAGE_REJECTED = "triage rejected"
    TRIAGE_TIMEOUT = "triage timeout"
    BUDGET = "budget"
    FAILURE = "failure"
    ABUSIVE = "abusive"
    INTERRUPTED = "interrupted"
    STORAGE_FAILURE = "storage failure"

    @classmethod
    def of_triage(cls, verdict: Verdict) -> "Skip":
        """A triage that was not approved: rejected, or (a timeout) counted as rejected."""
        return cls.TRIAGE_TIMEOUT if verdict is Verdict.TIMEOUT else cls.TRIAGE_REJECTED

    @property
    def code(self) -> str:
        return self.name.lower()


class StartedItem(TypedDict):
    item_id: str
    text: str


def optional() -> Any:  # dataclasses.field's own trick: a default that type-checks as the field's type
    """A field the wire leaves out while it is None (crow.landed's `error`)."""
    return field(default=None, metadata={"optional": True})


def wire_name(name: str) -> Any:
    """A field whose wire name is a Python keyword (trust.changed's `from`)."""
    return field(metadata={"wire": name})


@dataclass(frozen=True, slots=True, kw_only=True)
class Event:
    """What every declaration has: its wire name."""

    NAME: ClassVar[str] = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class ListEvent(Event):
    """An event of the list streams: every payload has `list_id` (and `ts`, from emit)."""

    # The fields that make it one of a kind within its list: told once (Flock._emit_once asks the
    # store for an event with these values before telling it again after a storage fault).
    ONCE_BY: ClassVar[tuple[str, ...]] = ()

    list_id: str

    def payload(self, ts: str) -> dict[str, Any]:
        """The wire payload: `list_id`, `ts`, then the fields in order, with their wire names."""
        payload: dict[str, Any] = {"list_id": self.list_id, "ts": ts}
        for attr, name, omit in _layout(type(self))[1:]:
            value = getattr(self, attr)
            if not (omit and value is None):
                payload[name] = value
        return payload

    def once_by(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in self.ONCE_BY}


@dataclass(frozen=True, slots=True, kw_only=True)
class ListStarted(ListEvent):
    NAME = "list.started"
    items: list[StartedItem]
    requester: str
    nest_id: str
    token_budget: int  # ours: the page shows tokens against it from the start


@dataclass(frozen=True, slots=True, kw_only=True)
class ItemTriaged(ListEvent):
    NAME = "item.triaged"
    item_id: str
    mode: str  # solo / split / murder
    task_type: str
    subtasks: list[str]
    reason: str
    needs_approval: bool


@dataclass(frozen=True, slots=True, kw_only=True)
class CrowFlying(ListEvent):
    NAME = "crow.flying"
    item_id: str
    crow: str
    borrowed: bool


@dataclass(frozen=True, slots=True, kw_only=True)
class CrowLanded(ListEvent):
    NAME = "crow.landed"
    item_id: str
    crow: str
    ok: bool
    tokens: int
    error: str | None = optional()


@dataclass(frozen=True, slots=True, kw_only=True)
class CrowBanter(ListEvent):
    NAME = "crow.banter"
    item_id: str
    crow: str  # who speaks
    to: str  # the crow spoken to
    text: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ItemAnswered(ListEvent):
    NAME = "item.answered"
    item_id: str
    answer: str
    crows: list[str]
    needs_approval: bool


@dataclass(frozen=True, slots=True, kw_only=True)
class VerdictGiven(ListEvent):
    NAME = "verdict"
    ONCE_BY = ("item_id", "target")
    item_id: str
    target: str  # triage / output
    verdict: Verdict


@dataclass(frozen=True, slots=True, kw_only=True)
class TrustChanged(ListEvent):
    NAME = "trust.changed"
    ONCE_BY = ("item_id", "holder")
    item_id: str  # ours: the judged item
    holder: str
    task_type: str
    from_: int = wire_name("from")  # the level before (0 stranger, 1 regular, 2 trusted)
    to: int


@dataclass(frozen=True, slots=True, kw_only=True)
class ItemSkipped(ListEvent):
    NAME = "item.skipped"
    ONCE_BY = ("item_id",)
    item_id: str
    reason: Skip


@dataclass(frozen=True, slots=True, kw_only=True)
class RequesterPranked(ListEvent):
    NAME = "requester.pranked"
    message: str
    cooldown_s: int


@dataclass(frozen=True, slots=True, kw_only=True)
class ListFinished(ListEvent):
    NAME = "list.finished"
    tokens_used: int
    token_budget: int


@dataclass(frozen=True, slots=True, kw_only=True)
class NestMessage(Event):
    """The nest stream's one event: its payload is the whole stored message record."""

    NAME = "nest.message"
    nest_id: str
    ts: str
    msg_id: str  # <nest_id>-<n>
    kind: str
    author: str
    text: str
    to: str
    refers_to: str
    tagged_by: str  # jev / header / disagreement / default

    def wire(self) -> dict[str, str]:
        return {attr: getattr(self, attr) for attr, _, _ in _layout(type(self))}

    @classmethod
    def of(cls, record: dict[str, Any]) -> "NestMessage":
        """A stored record read back (soulstack.flock.nests.store keeps each as its wire() JSON)."""
        return cls(**{attr: str(record.get(name, "")) for attr, name, _ in _layout(cls)})


# The all-lists stream's events, in the order docs/events.md's table names them.
LIST_EVENTS: tuple[type[ListEvent], ...] = (
    ListStarted,
    ItemTriaged,
    CrowFlying,
    CrowLanded,
    CrowBanter,
    ItemAnswered,
    VerdictGiven,
    TrustChanged,
    ItemSkipped,
    RequesterPranked,
    ListFinished,
)
DECLARED: tuple[type[Event], ...] = (*LIST_EVENTS, NestMessage)
BY_NAME: dict[str, type[Event]] = {cls.NAME: cls for cls in DECLARED}

Layout = tuple[tuple[str, str, bool], ...]
_LAYOUTS: dict[type[Event], Layout] = {}


def _layout(cls: type[Event]) -> Layout:
    """[(attribute, wire name, left out when None)] of a declaration, worked out once per class."""
    layout = _LAYOUTS.get(cls)
    if layout is None:
        layout = _LAYOUTS[cls] = tuple(
            (f.name, f.metadata.get("wire", f.name), bool(f.metadata.get("optional"))) for f in fields(cls)
        )
    return layout


def field_names(cls: type[Event]) -> list[str]:
    """A declaration's wire fields, in order (list events: `list_id`, then `ts`, then the rest)."""
    names = [name for _, name, _ in _layout(cls)]
    return names[:1] + ["ts"] + names[1:] if issubclass(cls, ListEvent) else names


def at(cls: type[Event], name: str) -> str:
    """SQLite's json path to a declared field of the stored payload, `$.<name>`; an undeclared name
    fails at import, so the store's queries name only what the declarations name."""
    if name not in field_names(cls):
        raise KeyError(f"{cls.NAME} declares no field {name!r}")
    return f"$.{name}"


def optional_fields(cls: type[Event]) -> list[str]:
    return [name for _, name, omit in _layout(cls) if omit]


def loose(name: str, payload: dict[str, Any]) -> Any:
    """An event as read back from a log or a listener (robot.py): the declaration of `name` with each
    field the payload holds, and None for each it lacks; None for a name nobody declared."""
    cls = BY_NAME.get(name)
    if cls is None:
        return None
    # Any: the caller tells the declarations apart with isinstance, and a lacking field reads as None.
    event = object.__new__(cls)
    for attr, wire, _ in _layout(cls):
        object.__setattr__(event, attr, payload.get(wire))
    return event


def catalogue() -> dict[str, dict[str, Any]]:
    """What `/api/ui` serves: each event's wire name under its declaration's name (the page's E, in
    host/flock/web/events.js), the verdicts likewise (its V), each event's wire fields, and the skip
    reasons' codes and words."""
    return {
        "names": {cls.__name__: cls.NAME for cls in BY_NAME.values()},
        "verdicts": {verdict.name: verdict.value for verdict in Verdict},  # the page's V
        "fields": {cls.NAME: field_names(cls) for cls in BY_NAME.values()},
        "skip_reasons": {reason.code: reason.value for reason in Skip},
    }


def _required(cls: type[Event]) -> None:
    # A declaration's fields must all be given at construction, except the optional ones: a default
    # would let an emit leave a field out without anyone noticing.
    for f in fields(cls):
        assert f.default is MISSING or f.metadata.get("optional"), (cls, f.name)


for _cls in BY_NAME.values():
    _required(_cls)
