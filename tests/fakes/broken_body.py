"""A deliberately broken body: everything body-check must catch.

It answers 200 to anything (malformed JSON, GET, no token), says "online" as a
string, labels bytes that are not a JPEG as image/jpeg, and answers /speak
with plain text instead of a JSON object. Built on bare aiohttp on purpose:
`make_body_app` would refuse to be this wrong.
"""

import base64

from aiohttp import web

NOT_A_JPEG = base64.b64encode(b"GIF89a pretending to be a jpeg").decode()


def make_broken_body_app() -> web.Application:
    async def status(request):
        return web.json_response({"online": "yes"})

    async def look(request):
        return web.json_response({"image": NOT_A_JPEG, "mimeType": "image/jpeg"})

    async def speak(request):
        return web.Response(text="OK")

    async def express(request):
        return web.json_response({})

    app = web.Application()
    for path, handler in (("/status", status), ("/look", look), ("/speak", speak), ("/express", express)):
        app.router.add_route("*", path, handler)  # any method, any body, no token: all wrong
    return app
