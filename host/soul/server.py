"""The soul's one HTTP server (default 127.0.0.1:9202): POST /nudge, and whatever features add.

`make_soul_app(soul)` builds the aiohttp app. Features living in other modules
add their routes through `add_routes(app, soul)`: every module named in
`ROUTE_MODULES` that exists and defines it is called (GET /health from the
metabolism, POST /v1/chat/completions from converse), and a caller may pass
more as `extra_routes`. Every route is served on every port the soul listens
on (nudge.port, and converse.port / health.port when they differ).

POST /nudge {"reason": "<what happened>"} -> 202 {"queued": true, "state": ...}
  400 {"message"} for a body that is not {"reason": non-empty string}
  401 {"message"} when nudge.token is set and the bearer token is missing or wrong
"""

import importlib
import json
import logging

from aiohttp import web

from soulstack.protocol.body_app import bearer_matches, error_response

log = logging.getLogger("soul.server")

SOUL = web.AppKey("soul", object)
ROUTE_MODULES = ("soulstack.soul.health", "soulstack.soul.converse")
MAX_REASON_CHARS = 2000


def token_refusal(request: web.Request, token: str | None) -> web.Response | None:
    """401 {"message"} when `token` is set and the request does not carry it; else None."""
    if not token or bearer_matches(request, token):
        return None
    reason = "wrong bearer token" if "Authorization" in request.headers else "missing bearer token"
    return error_response(401, f"{reason}; send Authorization: Bearer <token>")


async def nudge(request: web.Request) -> web.Response:
    soul = request.app[SOUL]
    refusal = token_refusal(request, soul.cfg["nudge"]["token"])
    if refusal is not None:
        return refusal
    try:
        body = json.loads(await request.read() or b"null")
    except (ValueError, UnicodeDecodeError):
        return error_response(400, 'the body is not JSON; send {"reason": "<what happened>"}')
    if not isinstance(body, dict) or not isinstance(body.get("reason"), str) or not body["reason"].strip():
        return error_response(400, 'send {"reason": "<what happened>"} with a non-empty string')
    reason = " ".join(body["reason"].split())
    if len(reason) > MAX_REASON_CHARS:
        return error_response(400, f'"reason" is {len(reason)} characters; at most {MAX_REASON_CHARS}')
    state = soul.state
    soul.nudge(reason)
    log.info("nudge (%s): %s", state, reason)
    return web.json_response({"queued": True, "state": state}, status=202)


def make_soul_app(soul, extra_routes=(), route_modules=ROUTE_MODULES) -> web.Application:
    app = web.Application()
    app[SOUL] = soul
    app.router.add_post("/nudge", nudge)
    for name in route_modules:
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as error:
            if error.name and name.startswith(error.name):
                continue  # that feature is not built yet
            raise
        if hasattr(module, "add_routes"):
            module.add_routes(app, soul)
    for add_routes in extra_routes:
        add_routes(app, soul)
    return app


def ports(cfg: dict) -> list:
    """Every port the soul serves on: nudge.port first, then converse/health ports that differ."""
    out = [cfg["nudge"]["port"]]
    for extra in (cfg["converse"]["port"], cfg["health"]["port"]):
        if extra is not None and extra not in out:
            out.append(extra)
    return out


async def start(app: web.Application, host: str, port_list: list) -> tuple:
    """(runner, bound ports). A port that cannot be bound is a UsageError naming it."""
    from soulstack.cli import UsageError

    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    bound = []
    for port in port_list:
        site = web.TCPSite(runner, host, port)
        try:
            await site.start()
        except OSError as error:
            await runner.cleanup()
            raise UsageError(f"cannot listen on {host}:{port} ({error.strerror or error}); change that port in the config (nudge.port, converse.port or health.port) or --host") from None
        bound.append(site._server.sockets[0].getsockname()[1])
    return runner, bound
