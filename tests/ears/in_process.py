"""`soulstack ears`' server in this process, between a fake soul (tests/ears/fakes.py) and a recording body:
what the server tests, the recogniser tests and tools/bench-hearing drive. `send` streams an utterance."""

import aiohttp

from soulstack.ears.server import Ears, make_ears_app
from soulstack.ears.soul import Body, Soul
from soulstack.fakes.soul_body import RecordingBody
from soulstack.serving import listening
from tests.ears.fakes import FakeSoul

PCM = "audio/L16; rate=16000; channels=1"


class EarsInProcess:
    def __init__(self, recogniser, token=None, max_seconds=30, reply=None, language="en"):
        self.recogniser, self.token, self.max_seconds, self.reply = recogniser, token, max_seconds, reply
        self.language = language

    async def __aenter__(self):
        self.soul = await FakeSoul(default=self.reply or "Hello.").__aenter__()
        self.body = await RecordingBody().__aenter__()
        bodies = {"stackchan": Body("stackchan", self.body.base_url, None)}
        self.ears = Ears(self.recogniser, Soul(self.soul.base_url, None), bodies, self.max_seconds, self.language)
        self.serving = listening(make_ears_app(self.ears, self.token), "127.0.0.1", 0)
        self.url = f"http://127.0.0.1:{await self.serving.__aenter__()}"
        self.http = aiohttp.ClientSession()
        return self

    async def __aexit__(self, *exc):
        await self.http.close()
        await self.serving.__aexit__(None, None, None)
        await self.body.__aexit__(None, None, None)
        await self.soul.__aexit__(None, None, None)

    async def send(self, audio, body="stackchan", utterance_id=None, content_type=PCM, token=None, chunks=3200):
        headers = {"Content-Type": content_type, "X-Soulstack-Body": body}
        if utterance_id:
            headers["X-Utterance-Id"] = utterance_id
        if token or self.token:
            headers["Authorization"] = f"Bearer {token or self.token}"

        async def stream():
            for at in range(0, len(audio), chunks):
                yield audio[at : at + chunks]

        async with self.http.post(self.url + "/utterance", data=stream(), headers=headers) as response:
            return response.status, await response.json()
