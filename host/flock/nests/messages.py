"""Nest messages: what a POST may carry, and the per-nest log that numbers,
stores and streams them.

A message is stored (which numbers it: `<nest_id>-<n>` from 1) before it goes
to live subscribers as a `nest.message` SSE event whose `id:` is n. A client
that reconnects with `Last-Event-ID: n` gets every later message of that nest
from the store, in order, then live ones; without it, the stream starts live
(GET /api/nests/{id}/messages?after=n loads history).
"""

import json

from aiohttp import web

from soulstack.flock import events as sse
from soulstack.flock import journal
from soulstack.flock.request_bodies import require_object
from soulstack.serving import BadRequest
from soulstack.clocks import rfc3339
from soulstack.flock.jev.local import KINDS as CROW_KINDS
from soulstack.flock.nests.store import stored
from soulstack.flock.payloads import NestMessage

KINDS = (*CROW_KINDS, "nudge", "flag")
TEXT_MAX = 2000  # the same cap as a list item
NAME_MAX = 100
HISTORY_PAGE = 500


def message_body(body) -> dict:
    """-> {author, text, to, kind (header or ""), refers_to} from a POST body, or BadRequest."""
    body = require_object(body)
    author, text = body.get("author"), body.get("text")
    if not isinstance(author, str) or not (1 <= len(author.strip()) <= NAME_MAX):
        raise BadRequest(f'"author" must be "owner" or the name of a crow of this nest (1-{NAME_MAX} characters)')
    if not isinstance(text, str) or not (1 <= len(text.strip()) <= TEXT_MAX):
        raise BadRequest(f'"text" must be a string of 1-{TEXT_MAX} characters after trimming')
    fields = {"author": author.strip(), "text": text.strip()}
    for key in ("to", "kind", "refers_to"):
        value = body.get(key, "")
        if value is None:
            value = ""
        if not isinstance(value, str) or len(value) > NAME_MAX:
            raise BadRequest(f'"{key}", when given, must be a string of at most {NAME_MAX} characters')
        fields[key] = value.strip()
    if fields["kind"] in ("nudge", "flag"):
        who = "the harness" if fields["kind"] == "nudge" else "the Sentry"
        raise BadRequest(f'kind "{fields["kind"]}" is posted by {who} only, never through the API')
    if fields["kind"] and fields["kind"] not in CROW_KINDS:
        raise BadRequest(f'"kind" must be one of {", ".join(CROW_KINDS)}')
    return fields


def parse_after(value: str, newest: int, what: str) -> int:
    value = value.strip()
    if not (value.isascii() and value.isdigit()) or int(value) > newest:
        raise BadRequest(f"{what} must be a message number of this nest (0 to {newest})")
    return int(value)


class NestLog:
    """Numbers, stores and streams one flock's nest messages."""

    def __init__(self, nest_store, clock):
        self.store = nest_store
        self.clock = clock
        self.subscribers = sse.Subscribers()  # keyed by nest_id

    def append(
        self, nest_id: str, kind: str, author: str, text: str, to: str, refers_to: str, tagged_by: str
    ) -> NestMessage:
        n = self.store.last_n(nest_id) + 1
        ts, msg_id = rfc3339(self.clock.time()), f"{nest_id}-{n}"
        # The record as declared (soulstack.flock.payloads.NestMessage); stored and streamed as its wire dict.
        message = NestMessage(
            nest_id=nest_id,
            ts=ts,
            msg_id=msg_id,
            kind=kind,
            author=author,
            text=text,
            to=to,
            refers_to=refers_to,
            tagged_by=tagged_by,
        )
        self.store.add_message(nest_id, n, message)
        journal.note(message)
        # The same text as the row keeps: a replay (Last-Event-ID) sends that one.
        self.subscribers.send(nest_id, (n, sse.frame(n, NestMessage.NAME, stored(message))))
        return message

    def correct(self, nest_id: str, n: int, message: NestMessage) -> None:
        self.store.set_record(nest_id, n, message)

    def history(self, nest_id: str, after: str | None) -> list:
        start = 0 if after is None else parse_after(after, self.store.last_n(nest_id), "after")
        return [json.loads(data) for _, data in self.store.messages_after(nest_id, start, HISTORY_PAGE)]

    async def stream(self, request: web.Request, nest_id: str, heartbeat_s: float) -> web.StreamResponse:
        header = request.headers.get("Last-Event-ID", "").strip()
        query_after = request.query.get("after")
        newest = self.store.last_n(nest_id)
        try:  # `?after=n` means what the header means, as on the lists' streams; the header wins, both are checked
            from_header = parse_after(header, newest, "Last-Event-ID") if header else None
            from_query = parse_after(query_after, newest, "after") if query_after is not None else None
        except BadRequest as error:
            raise web.HTTPBadRequest(reason=str(error)) from None
        after = from_header if from_header is not None else from_query
        subscriber = sse.Subscriber(nest_id)
        self.subscribers.add(subscriber)  # before reading the store: nothing falls in between

        def missed():
            if after is None:
                return [], self.store.last_n(nest_id)
            rows = self.store.messages_after(nest_id, after)
            return [(n, NestMessage.NAME, data) for n, data in rows], (rows[-1][0] if rows else after)

        return await sse.follow(request, self.subscribers, subscriber, missed, heartbeat_s)

    def close_all(self) -> None:
        self.subscribers.close_all()
