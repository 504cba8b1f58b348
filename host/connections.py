"""Connections: how many a server holds, how many one address may hold, and who left.

Every soulstack server listens through `soulstack.serving.listening`, which puts this gate in
front of aiohttp's protocol, so a stranger's sockets cannot starve the people the server is for:

- at most `max_connections` open at once (by default well below the process's file limit,
  so the server always has files left for its database and its own calls) and at most
  `max_per_client` from one address. A connection over either cap is answered at once
  (503 for a full server, 429 for one address holding too many), as `{"message"}`, and closed;
  it never waits in a queue holding a file.
- the request's headers must arrive within the server's header bound (aiohttp's keep-alive
  timer, which closes a connection that has not sent a whole request by then; set by
  `serving.listening`), a JSON body within `serving.BODY_TIMEOUT_S` (`serving.read_json`), and a
  streamed body (audio) within the size, time and silence `serving.read_stream` is given.
- `gone(request)` is a future that completes when the request's client hangs up, so a handler
  that waits for a long time (an event stream) ends as soon as its reader has left.
"""

import asyncio
import json
import logging
import resource
from collections import Counter

log = logging.getLogger(__name__)

DEFAULT_MAX_CONNECTIONS = 1024
DEFAULT_MAX_PER_CLIENT = 256
FILES_KEPT_BACK = 128  # files left for everything but connections: the database, logs, outgoing calls


def default_max_connections() -> int:
    """DEFAULT_MAX_CONNECTIONS, or fewer when the file limit (ulimit -n, LimitNOFILE) is lower."""
    soft, _hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        return DEFAULT_MAX_CONNECTIONS
    return max(16, min(DEFAULT_MAX_CONNECTIONS, soft - FILES_KEPT_BACK, soft * 3 // 4))


def _refusal(status: int, reason: str, message: str) -> bytes:
    body = json.dumps({"message": message}).encode()
    head = (
        f"HTTP/1.1 {status} {reason}\r\nContent-Type: application/json; charset=utf-8\r\n"
        f"Content-Length: {len(body)}\r\nRetry-After: 5\r\nConnection: close\r\n\r\n"
    )
    return head.encode() + body


class Gate:
    """Counts a server's open connections; admits, refuses, and tells who left."""

    def __init__(self, max_connections: int | None = None, max_per_client: int | None = None):
        self.max_connections = max_connections or default_max_connections()
        self.max_per_client = max_per_client or DEFAULT_MAX_PER_CLIENT
        self.open = 0
        self.by_client: Counter = Counter()
        self.admitted: set = set()  # the transports of the connections open now
        self.leaving: dict = {}  # transport -> future set when its connection closes

    def wrap(self, factory):
        """A protocol factory for loop.create_server: `factory`'s protocols behind this gate."""
        return lambda: _Gated(self, factory())

    def refusal(self, client: str) -> bytes | None:
        if self.open >= self.max_connections:
            return _refusal(
                503,
                "Service Unavailable",
                f"the server holds {self.open} connections, the most it serves at once; try again shortly",
            )
        if self.by_client[client] >= self.max_per_client:
            return _refusal(
                429,
                "Too Many Requests",
                f"your address holds {self.by_client[client]} connections to this server, the most one "
                "address may; close some and try again",
            )
        return None

    def gone(self, transport) -> asyncio.Future:
        """A future that is done once `transport`'s connection has closed (at once if it has)."""
        future = self.leaving.get(transport)
        if future is None:
            future = asyncio.get_running_loop().create_future()
            if transport is None or transport.is_closing() or transport not in self.admitted:
                future.set_result(None)
            else:
                self.leaving[transport] = future
        return future

    # --- bookkeeping for _Gated ---------------------------------------------------------
    def opened(self, transport, client: str) -> None:
        self.open += 1
        self.by_client[client] += 1
        self.admitted.add(transport)

    def closed(self, transport, client: str) -> None:
        self.open -= 1
        self.by_client[client] -= 1
        if self.by_client[client] <= 0:
            del self.by_client[client]
        self.admitted.discard(transport)
        future = self.leaving.pop(transport, None)
        if future is not None and not future.done():
            future.set_result(None)


class _Gated(asyncio.Protocol):
    """aiohttp's protocol for one connection, admitted only within the gate's caps."""

    def __init__(self, gate: Gate, inner):
        self.gate = gate
        self.inner = inner
        self.transport = None
        self.client = ""

    def connection_made(self, transport) -> None:
        peer = transport.get_extra_info("peername")
        self.client = str(peer[0]) if isinstance(peer, tuple) and peer else str(peer)
        refusal = self.gate.refusal(self.client)
        if refusal is not None:
            self.inner = None
            transport.write(refusal)
            transport.close()
            return
        self.transport = transport
        self.gate.opened(transport, self.client)
        self.inner.connection_made(transport)

    def data_received(self, data: bytes) -> None:
        if self.inner is not None:
            self.inner.data_received(data)

    def eof_received(self):
        if self.inner is not None:
            return self.inner.eof_received()
        return None

    def pause_writing(self) -> None:
        if self.inner is not None:
            self.inner.pause_writing()

    def resume_writing(self) -> None:
        if self.inner is not None:
            self.inner.resume_writing()

    def connection_lost(self, exc) -> None:
        if self.inner is None:
            return
        self.gate.closed(self.transport, self.client)
        self.inner.connection_lost(exc)
