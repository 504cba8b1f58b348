"""The event log and its SSE stream.

Every event is written to the store first (that assigns its global, monotonic
id) and then handed to live subscribers. A subscriber that reconnects with
`Last-Event-ID` is replayed from the store, so nothing is lost between
connections. `?after=<id>` means the same for clients that cannot set headers
(a browser's EventSource); the header wins when both are present.

Without either, a per-list stream replays that list from its start (a list is
finite, and its `list.started` usually fires before the client can connect);
the all-lists stream starts live, unless `?recent=N` asks for an opening view:
every event of the N lists started last and of every list still unfinished
(which holds every pending approval), then live. The web page opens that way.

What an event is (its name and fields) is declared once, in soulstack.flock.payloads: `emit` takes
one of those declarations.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from aiohttp import web
from aiohttp_sse import EventSourceResponse

from soulstack.flock import journal
from soulstack.flock.payloads import ListEvent
from soulstack.clocks import rfc3339
from soulstack.serving import client_gone

if TYPE_CHECKING:
    from soulstack.clocks import Clock
    from soulstack.flock.store import Store

# What a subscriber's queue holds: (event id, framed bytes), or CLOSE.
Entry = tuple[int, bytes]
# What a stream replays: rows of (id, name, data) from the store, and the last id they reach.
Missed = tuple[list[tuple[int, str, str]], int]

log = logging.getLogger(__name__)

# A subscriber that falls this far behind is dropped; its client reconnects and replays.
QUEUE_LIMIT = 10_000
CLOSE = object()
REPLAY_BATCH = 500  # messages per write
SEND_TIMEOUT_S = 30


class Subscriber:
    """One SSE connection's queue. `key` is what it follows: a list id or a nest id (None: every list)."""

    def __init__(self, key: str | None):
        self.key = key
        self.queue: asyncio.Queue[Entry | object] = asyncio.Queue(QUEUE_LIMIT)

    def offer(self, entry: Entry | object) -> bool:
        try:
            self.queue.put_nowait(entry)
            return True
        except asyncio.QueueFull:
            return False

    def close_now(self) -> None:
        """Throw away what is queued and end the stream; the client replays it on reconnect."""
        while not self.queue.empty():
            self.queue.get_nowait()
        self.queue.put_nowait(CLOSE)


class Subscribers:
    """The live subscribers of one stream (the event log's, the nests' log's): the one fan-out.

    An entry, (id, framed bytes), goes to every subscriber whose key is None or the entry's
    key. One that falls QUEUE_LIMIT behind is dropped and closed: its client reconnects and
    replays from the store. `follow` adds a connection's subscriber and discards it at the end.
    """

    def __init__(self) -> None:
        self.live: set[Subscriber] = set()

    def add(self, subscriber: Subscriber) -> None:
        self.live.add(subscriber)

    def discard(self, subscriber: Subscriber) -> None:
        self.live.discard(subscriber)

    def send(self, key: str, entry: Entry) -> int:
        """Offer `entry` to the subscribers of `key`; -> how many were dropped for falling behind."""
        dropped = 0
        for subscriber in list(self.live):
            if subscriber.key in (None, key) and not subscriber.offer(entry):
                self.live.discard(subscriber)
                subscriber.close_now()
                dropped += 1
        return dropped

    def close_all(self) -> None:
        """The server is stopping: every stream ends after what it has queued."""
        for subscriber in list(self.live):
            subscriber.offer(CLOSE)
        self.live.clear()


class EventLog:
    def __init__(self, store: Store, clock: Clock) -> None:
        self.store = store
        self.clock = clock
        self.subscribers = Subscribers()
        # In-process callables (event_id, name, payload), e.g. the robot's voice; never blocking.
        self.listeners: list[Callable[[int, str, dict[str, Any]], object]] = []

    def emit(self, event: ListEvent) -> dict[str, Any]:
        """Store, tell and stream one event (declared in soulstack.flock.payloads). -> its payload."""
        name, list_id = event.NAME, event.list_id
        payload = event.payload(rfc3339(self.clock.time()))
        data = json.dumps(payload, ensure_ascii=False)
        event_id = self.store.append_event(list_id, name, data)
        journal.note(event)
        entry = (event_id, frame(event_id, name, data))  # framed once, written to every subscriber
        for _ in range(self.subscribers.send(list_id, entry)):
            log.warning("dropping an SSE subscriber %d events behind; it will replay on reconnect", QUEUE_LIMIT)
        for listener in self.listeners:
            try:
                listener(event_id, name, payload)
            except Exception:  # a listener's bug must never stop the flock's work
                log.exception("an event listener failed on %s", name)
        return payload

    def close_all(self) -> None:
        self.subscribers.close_all()


def frame(event_id: int, name: str, data: str) -> bytes:
    """One SSE message. json.dumps escapes every line break, so `data` is always one line."""
    return f"id: {event_id}\r\nevent: {name}\r\ndata: {data}\r\n\r\n".encode()


RECENT_MAX = 100  # lists in an opening view


def parse_event_id(value: str, newest: int) -> int:
    """An event id a client sent back; ValueError unless it is one this server could have sent."""
    value = value.strip()
    if not (value.isascii() and value.isdigit()) or int(value) > newest:
        raise ValueError(value)
    return int(value)


def where_to_start(request: web.Request, store: Store, list_id: str | None) -> tuple[int | None, int | None]:
    """-> (after, recent): replay events after id `after`, or (after None) the opening view of
    `recent` lists. Every value given is checked, even one that a stronger one overrides."""
    newest = store.last_event_id()
    header = request.headers.get("Last-Event-ID", "").strip() or None
    query_after = request.query.get("after")
    recent = request.query.get("recent")
    try:
        from_header = None if header is None else parse_event_id(header, newest)
    except ValueError:
        raise web.HTTPBadRequest(reason="Last-Event-ID must be an event id this server sent") from None
    try:
        from_query = None if query_after is None else parse_event_id(query_after, newest)
    except ValueError:
        raise web.HTTPBadRequest(reason=f"after must be an event id this server sent (0 to {newest})") from None
    lists = None
    if recent is not None:
        if list_id is not None:
            raise web.HTTPBadRequest(reason="recent is for the all-lists stream; a list's stream replays it whole")
        if not (recent.isascii() and recent.isdigit() and 1 <= int(recent) <= RECENT_MAX):
            raise web.HTTPBadRequest(reason=f"recent must be a number of lists from 1 to {RECENT_MAX}")
        lists = int(recent)
    after = from_header if from_header is not None else from_query
    if after is not None:
        return after, None
    if lists is not None:
        return None, lists
    return (0 if list_id is not None else newest), None


async def stream(request: web.Request, events: EventLog, list_id: str | None, heartbeat_s: float) -> web.StreamResponse:
    """Serve one SSE connection: replay what the client missed, then follow live events."""
    after, recent = where_to_start(request, events.store, list_id)
    subscriber = Subscriber(list_id)
    # Subscribe before reading the store, so an event emitted in between is in one or the other.
    events.subscribers.add(subscriber)

    def missed() -> Missed:
        if recent is None:
            assert after is not None, "where_to_start gives one of the two"
            rows = events.store.events_after(after, list_id)
            return rows, (rows[-1][0] if rows else after)
        # Everything up to `last` was either chosen for the view or deliberately left out;
        # live events above it all go out.
        last = events.store.last_event_id()
        return events.store.recent_lists_events(recent, last), last

    return await follow(request, events.subscribers, subscriber, missed, heartbeat_s)


async def follow(
    request: web.Request,
    subscribers: Subscribers,
    subscriber: Subscriber,
    missed: Callable[[], Missed],
    heartbeat_s: float,
) -> web.StreamResponse:
    """Write `missed()` -> (rows of (id, name, data), last id), then the subscriber's live
    entries above that id, until the client leaves or the server closes the stream.
    The subscriber must already be in `subscribers` (so nothing falls in between)."""
    # aiohttp-sse gives the response its headers and the heartbeat comment. Messages are framed
    # by `frame` and written in batches: under load one write carries every message that queued
    # up meanwhile, which keeps delivery latency flat with many subscribers. The stream ends as
    # soon as its reader hangs up (`client_gone`), not at the next event or heartbeat, so readers
    # that come and go leave nothing behind.
    response = EventSourceResponse(ping_interval=heartbeat_s)
    gone = client_gone(request)
    try:
        await response.prepare(request)
        rows, last = missed()
        for start in range(0, len(rows), REPLAY_BATCH):
            await _write(response, b"".join(frame(*row) for row in rows[start : start + REPLAY_BATCH]))
        while True:
            entry = await _next_or_gone(subscriber.queue, gone)
            if entry is None:
                break  # the reader left
            entries = [entry]
            while not subscriber.queue.empty() and len(entries) < REPLAY_BATCH:
                entries.append(subscriber.queue.get_nowait())
            closing = any(entry is CLOSE for entry in entries)
            fresh = [entry for entry in entries if isinstance(entry, tuple) and entry[0] > last]  # not CLOSE
            if fresh:
                await _write(response, b"".join(data for _, data in fresh))
                last = fresh[-1][0]
            if closing:
                break
    except (ConnectionResetError, TimeoutError):
        pass
    finally:
        subscribers.discard(subscriber)
        if response.prepared:
            response.stop_streaming()
    return response


async def _next_or_gone(queue: asyncio.Queue[Entry | object], gone: asyncio.Future[Any]) -> Entry | object | None:
    """The queue's next entry, or None once the client has gone (whichever comes first)."""
    if not queue.empty():
        return queue.get_nowait()
    if gone.done():
        return None
    getting = asyncio.ensure_future(queue.get())
    try:
        await asyncio.wait({getting, gone}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        if not getting.done():
            getting.cancel()
    if getting.done() and not getting.cancelled():
        return getting.result()
    return None


async def _write(response: EventSourceResponse, data: bytes) -> None:
    """Write or give up on a stalled client (it reconnects and replays what it missed)."""
    async with asyncio.timeout(SEND_TIMEOUT_S):
        await response.write(data)
