"""Serving HTTP: the one layer every soulstack server stands on.

Every server (the soul, the bodies, the bridge, tts, the flock, the adapters)
builds its aiohttp app with `make_server_app` and reads request bodies with
`read_json`, so what a stranger can send is answered the same way everywhere:

- one bearer-token check (constant time, the scheme case-insensitive, any bytes
  in the header refused without a crash), for every route or just some;
- every error as `{"message": "<what is wrong>"}` (or the app's own shape: the soul's /v1
  routes answer as OpenAI does), aiohttp's own 404/405/413 and the browser guard's refusals
  included; a bug is logged and answered 500, never hidden;
- JSON bodies held to what every later step can carry: UTF-8, at most
  `MAX_DEPTH` levels deep, and no text a terminal, a log line, SQLite, a TTS
  engine or a model call would choke on (see `text_problem`). Such a body is
  refused with 400 naming the field, never accepted and failed later.

- browsers kept out (docs/security.md): a JSON body only as
  `application/json` (a cross-site form or `text/plain` post is never a
  request), a `Host` that is an address or a name this machine answers to (no
  DNS rebinding), and no state-changing request from another site's page.

And running: `listening` binds (a taken port is a `UsageError` naming it; a
non-loopback address with no token is refused unless the owner says
`--insecure-no-token`), `run_until_stopped` runs a server command until Ctrl+C
or SIGTERM, and `background` runs a task for an app's lifetime through its
cleanup context.

And holding up under strangers (docs/security.md, "Connections"): `listening` caps the
connections a server holds and one address may hold (soulstack.connections), closes a
connection whose request headers have not arrived within `HEADER_TIMEOUT_S`, and
`read_json` gives a body `BODY_TIMEOUT_S` to arrive; a body that is not JSON is read through
`read_stream` (a stream: ears' audio) or `read_body` (whole: a photo upload), held to a size, a
whole-arrival time and a longest silence; `client_gone(request)` tells a
long-running handler its client left. A storage fault (a full disk, a database that cannot
write: soulstack.disk.storage) is answered 503 naming it, never 500; a client that hangs up
mid-request is one debug line, not a traceback.

And malformed HTTP (a bad chunk size, a NUL in a header): aiohttp refuses it with a 400 before any
handler runs, and its `aiohttp.server` logger wrote a traceback for each, so a neighbour could fill
a Pi's disk through the log. `listening` hands aiohttp a logger (`_BadHttpLog`) that writes one
debug line per malformed request instead (the first one also at info, once, saying where the
rest are counted) and counts them; every server's `GET /health` says `malformedRequests`
(`http_health`; an app without a /health of its own gets a small one here).
"""

import asyncio
import contextlib
import errno
import hmac
import json
import logging
import os
import signal
import socket
from collections.abc import Callable

import aiohttp
from aiohttp import web
from aiohttp.http_exceptions import HttpProcessingError
from aiohttp.log import server_logger
from aiohttp.web_protocol import RequestPayloadError

from soulstack.connections import Gate
from soulstack.errors import UsageError
from soulstack.exposure import Exposure, browser_guard, exposure_problem, insecure_warning
from soulstack.disk.storage import storage_problem

log = logging.getLogger(__name__)

MAX_DEPTH = 32  # nesting deeper than any request of ours; json.loads itself gives up near 1000
DEFAULT_MAX_BODY = 1024 * 1024
HEADER_TIMEOUT_S = 15.0  # a connection that has not sent a whole request head by then is closed
BODY_TIMEOUT_S = 30.0  # a JSON body (at most DEFAULT_MAX_BODY) must arrive in full within this
STREAM_IDLE_S = 10.0  # a streamed body (read_stream) that sends nothing for this long is cut off


class BadRequest(Exception):
    """The request cannot be taken as sent; the caller gets `status` and this message."""

    def __init__(self, message: str, status: int = 400):
        super().__init__(message)
        self.status = status


def error_response(status: int, message: str, **kwargs) -> web.Response:
    return web.json_response({"message": message}, status=status, **kwargs)


def message_body(request: web.Request, status: int, message: str) -> dict:
    """The error body every server of ours sends, unless its app shapes errors its own way."""
    return {"message": message}


ErrorBody = Callable[[web.Request, int, str], dict]
ERROR_BODY: web.AppKey[ErrorBody] = web.AppKey("error body")


def error_answer(request: web.Request, status: int, message: str, **kwargs) -> web.Response:
    """An error answered in the shape of the app's API (make_server_app's `error_body`; {"message"} by
    default): an OpenAI client reading the soul's /v1 routes expects OpenAI's shape for every error,
    aiohttp's own 404/405/413 and the browser guard's refusals included."""
    body = request.app.get(ERROR_BODY, message_body)(request, status, message)
    return web.json_response(body, status=status, **kwargs)


# --- the request body ----------------------------------------------------------


def text_problem(text: str) -> str | None:
    """Why `text` cannot be accepted, or None.

    A lone surrogate (JSON allows "\\ud800") cannot be written as UTF-8: accepted,
    it broke every later step that encodes (the terminal, SQLite, a model call).
    Control characters other than tab and line breaks would let a request drive
    a terminal (escape sequences) or hide text in a log. Both are refused.
    """
    for ch in text:
        code = ord(ch)
        if 0xD800 <= code <= 0xDFFF:
            return f"contains a lone surrogate (U+{code:04X}); send UTF-8 text"
        if (code < 0x20 and ch not in "\t\n\r") or 0x7F <= code <= 0x9F:
            return f"contains the control character U+{code:04X}; only tab and line breaks are allowed"
    return None


def check_json_value(value, where: str = "the body", max_depth: int = MAX_DEPTH):
    """Raise BadRequest when a decoded JSON value nests deeper than `max_depth` or holds bad text."""
    stack = [(value, where, 1)]
    while stack:
        item, path, depth = stack.pop()
        if depth > max_depth:
            raise BadRequest(f"{where} is nested more than {max_depth} levels deep")
        if isinstance(item, str):
            problem = text_problem(item)
            if problem:
                raise BadRequest(f"{path} {problem}")
        elif isinstance(item, dict):
            for key, child in item.items():
                problem = text_problem(key)
                if problem:
                    raise BadRequest(f"a key in {path} {problem}")
                stack.append((child, f'"{key}"' if path == where else f'{path}."{key}"', depth + 1))
        elif isinstance(item, list):
            stack.extend((child, f"{path}[{index}]", depth + 1) for index, child in enumerate(item))


def parse_json(raw: bytes, charset: str | None = None, max_depth: int = MAX_DEPTH):
    """A request body's JSON value, or BadRequest saying what is wrong with it."""
    if charset and charset.lower().replace("-", "") != "utf8":
        raise BadRequest(f"JSON must be UTF-8; the Content-Type says charset={charset[:40]}", status=415)
    if not raw.strip():
        raise BadRequest("the request has no body; send a JSON object")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise BadRequest("the request body is not UTF-8 text") from None
    try:
        value = json.loads(text)
    except RecursionError:
        raise BadRequest(f"the body is nested more than {max_depth} levels deep") from None
    except ValueError as error:
        raise BadRequest(f"the request body is not valid JSON ({error})") from None
    check_json_value(value, max_depth=max_depth)
    return value


async def read_json(request: web.Request, max_depth: int = MAX_DEPTH):
    """The request's JSON body, held to the rules above; BadRequest (400/413/415) otherwise.

    The bytes are decoded here, never by aiohttp's `.text()`/`.json()`, which raise
    LookupError on a bogus declared charset. Only `application/json` is read:
    it is the one type a page on another site cannot post without asking first
    (a CORS preflight, which no server of ours answers).
    """
    if request.content_type != "application/json":
        sent = request.headers.get("Content-Type")
        raise BadRequest(
            "send the body as JSON with Content-Type: application/json "
            f"({'not ' + sent[:60] if sent else 'no Content-Type was sent'})",
            status=415,
        )
    declared, cap = request.content_length, request.client_max_size
    if declared is not None and cap and declared > cap:
        # Refused before reading: waiting for bytes that are over the cap anyway would hold the
        # connection for the whole body timeout.
        raise BadRequest(f"the request body is too large ({declared} bytes; at most {cap})", status=413)
    try:
        async with asyncio.timeout(request.app.get(LIMITS, Limits()).body_timeout_s):
            raw = await request.read()
    except TimeoutError:
        raise BadRequest("the request body did not arrive in time; send it whole, promptly", status=408) from None
    except RequestPayloadError:
        raise body_cut_or_misencoded(request) from None
    return parse_json(raw, request.charset, max_depth)


def body_cut_or_misencoded(request: web.Request) -> BadRequest:
    """aiohttp's RequestPayloadError: a body that is not what its Content-Encoding says (it decodes
    gzip and deflate as the body arrives), or one cut short by a client that hung up."""
    encoding = request.headers.get("Content-Encoding", "").strip().lower()
    if encoding and encoding != "identity":
        return BadRequest(
            f"the request body is not {encoding[:20]} as its Content-Encoding says: "
            "send it as plain JSON, or encoded as declared"
        )
    return BadRequest("the request body was cut short; send it whole")


async def read_stream(request: web.Request, *, max_bytes: int, timeout_s: float, idle_s=STREAM_IDLE_S, chunk=4096):
    """A body that is not JSON (an audio stream), chunk by chunk as it arrives: an async iterator
    of up to `chunk` bytes each. It is held to bounds, so a stranger cannot hold a handler open:
    more than `max_bytes` is BadRequest 413, a body not whole within `timeout_s` or silent for
    `idle_s` is 408, one cut short (the client hung up) is 400. Uncaught, `json_errors` answers
    them as {"message"}; a handler that has work to undo catches BadRequest.

    aiohttp's `client_max_size` bounds only `request.read()`, and `read_json`'s timeout only a
    JSON body: a handler reading `request.content` itself has neither."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    size = 0
    while True:
        wait = min(idle_s, deadline - loop.time())
        try:
            if wait <= 0:
                raise TimeoutError
            async with asyncio.timeout(wait):
                piece = await request.content.read(chunk)
        except TimeoutError:
            if loop.time() >= deadline:
                raise BadRequest(f"the body did not arrive within {timeout_s:g} s; send it promptly", 408) from None
            raise BadRequest(f"the body stopped arriving (nothing for {idle_s:g} s); send it whole", 408) from None
        except RequestPayloadError:
            raise body_cut_or_misencoded(request) from None
        except (aiohttp.ClientPayloadError, ConnectionError):
            raise BadRequest("the body broke off before its end", 400) from None
        if not piece:
            return
        size += len(piece)
        if size > max_bytes:
            raise BadRequest(f"the body is larger than {max_bytes} bytes, the most this takes", 413)
        yield piece


async def read_body(request: web.Request, *, max_bytes: int, timeout_s: float | None = None) -> bytes:
    """A whole body that is not JSON (a multipart photo upload): `read_stream`'s bounds for a body
    read at once, within `timeout_s` (default: the app's body bound, as for JSON)."""
    if timeout_s is None:
        timeout_s = request.app.get(LIMITS, Limits()).body_timeout_s
    pieces = read_stream(request, max_bytes=max_bytes, timeout_s=timeout_s, chunk=65536)
    return b"".join([piece async for piece in pieces])


# --- auth and errors -----------------------------------------------------------


def bearer_matches(authorization: str | None, token: str) -> bool:
    """Whether an Authorization header value is `Bearer <token>`, compared in constant time.

    aiohttp hands over header bytes that are not UTF-8 as surrogate escapes;
    `surrogatepass` turns any of them back into bytes that simply do not match.
    """
    scheme, _, presented = (authorization or "").partition(" ")
    if scheme.lower() != "bearer":
        return False
    return hmac.compare_digest(presented.strip().encode("utf-8", "surrogatepass"), token.encode())


def refuse_json(request: web.Request, message: str) -> web.Response:
    return error_answer(request, 401, message)


def bearer_auth(token_for, refuse=refuse_json, cookie: str | None = None):
    """Middleware: each request must carry the token `token_for(request)` names (None: open).

    `refuse(request, message)` builds the 401, so an API with its own error
    shape (OpenAI's, on the soul's /v1 routes) keeps it. With `cookie`, a
    request without an Authorization header may carry the token in that cookie
    instead (a browser's EventSource cannot set headers).
    """

    def presented(request: web.Request) -> str | None:
        if "Authorization" not in request.headers and cookie and cookie in request.cookies:
            return "Bearer " + request.cookies[cookie]
        return request.headers.get("Authorization")

    @web.middleware
    async def middleware(request: web.Request, handler):
        token = token_for(request)
        if token and not bearer_matches(presented(request), token):
            reason = "wrong bearer token" if "Authorization" in request.headers else "missing bearer token"
            return refuse(request, f"{reason}; send Authorization: Bearer <token>")
        return await handler(request)

    return middleware


@web.middleware
async def json_errors(request: web.Request, handler):
    """Every error is answered in the app's shape (`error_answer`): ours, aiohttp's own pages, and bugs
    (logged, 500)."""
    try:
        return await handler(request)
    except BadRequest as error:
        return error_answer(request, error.status, str(error))
    except web.HTTPMethodNotAllowed as error:
        allowed = ", ".join(sorted(error.allowed_methods))
        message = f"{request.path} takes {allowed}, not {request.method}"
        return error_answer(request, 405, message, headers={"Allow": allowed})
    except web.HTTPNotFound:
        return error_answer(request, 404, f"there is nothing at {request.path}")
    except web.HTTPRequestEntityTooLarge as error:
        return error_answer(request, 413, f"the request is too large ({error.text})")
    except web.HTTPException as error:
        if error.status < 400:
            raise
        kept = {
            name: value
            for name, value in error.headers.items()
            if name.lower() not in ("content-type", "content-length")
        }
        return error_answer(request, error.status, error.reason, headers=kept)
    except (asyncio.CancelledError, KeyboardInterrupt):
        raise
    except ConnectionResetError as error:
        # The client hung up mid-request (its body cut short): nothing to answer, nothing broken.
        log.debug("%s %s: the client left before the request was read (%s)", request.method, request.path, error)
        return error_answer(request, 400, "the client left before its request arrived")  # written to no one
    except Exception as error:
        problem = storage_problem(error)
        if problem:
            log.error("%s %s: storage failed: %s", request.method, request.path, problem)
            return error_answer(request, 503, f"the server could not save this: {problem}; try again once it has room")
        log.exception("%s %s failed", request.method, request.path)
        return error_answer(request, 500, f"the server failed: {type(error).__name__} (a bug; see its log)")


EXPOSURE = web.AppKey("exposure", Exposure)


class Limits:
    """How much of a server one stranger may hold (soulstack.connections); None: the defaults."""

    def __init__(self, max_connections=None, max_per_client=None, header_timeout_s=None, body_timeout_s=None):
        self.max_connections = max_connections
        self.max_per_client = max_per_client
        self.header_timeout_s = header_timeout_s or HEADER_TIMEOUT_S
        self.body_timeout_s = body_timeout_s or BODY_TIMEOUT_S


LIMITS = web.AppKey("limits", Limits)
GATE = web.AppKey("gate", Gate)


def make_server_app(
    token=None,
    *,
    token_for=None,
    refuse=refuse_json,
    error_body: ErrorBody = message_body,
    cookie=None,
    client_max_size=DEFAULT_MAX_BODY,
    middlewares=(),
    locked=None,
    how_to_lock="--token-file FILE",
    limits: Limits | None = None,
):
    """An aiohttp app with the shared middlewares: JSON errors, the browser guard, then the bearer check.

    `token` guards every route; `token_for(request)` picks one per request instead.
    `locked` says whether a token guards it (default: `token` is set), and
    `how_to_lock` how the owner sets one: `listening` refuses a LAN address
    without one and says so. `error_body(request, status, message)` is the body of every error
    answer (`error_answer`), for an API whose clients expect their own shape. `limits` caps connections and bounds how long a request may
    take to arrive (the defaults above).
    """
    if token_for is None:
        token_for = lambda request: token  # noqa: E731
    app = web.Application(
        middlewares=[json_errors, browser_guard(error_answer), bearer_auth(token_for, refuse, cookie), *middlewares],
        client_max_size=client_max_size,
    )
    app[ERROR_BODY] = error_body
    app[EXPOSURE] = Exposure(locked=bool(token) if locked is None else locked, how_to_lock=how_to_lock)
    app[LIMITS] = limits or Limits()
    app[HTTP_FAULTS] = HttpFaults()
    return app


def client_gone(request: web.Request) -> asyncio.Future:
    """A future done once the client of `request` has hung up (an event stream's reader left)."""
    gate = request.app.get(GATE)
    if gate is None:  # an app served some other way: only a transport already gone is known
        future = asyncio.get_running_loop().create_future()
        if request.transport is None or request.transport.is_closing():
            future.set_result(None)
        return future
    return gate.gone(request.transport)


class _GatedSite(web.TCPSite):
    """aiohttp's TCP site with the connection gate in front of its protocol."""

    def __init__(self, runner, host, port, gate: Gate):
        super().__init__(runner, host, port)
        self.gate = gate

    async def start(self) -> None:
        await web.BaseSite.start(self)  # registers with the runner; TCPSite.start would bind ungated
        loop = asyncio.get_running_loop()
        self._server = await loop.create_server(self.gate.wrap(self._runner.server), self._host, self._port)


# --- malformed HTTP ------------------------------------------------------------


class HttpFaults:
    """What one server counts of requests it could not even parse (shown in /health)."""

    def __init__(self):
        self.malformed = 0


HTTP_FAULTS = web.AppKey("http_faults", HttpFaults)


def http_health(app: web.Application) -> dict:
    """The serving layer's fields for a server's /health: how many malformed requests it refused."""
    faults = app.get(HTTP_FAULTS)
    return {"malformedRequests": faults.malformed if faults else 0}


def _first_line(error: HttpProcessingError) -> str:
    """The parser's complaint without the peer's bytes (its message quotes the bad line under it):
    a stranger's text never reaches the log, and a line stays a line."""
    words = next((line.strip() for line in str(error.message).splitlines() if line.strip()), "")
    return words.rstrip(":")[:120] or type(error).__name__


class _BadHttpLog:
    """The logger aiohttp's request handler writes to (its `logger=`), standing in for `aiohttp.server`.

    aiohttp reports a request it cannot parse as `logger.exception(..., exc_info=<HttpProcessingError>)`
    (a bad first request line: `logger.debug` with the same). Those become one counted debug line;
    anything else (a bug) goes to aiohttp's own logger unchanged, traceback and all."""

    def __init__(self, faults: HttpFaults):
        self.faults = faults

    def __getattr__(self, name):  # warning, info, ...: aiohttp's logger as it is
        return getattr(server_logger, name)

    def _malformed(self, args, exc_info) -> bool:
        if not isinstance(exc_info, HttpProcessingError):
            return False
        self.faults.malformed += 1
        remote = args[0] if args else "?"
        code = exc_info.code or 400
        if self.faults.malformed == 1:  # once per run, so a flood costs the log one line at info
            log.info(
                "refused a malformed HTTP request from %s (%s: %s); later ones are counted in /health "
                "(malformedRequests), each a line at debug level",
                remote,
                code,
                _first_line(exc_info),
            )
        else:
            log.debug("refused a malformed HTTP request from %s (%s: %s)", remote, code, _first_line(exc_info))
        return True

    def exception(self, message, *args, exc_info=True, **kwargs):
        if not self._malformed(args, exc_info):
            server_logger.exception(message, *args, exc_info=exc_info, **kwargs)

    def debug(self, message, *args, exc_info=None, **kwargs):
        if not self._malformed(args, exc_info):
            server_logger.debug(message, *args, exc_info=exc_info, **kwargs)


def _add_health(app: web.Application) -> None:
    """Give an app with no GET /health of its own (the flock, tts, a body) one that says what the
    serving layer counts; the app's bearer check guards it like its other routes."""
    if app.frozen or any(
        resource.canonical == "/health" and any(route.method == "GET" for route in resource)
        for resource in app.router.resources()
    ):
        return

    async def health(request: web.Request) -> web.Response:
        return web.json_response({"ok": True, **http_health(request.app)})

    app.router.add_get("/health", health)


# --- running -------------------------------------------------------------------


def background(coroutine_function):
    """A cleanup context that runs `coroutine_function()` as a task for the app's lifetime."""

    async def context(app):
        task = asyncio.create_task(coroutine_function())
        yield
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task

    return context


def check_exposure(host: str, locked: bool, insecure_no_token: bool, how_to_lock: str = "--token-file FILE"):
    """The LAN rule, asked before a command says it started or makes anything: `UsageError` if refused.
    (`listening` asks again, for every caller that did not.)"""
    problem = exposure_problem(host, Exposure(locked, how_to_lock), insecure_no_token)
    if problem:
        raise UsageError(problem)


@contextlib.asynccontextmanager
async def listening(
    app: web.Application,
    host: str,
    ports,
    hint: str = "choose another address or port",
    insecure_no_token: bool = False,
):
    """Serve `app` on host and every port in `ports` (an int or a list) inside the block.

    Yields the bound port (for an int) or the list of them (port 0 picks a free one).
    A port already taken is a user mistake: `UsageError` naming it and `hint`.
    So is an address other machines can reach while no token guards the app,
    unless `insecure_no_token` (the owner's --insecure-no-token).
    """
    exposure = app.get(EXPOSURE) or Exposure(locked=False)
    check_exposure(host, exposure.locked, insecure_no_token, exposure.how_to_lock)
    if insecure_no_token and not exposure.locked:
        log.warning(insecure_warning(host))
    port_list = [ports] if isinstance(ports, int) else list(ports)
    limits = app.get(LIMITS) or Limits()
    gate = Gate(limits.max_connections, limits.max_per_client)
    if GATE not in app:
        app[GATE] = gate
    gate = app[GATE]
    if HTTP_FAULTS not in app and not app.frozen:
        app[HTTP_FAULTS] = HttpFaults()
    _add_health(app)
    # aiohttp's keep-alive timer closes a connection still waiting for a whole request: one
    # that sent nothing, a slow trickle of header lines, or an idle one after its last answer.
    faults = app.get(HTTP_FAULTS) or HttpFaults()
    runner = web.AppRunner(app, access_log=None, keepalive_timeout=limits.header_timeout_s, logger=_BadHttpLog(faults))
    await runner.setup()
    bound = []
    try:
        for port in port_list:
            site = _GatedSite(runner, host, port, gate)
            try:
                await site.start()
            except (OSError, OverflowError) as error:  # OverflowError: a port above 65535
                raise UsageError(f"cannot listen on {host}:{port} {bind_problem(error, host, hint)}") from None
            server = site._server
            assert isinstance(server, asyncio.Server), "a started TCP site serves on an asyncio.Server"
            bound.append(server.sockets[0].getsockname()[1])
        yield bound[0] if isinstance(ports, int) else bound
    finally:
        await runner.cleanup()


def check_free_to_listen(host: str, ports, hint: str = "choose another address or port") -> None:
    """UsageError, as `listening` gives, when `host` cannot take one of `ports` now: for a program that
    would otherwise make files first (the soul's folder) and only then find its port taken. Each
    address is tried as asyncio's server binds it (SO_REUSEADDR) and let go at once; `listening`'s
    own bind still decides, since another program may take the port in between."""
    for port in [ports] if isinstance(ports, int) else list(ports):
        if not port:
            continue  # any free one: nothing to find out
        try:
            addresses = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
            for family, kind, proto, _name, address in addresses:
                with socket.socket(family, kind, proto) as probe:
                    probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                    probe.bind(address)
        except (OSError, OverflowError) as error:
            raise UsageError(f"cannot listen on {host}:{port} {bind_problem(error, host, hint)}") from None


def bind_problem(error: Exception, host: str, hint: str) -> str:
    """Why a server could not listen, and what to change: the host when it is not this machine's,
    else the port (`hint`)."""
    if isinstance(error, OverflowError):  # asyncio's "bind(): port must be 0-65535."
        return f"(a port is 0 to 65535; 0: any free one); {hint}"
    if isinstance(error, socket.gaierror):  # the name does not resolve
        return f"(no host is called {host}); --host takes an address of this machine, such as 127.0.0.1"
    number = getattr(error, "errno", None)
    if number == errno.EADDRNOTAVAIL:
        return f"({host} is not an address of this machine); --host takes one of its own, such as 127.0.0.1 or 0.0.0.0"
    # asyncio's own text repeats the address: the errno's words say it once
    return f"({os.strerror(number) if number else error}); {hint}"


async def serve_forever(app: web.Application, host: str, port: int, announce=print, insecure_no_token=False):
    """Serve `app` until cancelled (Ctrl+C or SIGTERM through `run_until_stopped`)."""
    async with listening(app, host, port, insecure_no_token=insecure_no_token) as bound:
        announce(f"listening on http://{host}:{bound}")
        await asyncio.Event().wait()


def run_until_stopped(main) -> int:
    """Run the coroutine `main` until it ends, Ctrl+C or SIGTERM; returns 0 on a clean stop.

    Every `soulstack` server command runs through this so stopping one never
    prints a traceback and always runs its cleanup.
    """

    async def guarded():
        task = asyncio.current_task()
        loop = asyncio.get_running_loop()
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(signal.SIGTERM, task.cancel)
        try:
            return await main
        except asyncio.CancelledError:
            return 0

    try:
        return asyncio.run(guarded()) or 0
    except KeyboardInterrupt:
        return 0
