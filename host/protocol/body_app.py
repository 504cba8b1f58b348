"""Serving Body Protocol v1: the aiohttp app every body is built on.

A body hands `make_body_app` one async handler per endpoint it implements. The
handler receives the already-validated request (`{"text": ...}` for /speak)
and returns its answer. Everything a body could get wrong on the wire is done
here once: POST only, bearer-token check, JSON parsing, request and answer
shapes, and honest error statuses. A body never answers a fake 2xx:

    400  the request is not JSON or not the shape the endpoint takes, or the handler raised
         BadRequest (the request itself cannot be done: a text the voice has no sound for)
    401  a token is configured and the request lacks it or has another
    405  a method other than POST
    502  the handler failed, or answered in the wrong shape (a body bug)
    503  the handler raised BodyUnavailable (it cannot act right now)

Every error answer is `{"message": "<what is wrong>"}`.
"""

import asyncio
import logging

from aiohttp import web

from soulstack.protocol import shapes as protocol
from soulstack.serving import BadRequest, error_response, make_server_app, read_json

log = logging.getLogger(__name__)

HANDLERS_KEY = web.AppKey("body_handlers", dict)


class BodyUnavailable(Exception):
    """Raised by a handler that cannot act right now; the caller gets 503 and this message."""


def _endpoint_view(endpoint: str):
    async def view(request: web.Request) -> web.Response:
        try:
            clean = protocol.validate_request(endpoint, await read_json(request))
        except protocol.ProtocolError as error:
            raise BadRequest(str(error)) from None

        handler = request.app[HANDLERS_KEY][endpoint]
        try:
            answer = await handler(clean)
        except BodyUnavailable as error:
            return error_response(503, str(error) or f"the body cannot {endpoint} right now")
        except (BadRequest, asyncio.CancelledError):
            raise  # BadRequest: the handler found the request itself at fault (a 400 naming what)
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
    app = make_server_app(token, how_to_lock="--token-file FILE (or $BODY_TOKEN)")
    app[HANDLERS_KEY] = dict(handlers)
    for endpoint in handlers:
        app.router.add_post(f"/{endpoint}", _endpoint_view(endpoint))
    return app
