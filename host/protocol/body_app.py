"""Serving Body Protocol v1: the aiohttp app every body is built on.

A body hands `make_body_app` one async handler per endpoint it implements. The
handler receives the already-validated request (`{"text": ...}` for /speak)
and returns its answer. Everything a body could get wrong on the wire is done
here once: POST only, bearer-token check, JSON parsing, request and answer
shapes, and honest error statuses. A body never answers a fake 2xx:

    400  the request is not JSON or not the shape the endpoint takes
    401  a token is configured and the request lacks it or has another
    405  a method other than POST
    502  the handler failed, or answered in the wrong shape (a body bug)
    503  the handler raised BodyUnavailable (it cannot act right now)

Every error answer is `{"message": "<what is wrong>"}`.
"""

import asyncio
import contextlib
import hmac
import json
import logging
import signal

from aiohttp import web

from soulstack.protocol import shapes as protocol

log = logging.getLogger(__name__)

HANDLERS_KEY = web.AppKey("body_handlers", dict)
TOKEN_KEY = web.AppKey("body_token", str)


class BodyUnavailable(Exception):
    """Raised by a handler that cannot act right now; the caller gets 503 and this message."""


def error_response(status: int, message: str, **kwargs) -> web.Response:
    return web.json_response({"message": message}, status=status, **kwargs)


def bearer_matches(request: web.Request, token: str) -> bool:
    """Whether the request carries `Authorization: Bearer <token>`, compared in constant time."""
    header = request.headers.get("Authorization", "")
    scheme, _, presented = header.partition(" ")
    if scheme.lower() != "bearer":
        return False
    return hmac.compare_digest(presented.strip().encode(), token.encode())


@web.middleware
async def json_errors(request: web.Request, handler):
    """Turn aiohttp's own 404/405/413 pages into `{"message"}` answers like ours."""
    try:
        return await handler(request)
    except web.HTTPMethodNotAllowed as error:
        return error_response(
            405,
            f"{request.path} takes POST, not {request.method}",
            headers={"Allow": ", ".join(sorted(error.allowed_methods))},
        )
    except web.HTTPNotFound:
        return error_response(404, f"this body has no {request.path}")
    except web.HTTPRequestEntityTooLarge as error:
        return error_response(413, f"the request is too large ({error.text})")


async def _read_json(request: web.Request):
    raw = await request.read()
    if not raw.strip():
        raise protocol.ProtocolError("the request has no body; send a JSON object such as {}")
    try:
        return json.loads(raw)
    except (ValueError, UnicodeDecodeError) as error:
        raise protocol.ProtocolError(f"the request is not valid JSON ({error})") from None


def _endpoint_view(endpoint: str):
    async def view(request: web.Request) -> web.Response:
        token = request.app.get(TOKEN_KEY)
        if token and not bearer_matches(request, token):
            reason = "wrong bearer token" if "Authorization" in request.headers else "missing bearer token"
            return error_response(401, f"{reason}; send Authorization: Bearer <token>")
        try:
            clean = protocol.validate_request(endpoint, await _read_json(request))
        except protocol.ProtocolError as error:
            return error_response(400, str(error))

        handler = request.app[HANDLERS_KEY][endpoint]
        try:
            answer = await handler(clean)
        except BodyUnavailable as error:
            return error_response(503, str(error) or f"the body cannot {endpoint} right now")
        except asyncio.CancelledError:
            raise
        except Exception as error:
            log.exception("/%s handler failed", endpoint)
            return error_response(502, f"the body failed to {endpoint}: {type(error).__name__}: {error}")
        try:
            answer = protocol.validate_response(endpoint, answer)
        except protocol.ProtocolError as error:
            log.error("/%s handler answered in the wrong shape: %s", endpoint, error)
            return error_response(502, f"the body answered /{endpoint} in the wrong shape: {error}")
        return web.json_response(answer)

    return view


def make_body_app(handlers: dict, token: str | None = None) -> web.Application:
    """An aiohttp app serving POST /<endpoint> for each endpoint in `handlers`.

    `handlers` maps endpoint name ("status", "look", "speak", "express") to
    `async def handler(request: dict) -> dict`. With `token`, every endpoint
    demands `Authorization: Bearer <token>`. The caller may add further routes
    or cleanup contexts to the returned app.
    """
    unknown = set(handlers) - set(protocol.ENDPOINTS)
    if unknown:
        raise ValueError(f"unknown Body Protocol endpoints: {', '.join(sorted(unknown))}")
    app = web.Application(middlewares=[json_errors])
    app[HANDLERS_KEY] = dict(handlers)
    if token:
        app[TOKEN_KEY] = token
    for endpoint in handlers:
        app.router.add_post(f"/{endpoint}", _endpoint_view(endpoint))
    return app


# --- running a server -----------------------------------------------------------


@contextlib.asynccontextmanager
async def listening(app: web.Application, host: str, port: int):
    """Serve `app` on host:port while inside the block; yields the bound port (useful with port 0).

    A port already taken or an address that cannot be bound is a user mistake:
    it raises `soulstack.cli.UsageError` with one line saying what to change.
    """
    from soulstack.cli import UsageError

    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, host, port)
    try:
        await site.start()
    except (OSError, OverflowError) as error:  # OverflowError: a port above 65535
        await runner.cleanup()
        raise UsageError(f"cannot listen on {host}:{port} ({getattr(error, 'strerror', None) or error}); choose another address or port") from None
    try:
        yield runner.addresses[0][1]
    finally:
        await runner.cleanup()


async def serve_forever(app: web.Application, host: str, port: int, announce=print):
    """Serve `app` until cancelled (Ctrl+C or SIGTERM through `run_until_stopped`)."""
    async with listening(app, host, port) as bound:
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
