"""A body that behaves like stackchan-soul's reference terminal body (adapters/terminal/body.mjs).

That body is the protocol's own reference, so it keeps every v1 rule, and it
breaks only our stricter ones: it answers any method, reads malformed JSON as
`{}`, takes any shape, never asks for a token, and shows an unknown emotion as
neutral. Paths other than the four endpoints get a bare 404. Written on bare
aiohttp, in our words, to behave the same way on the wire.
"""

import json

from aiohttp import web

FACES = ("happy", "sad", "angry", "sleepy", "neutral")


def make_reference_terminal_body_app() -> web.Application:
    state = {"face": "neutral", "said": ""}

    async def read(request) -> dict:
        raw = await request.text()
        try:
            body = json.loads(raw or "{}")
        except ValueError:
            body = {}  # the reference swallows a parse error and carries on with {}
        return body if isinstance(body, dict) else {}

    async def status(request):
        await read(request)
        return web.json_response({"online": True})

    async def look(request):
        body = await read(request)
        seen = f"A character screen. Your face is {state['face']}."
        if state["said"]:
            seen += f' Your last words are still on it: "{state["said"]}".'
        seen += f' You looked for: "{body.get("question", "")}" - this body only sees its terminal.'
        return web.json_response({"text": seen})

    async def speak(request):
        state["said"] = str((await read(request)).get("text", ""))
        return web.json_response({})

    async def express(request):
        emotion = (await read(request)).get("emotion")
        state["face"] = emotion if emotion in FACES else "neutral"
        return web.json_response({})

    app = web.Application()
    for path, handler in (("/status", status), ("/look", look), ("/speak", speak), ("/express", express)):
        app.router.add_route("*", path, handler)
    return app
