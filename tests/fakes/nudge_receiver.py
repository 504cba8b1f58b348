"""A soul's /nudge endpoint, as a fake: records every nudge it accepts.

`NudgeReceiver(token=..., fail_first=N, refuse=(...))` answers 401 without the
right bearer token, 503 to its first N nudges (a soul still starting), and
400 to a nudge the contract refuses (host/protocol/nudges.py's parse_nudge,
the soul's own check) or whose reason contains one of `refuse`; else 200.
"""

import asyncio
import json

from aiohttp import web

from soulstack.protocol.nudges import BadNudge, parse_nudge


class NudgeReceiver:
    def __init__(self, token: str | None = None, fail_first: int = 0, refuse=()):
        self.token = token
        self.fail_first = fail_first
        self.refuse = tuple(refuse)
        self.attempts = 0
        self.reasons: list[str] = []
        self.nudges: list = []  # the accepted Nudges (reason and words), as the soul keeps them
        self.sent: list = []  # the accepted nudges' JSON bodies, as the body sent them
        self.refused: list[str] = []  # reasons answered 400
        self._arrived = asyncio.Condition()

    def app(self) -> web.Application:
        app = web.Application()
        app.router.add_post("/nudge", self._nudge)
        return app

    async def _nudge(self, request: web.Request) -> web.Response:
        self.attempts += 1
        if self.token and request.headers.get("Authorization") != f"Bearer {self.token}":
            return web.json_response({"message": "wrong or missing bearer token"}, status=401)
        if self.attempts <= self.fail_first:
            return web.json_response({"message": "the soul is still waking up"}, status=503)
        try:
            body = json.loads(await request.read())
            nudge = parse_nudge(body)
        except (BadNudge, ValueError) as error:
            return web.json_response({"message": str(error)}, status=400)
        if any(part in nudge.reason for part in self.refuse):
            self.refused.append(nudge.reason)
            return web.json_response({"message": "this fake refuses that reason"}, status=400)
        async with self._arrived:
            self.reasons.append(nudge.reason)
            self.nudges.append(nudge)
            self.sent.append(body)
            self._arrived.notify_all()
        return web.json_response({})

    async def wait_for(self, count: int, timeout_s: float = 10.0) -> list[str]:
        """The reasons, once at least `count` have arrived."""
        async with self._arrived:
            await asyncio.wait_for(self._arrived.wait_for(lambda: len(self.reasons) >= count), timeout_s)
        return list(self.reasons)
