"""The flock's read API: the lists people gave it and what became of every item (docs/flock-api.md).

    GET /api/lists             every list, newest first
    GET /api/lists/{list_id}   one list with its items: stage, crows, answer and verdicts

Everything here is read from the store, never from memory, so a finished list's answers read the
same after a restart as before it. The items' rows hold their stage, answer and crows; when a
list finished and every verdict is in the event log (the events table), because the log is what
the flock already keeps for replaying a list to the page.
"""

import json

from aiohttp import web

from soulstack.clocks import rfc3339
from soulstack.flock.payloads import ItemSkipped, ListFinished, VerdictGiven, loose
from soulstack.flock.rows import ItemRow, ListRow
from soulstack.serving import error_response

TITLE_MAX = 80  # a list has no title of its own: its first item, cut to what a card shows


def title_of(items: list[ItemRow]) -> str:
    first = items[0].text.strip().splitlines()[0] if items else ""
    return first if len(first) <= TITLE_MAX else first[: TITLE_MAX - 1].rstrip() + "…"


def list_summary(lst: ListRow, items: list[ItemRow], finished_at: str | None) -> dict:
    """One list as the API shows it; `finished_at` is the time its list.finished event holds."""
    return {
        "list_id": lst.list_id,
        "owner": lst.requester,
        "title": title_of(items),
        "state": "finished" if lst.finished else "working",
        "created_at": rfc3339(lst.created),
        "finished_at": finished_at,
        "item_count": len(items),
        "tokens_used": lst.tokens_used,
        "token_budget": lst.token_budget,
        "nest_id": lst.nest_id,
    }


def verdict_note(target: str, verdict: str, item: ItemRow) -> str:
    """What the verdict was about, in words a card can show beside it."""
    triage = item.triage
    if target == "triage":
        parts = f", {len(triage.subtasks)} parts" if triage and triage.subtasks else ""
        mode, task_type = (triage.mode, triage.task_type) if triage else ("?", "?")
        about = f"the Sentry's call: {mode} ({task_type}{parts})"
    else:
        about = "the answer of " + (", ".join(item.crows) or "the crows")
    how = {
        "auto": "trusted: nobody was asked",
        "approved": "approved by a person",
        "rejected": "rejected by a person",
        "timeout": "nobody answered in time (counts as rejected)",
    }.get(verdict, verdict)
    return f"{about}; {how}"


def by_item(events: list) -> tuple[dict, str | None]:
    """A list's (id, name, data) event rows parsed once: {item_id: [(name, fields)]}, oldest first,
    and the time the list finished (None while it works)."""
    grouped: dict = {}
    finished_at = None
    for _id, name, data in events:
        fields = json.loads(data)
        if name == ListFinished.NAME:
            finished_at = fields["ts"]  # `ts` is every event's, stamped by EventLog.emit
        event = loose(name, fields)
        item_id = getattr(event, "item_id", None)
        if item_id is not None:
            grouped.setdefault(item_id, []).append((event, fields["ts"]))
    return grouped, finished_at


def item_view(item: ItemRow, events: list) -> dict:
    """One item as the API shows it; `events` are its own (declared event, ts), oldest first."""
    verdicts, skipped = [], None
    for event, ts in events:
        if isinstance(event, VerdictGiven):
            verdicts.append(
                {
                    "kind": event.target,
                    "verdict": event.verdict,
                    "note": verdict_note(event.target, event.verdict, item),
                    "at": ts,
                }
            )
        elif isinstance(event, ItemSkipped):
            skipped = event.reason
    triage = item.triage
    return {
        "item_id": item.item_id,
        "text": item.text,
        "stage": item.state,
        "crow": ", ".join(item.crows) or None,  # who answered, as a card names them
        "crows": item.crows,
        "answer": item.answer,  # markdown, as the crows (or the Elder) wrote it; the page sanitizes it
        "mode": triage.mode if triage else None,
        "task_type": triage.task_type if triage else None,
        "skipped_reason": skipped,
        "verdicts": verdicts,
    }


def make_routes(store_of):
    """The two GET handlers; `store_of(request)` gives the flock's Store (app.py knows where it lives)."""

    async def get_lists(request: web.Request) -> web.Response:
        store = store_of(request)
        finished = store.finished_times()
        lists = []
        for lst in store.all_lists():
            lists.append(list_summary(lst, store.items(lst.list_id), finished.get(lst.list_id)))
        return web.json_response({"lists": lists})

    async def get_list(request: web.Request) -> web.Response:
        store, list_id = store_of(request), request.match_info["list_id"]
        lst = store.get_list(list_id)
        if lst is None:
            return error_response(404, f"no list {list_id[:60]!r}; GET /api/lists lists them")
        items = store.items(list_id)
        events, finished_at = by_item(store.events_after(0, list_id))
        views = [item_view(item, events.get(item.item_id, [])) for item in items]
        return web.json_response({"list": list_summary(lst, items, finished_at), "items": views})

    return get_lists, get_list
