"""The flock's log for people: one readable line per meaningful event.

The SSE events are for programs; this turns the same events into lines a
person follows in a terminal or `journalctl`: a list received, the Sentry's
call, crows out and back, answers, verdicts, skips, and each nest message. Events with nothing for
a person (or of kinds added later) make no line. The events are typed (soulstack.flock.payloads),
so a line reads the fields the declaration names and every one is there.
"""

import logging

from soulstack.flock import payloads as p

log = logging.getLogger(__name__)


def _triaged(e: p.ItemTriaged) -> str:
    parts = f", {len(e.subtasks)} parts" if e.subtasks else ""
    wait = "; waits for your approval" if e.needs_approval else ""
    return f"{e.item_id}: the Sentry says {e.mode} ({e.task_type}{parts}): {e.reason}{wait}"


def _landed(e: p.CrowLanded) -> str:
    if e.ok:
        return f"{e.item_id}: {e.crow} is back ({e.tokens} tokens)"
    return f"{e.item_id}: {e.crow} came back without a result: {e.error or 'no reason given'}"


def _answered(e: p.ItemAnswered) -> str:
    wait = "; waits for your approval" if e.needs_approval else ""
    return f"{e.item_id}: answered by {', '.join(e.crows)}{wait}"


def _nest_message(e: p.NestMessage) -> str:
    """Who posted which kind, to whom, about what. Never the words of the owner or a crow (the log is
    not private); the server's own notes and flags, yes: they say why a crow is quarantined."""
    to = f" to {e.to}" if e.to else ""
    about = f" about {e.refers_to}" if e.refers_to else ""
    if e.author in ("harness", "Sentry"):
        return f"{e.msg_id}: {e.author} {e.kind}{to}{about}: {e.text}"
    return f"{e.msg_id}: {e.author} {e.kind}{to}{about} (tagged by {e.tagged_by})"


LINES = {
    p.ListStarted: lambda e: f"list {e.list_id} received from {e.requester}: {len(e.items)} item(s)",
    p.ItemTriaged: _triaged,
    p.CrowFlying: lambda e: f"{e.item_id}: {e.crow} is flying" + (" (borrowed)" if e.borrowed else ""),
    p.CrowLanded: _landed,
    p.ItemAnswered: _answered,
    p.VerdictGiven: lambda e: f"{e.item_id}: {e.target} {e.verdict}",
    p.ItemSkipped: lambda e: f"{e.item_id}: skipped ({e.reason})",
    p.RequesterPranked: lambda e: f"list {e.list_id}: its requester was caught pranking: {e.message}",
    p.ListFinished: lambda e: f"list {e.list_id} finished: {e.tokens_used} of {e.token_budget} tokens used",
    p.NestMessage: _nest_message,
}


def describe(event) -> str | None:
    """The line for one event (a declaration of soulstack.flock.payloads), or None when it has none."""
    line = LINES.get(type(event))
    return line(event) if line else None


def note(event) -> None:
    line = describe(event)
    if line:
        log.info("%s", line)
