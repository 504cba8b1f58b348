"""A small real body for the soul's tests, built on host/protocol/body_app.py.

It serves all four endpoints over loopback, records every request it gets,
answers /look with a real JPEG (8x8, orange; or `image=`, e.g. QVGA_JPEG, the
size the StackChan's camera sends), and can be told to fail one
endpoint with a given HTTP status, honestly, as a broken device would, or to
hold one unanswered (a device that hangs) until `release()`.
"""

import asyncio

import base64
from pathlib import Path

from aiohttp import web

from soulstack.protocol.body_app import make_body_app
from soulstack.serving import error_response
from soulstack.fakes.loopback import LoopbackServer

# An 8x8 orange baseline JPEG (made with libjpeg-turbo's cjpeg, quality 70); it decodes.
JPEG_B64 = (
    "/9j/4AAQSkZJRgABAQAAAQABAAD/2wBDAAoHBwgHBgoICAgLCgoLDhgQDg0NDh0VFhEYIx8lJCIfIiEmKzcvJik0KSEiMEExNDk7Pj4+JS5ESUM8SDc9Pjv/"
    "2wBDAQoLCw4NDhwQEBw7KCIoOzs7Ozs7Ozs7Ozs7Ozs7Ozs7Ozs7Ozs7Ozs7Ozs7Ozs7Ozs7Ozs7Ozs7Ozs7Ozs7Ozv/wAARCAAIAAgDASIAAhEBAxEB/8QAHwAA"
    "AQUBAQEBAQEAAAAAAAAAAAECAwQFBgcICQoL/8QAtRAAAgEDAwIEAwUFBAQAAAF9AQIDAAQRBRIhMUEGE1FhByJxFDKBkaEII0KxwRVS0fAkM2JyggkKFhcYGRol"
    "JicoKSo0NTY3ODk6Q0RFRkdISUpTVFVWV1hZWmNkZWZnaGlqc3R1dnd4eXqDhIWGh4iJipKTlJWWl5iZmqKjpKWmp6ipqrKztLW2t7i5usLDxMXGx8jJytLT1NXW"
    "19jZ2uHi4+Tl5ufo6erx8vP09fb3+Pn6/8QAHwEAAwEBAQEBAQEBAQAAAAAAAAECAwQFBgcICQoL/8QAtREAAgECBAQDBAcFBAQAAQJ3AAECAxEEBSExBhJBUQdh"
    "cRMiMoEIFEKRobHBCSMzUvAVYnLRChYkNOEl8RcYGRomJygpKjU2Nzg5OkNERUZHSElKU1RVVldYWVpjZGVmZ2hpanN0dXZ3eHl6goOEhYaHiImKkpOUlZaXmJma"
    "oqOkpaanqKmqsrO0tba3uLm6wsPExcbHyMnK0tPU1dbX2Nna4uPk5ebn6Onq8vP09fb3+Pn6/9oADAMBAAIRAxEAPwDpqKKK+CPrj//Z"
)
JPEG = base64.b64decode(JPEG_B64)
# What the StackChan's camera sends: a 320x240 JPEG (a wall, a window, a plant, a desk edge), made once
# from a generated picture with cjpeg -quality 70. tools/bench-life's body looks with it.
QVGA_JPEG = (Path(__file__).parent / "desk_qvga.jpg").read_bytes()


class RecordingBody(LoopbackServer):
    """`async with RecordingBody() as body:` -> body.base_url, body.received, body.spoken."""

    def __init__(
        self,
        online: bool = True,
        fail: dict | None = None,
        token: str | None = None,
        image: bytes = JPEG,
        hold: tuple = (),
    ):
        self.online = online
        self.hold = set(hold)  # endpoints that answer only after release()
        self.released = asyncio.Event()
        self.image_b64 = base64.b64encode(image).decode()  # what /look answers
        self.fail = dict(fail or {})  # endpoint -> HTTP status to answer instead of acting
        self.token = token
        self.received: list = []  # (endpoint, request dict), in order

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def spoken(self) -> list:
        return [request["text"] for endpoint, request in self.received if endpoint == "speak"]

    def endpoints(self) -> dict:
        return {name: f"{self.base_url}/{name}" for name in ("status", "look", "speak", "express")}

    def make_app(self) -> web.Application:
        async def status(request):
            self.received.append(("status", request))
            return {"online": self.online}

        async def look(request):
            self.received.append(("look", request))
            return {"image": self.image_b64, "mimeType": "image/jpeg"}

        async def speak(request):
            self.received.append(("speak", request))
            return {}

        async def express(request):
            self.received.append(("express", request))
            return {}

        @web.middleware
        async def failing(request, handler):
            endpoint = request.path.strip("/")
            if endpoint in self.fail:
                self.received.append((f"{endpoint} (failed)", await request.json()))
                return error_response(self.fail[endpoint], f"the {endpoint} device is broken")
            if endpoint in self.hold:
                self.received.append((f"{endpoint} (held)", await request.json()))
                await self.released.wait()
            return await handler(request)

        app = make_body_app({"status": status, "look": look, "speak": speak, "express": express}, token=self.token)
        app.middlewares.insert(0, failing)
        return app

    def release(self) -> None:
        """The held endpoints answer (those waiting, and from now on)."""
        self.hold.clear()
        self.released.set()
