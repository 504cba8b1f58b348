"""The soul's one HTTP server (default 127.0.0.1:9202): POST /nudge, and the routes features add.

`make_soul_app(soul, routes)` builds the aiohttp app on the shared serving layer
(soulstack.serving: one bearer check, JSON errors, safe JSON bodies). `routes`
are `add_routes(app, soul)` functions passed in by whoever builds the soul
(soulstack.soul.run: GET /health from the metabolism, POST /v1/chat/completions
from converse). Every route is served on every port the soul listens on
(nudge.port, and converse.port / health.port when they differ).

Tokens: /v1/... needs converse.token (default: nudge.token) and is refused in
OpenAI's error shape; every other route needs nudge.token.

POST /nudge {"reason": "<what happened>"} -> 202 {"queued": true, "state": ...}
  400 {"message"} for a body that is not {"reason": non-empty string}
  401 {"message"} when nudge.token is set and the bearer token is missing or wrong
"""

import logging

from aiohttp import web

from soulstack.serving import BadRequest, make_server_app, read_json
from soulstack.soul.loop import Soul

log = logging.getLogger("soul.server")

SOUL = web.AppKey("soul", Soul)
MAX_REASON_CHARS = 2000


async def nudge(request: web.Request) -> web.Response:
    soul = request.app[SOUL]
    body = await read_json(request)
    if not isinstance(body, dict) or not isinstance(body.get("reason"), str) or not body["reason"].strip():
        raise BadRequest('send {"reason": "<what happened>"} with a non-empty string')
    reason = " ".join(body["reason"].split())
    if len(reason) > MAX_REASON_CHARS:
        raise BadRequest(f'"reason" is {len(reason)} characters; at most {MAX_REASON_CHARS}')
    state = soul.state
    soul.nudge(reason)
    log.info("nudge (%s): %s", state, reason)
    return web.json_response({"queued": True, "state": state}, status=202)


def make_soul_app(soul: Soul, routes=()) -> web.Application:
    from soulstack.soul.converse import openai_refusal

    cfg = soul.cfg
    nudge_token = cfg["nudge"]["token"]
    converse_token = cfg["converse"]["token"] or nudge_token

    def token_for(request: web.Request):
        return converse_token if request.path.startswith("/v1/") else nudge_token

    def refuse(request: web.Request, message: str) -> web.Response:
        if request.path.startswith("/v1/"):
            return openai_refusal(request, message)
        return web.json_response({"message": message}, status=401)

    app = make_server_app(token_for=token_for, refuse=refuse)
    app[SOUL] = soul
    app.router.add_post("/nudge", nudge)
    for add_routes in routes:
        add_routes(app, soul)
    return app


def ports(cfg: dict) -> list:
    """Every port the soul serves on: nudge.port first, then converse/health ports that differ."""
    out = [cfg["nudge"]["port"]]
    for extra in (cfg["converse"]["port"], cfg["health"]["port"]):
        if extra is not None and extra not in out:
            out.append(extra)
    return out
