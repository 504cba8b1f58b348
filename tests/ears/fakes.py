"""Protocol-true fakes for ears' neighbours, built on host/fakes/openai_api.py's FakeOpenAI:

- `FakeSoul`: the soul's converse (`POST /v1/chat/completions`, streamed, from a script), `/nudge`
  (the nudges kept in `nudges`) and `/health` (its `language`), as the soul's one server serves them.
- `FakeTranscriber`: OpenAI's `POST /v1/audio/transcriptions` (multipart `file` and `model`, both
  required, as OpenAI's is): answers `{"text": ...}` from `texts`, or `status` with OpenAI's error shape.
- `RecordingEars`: `soulstack ears`' `POST /utterance` as a robot streams to it, each stream kept.
"""

import json

from aiohttp import web

from soulstack.fakes.openai_api import FakeOpenAI


class FakeSoul(FakeOpenAI):
    def __init__(self, *args, language="en", **kwargs):
        super().__init__(*args, **kwargs)
        self.nudges = []
        self.language = language  # what its GET /health says the soul lives in

    def routes(self, app):
        super().routes(app)

        async def nudge(request):
            self.nudges.append(json.loads(await request.read()))
            return web.json_response({"queued": True}, status=202)

        async def health(request):
            return web.json_response({"state": "asleep", "language": self.language})

        app.router.add_post("/nudge", nudge)
        app.router.add_get("/health", health)


class FakeTranscriber(FakeOpenAI):
    def __init__(self, texts=(), status=200):
        super().__init__()
        self.texts = list(texts)
        self.status = status
        self.files = []  # (filename, content type, bytes) of each upload

    def routes(self, app):
        async def transcribe(request):
            if not request.content_type.startswith("multipart/form-data"):
                return self.error_response(400, "Content-Type must be multipart/form-data")
            fields = {}
            async for part in await request.multipart():
                fields[part.name] = (part.filename, part.headers.get("Content-Type"), await part.read())
            if "file" not in fields or "model" not in fields:
                return self.error_response(400, "you must provide a file and a model")
            self.files.append(fields["file"])
            if self.status != 200:
                return self.error_response(self.status, "the fake transcriber fails as told")
            return web.json_response({"text": self.texts.pop(0) if self.texts else ""})

        app.router.add_post("/v1/audio/transcriptions", transcribe)


class RecordingEars:
    """Stands in for `soulstack ears`: keeps each utterance stream's (headers, bytes), answers `heard` as ears does.
    Serve `app()` with serving.listening."""

    def __init__(self, heard: str = "what time is it"):
        self.heard = heard
        self.streams = []

    def app(self):
        async def utterance(request):
            body = await request.read()
            self.streams.append((dict(request.headers), body))
            return web.json_response({"heard": self.heard})

        app = web.Application()
        app.router.add_post("/utterance", utterance)
        return app
