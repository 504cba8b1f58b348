"""The bridge's HTTP side: Body Protocol v1 served by the protocol kit's body app, answered over serial."""

import logging

from aiohttp import web

from soulstack.protocol.nudge_sender import NudgeSender
from soulstack.protocol.body_app import make_body_app
from soulstack.bridge.serial_link import SerialLink
from soulstack.serving import background

log = logging.getLogger(__name__)

LINK_KEY = web.AppKey("serial_link", SerialLink)


def make_bridge_app(link: SerialLink, token: str | None = None, nudges: NudgeSender | None = None) -> web.Application:
    """Serve /status /look /speak /express for the robot behind `link`; forward its nudges via `nudges`."""

    async def status(request: dict) -> dict:
        return await link.status()

    def acting(endpoint):
        async def handler(request: dict) -> dict:
            return await link.request(endpoint, request)

        return handler

    app = make_body_app(
        {"status": status, "look": acting("look"), "speak": acting("speak"), "express": acting("express")}, token
    )
    app[LINK_KEY] = link
    if nudges is not None:
        link.on_nudge = nudges.nudge
        app.cleanup_ctx.append(background(nudges.run))
    else:
        link.on_nudge = lambda reason, **_: log.info("the robot nudged (%s); not forwarded: no --nudge-url", reason)
    app.cleanup_ctx.append(background(link.run))
    return app
