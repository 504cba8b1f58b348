"""The flock's log for people: one readable line per meaningful event.

The SSE events are for programs; this turns the same events into lines a
person follows in a terminal or `journalctl`: a list received, the Sentry's
call, crows out and back, answers, verdicts, skips. Events with nothing for
a person (or of kinds added later) make no line.
"""

import logging

log = logging.getLogger(__name__)


def _triaged(p):
    parts = f", {len(p['subtasks'])} parts" if p.get("subtasks") else ""
    wait = "; waits for your approval" if p.get("needs_approval") else ""
    return f"{p['item_id']}: the Sentry says {p['mode']} ({p['task_type']}{parts}): {p['reason']}{wait}"


def _landed(p):
    if p.get("ok"):
        return f"{p['item_id']}: {p['crow']} is back ({p.get('tokens', 0)} tokens)"
    return f"{p['item_id']}: {p['crow']} came back without a result: {p.get('error', 'no reason given')}"


def _answered(p):
    wait = "; waits for your approval" if p.get("needs_approval") else ""
    return f"{p['item_id']}: answered by {', '.join(p['crows'])}{wait}"


LINES = {
    "list.started": lambda p: f"list {p['list_id']} received from {p['requester']}: {len(p['items'])} item(s)",
    "item.triaged": _triaged,
    "crow.flying": lambda p: f"{p['item_id']}: {p['crow']} is flying" + (" (borrowed)" if p.get("borrowed") else ""),
    "crow.landed": _landed,
    "item.answered": _answered,
    "verdict": lambda p: f"{p['item_id']}: {p['target']} {p['verdict']}",
    "item.skipped": lambda p: f"{p['item_id']}: skipped ({p['reason']})",
    "requester.pranked": lambda p: f"list {p['list_id']}: its requester was caught pranking: {p['message']}",
    "list.finished": lambda p: f"list {p['list_id']} finished: {p['tokens_used']} of {p['token_budget']} tokens used",
}


def describe(name: str, payload: dict) -> str | None:
    """The line for one event, or None when it has none."""
    line = LINES.get(name)
    try:
        return line(payload) if line else None
    except KeyError:  # a field this journal does not know yet: no line rather than no event
        return None


def note(name: str, payload: dict) -> None:
    line = describe(name, payload)
    if line:
        log.info("%s", line)
