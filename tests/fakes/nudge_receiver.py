"""A soul's /nudge endpoint, as a fake: records every reason it accepts.

`NudgeReceiver(token=..., fail_first=N)` answers 401 without the right bearer
token and 503 to its first N nudges (a soul still starting), then 200.
"""

import asyncio

from aiohttp import web


class NudgeReceiver:
    def __init__(self, token: str | None = None, fail_first: int = 0):
        self.token = token
        self.fail_first = fail_first
        self.attempts = 0
        self.reasons: list[str] = []
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
        payload = await request.json()
        async with self._arrived:
            self.reasons.append(payload["reason"])
            self._arrived.notify_all()
        return web.json_response({})

    async def wait_for(self, count: int, timeout_s: float = 10.0) -> list[str]:
        """The reasons, once at least `count` have arrived."""
        async with self._arrived:
            await asyncio.wait_for(self._arrived.wait_for(lambda: len(self.reasons) >= count), timeout_s)
        return list(self.reasons)
