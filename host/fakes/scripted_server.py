"""What the fake model servers share: a loopback aiohttp server, a script of
replies, and a record of every request.

`host/fakes/anthropic_api.py` and `host/fakes/openai_api.py` subclass
`ScriptedServer`; see those files for how a test uses them.
"""

import asyncio
import inspect
import json
from collections import deque
from dataclasses import dataclass

from aiohttp import web

from soulstack.fakes.loopback import LoopbackServer


@dataclass
class Recorded:
    """One request as the fake received it."""

    method: str
    path: str
    headers: dict  # lower-cased names
    body: dict | None  # parsed JSON, None when the body was not JSON
    raw: bytes


class ScriptedServer(LoopbackServer):
    """A loopback HTTP server that answers from a queue of scripted replies.

    A reply is whatever the subclass understands (a spec dict, a string), or a
    callable taking the request JSON and returning one — sync or async, so a
    test can answer from what was sent or wait on an `asyncio.Event` to play a
    slow model. When the queue is empty, `default` answers (itself a reply or
    a callable); with no default the fake answers 400 saying the script ran out.
    """

    def __init__(self, replies=(), *, default=None):
        self.script = deque(replies)
        self.default = default
        self.requests: list[Recorded] = []

    # --- scripting -------------------------------------------------------
    def reply(self, *replies):
        """Queue replies, answered in order, one per request."""
        self.script.extend(replies)
        return self

    async def next_reply(self, body):
        if self.script:
            item = self.script.popleft()
        elif self.default is not None:
            item = self.default
        else:
            return None
        if callable(item):
            item = item(body)
            if inspect.isawaitable(item):
                item = await item
        return item

    # --- serving ---------------------------------------------------------
    def routes(self, app: web.Application):  # pragma: no cover - subclasses add routes
        raise NotImplementedError

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def make_app(self) -> web.Application:
        app = web.Application(client_max_size=64 * 1024 * 1024)
        self.routes(app)
        return app

    async def record(self, request: web.Request) -> Recorded:
        raw = await request.read()
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        entry = Recorded(
            request.method,
            request.path,
            {k.lower(): v for k, v in request.headers.items()},
            body,
            raw,
        )
        self.requests.append(entry)
        return entry

    @property
    def bodies(self) -> list:
        """The JSON bodies of the requests so far, oldest first."""
        return [r.body for r in self.requests]


def steered(spec: dict, *, after_event=None, cut_after: int | None = None) -> dict:
    """A reply spec whose stream the test steers: `after_event(data)` (sync or async) runs after
    each event is written -- it may sleep to pace a model, note the time, or wait on an
    `asyncio.Event` to hold the rest back; `cut_after=n` drops the connection after n events,
    a stream that dies midway. Only streamed requests are steered."""
    return dict(spec, after_event=after_event, cut_after=cut_after)


def sse_frame(name, data: str) -> bytes:
    return ((f"event: {name}\n" if name else "") + f"data: {data}\n\n").encode()


async def sse(
    request: web.Request,
    events,
    *,
    after_event=None,
    cut_after: int | None = None,
    frame=sse_frame,
    content_type="text/event-stream",
) -> web.StreamResponse:
    """Write `events` (pairs of event name or None, data string) as Server-Sent Events (see `steered`),
    or framed by `frame(name, data) -> bytes` as another streaming protocol frames them."""
    response = web.StreamResponse(headers={"Content-Type": content_type, "Cache-Control": "no-cache"})
    await response.prepare(request)
    for number, (name, data) in enumerate(events):
        if number == cut_after:
            if request.transport is not None:
                request.transport.close()  # no end chunk: the client sees the body break off
            return response
        await response.write(frame(name, data))
        waited = (
            after_event(data) if after_event else asyncio.sleep(0)
        )  # by default, let the client read chunk by chunk
        if inspect.isawaitable(waited):
            await waited
    await response.write_eof()
    return response
