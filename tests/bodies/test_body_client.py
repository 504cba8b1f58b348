"""BodyClient against real bodies on loopback: answers, and every way a call fails."""

import asyncio

import pytest
from aiohttp import web

from soulstack.protocol.client import BodyClient, BodyError
from soulstack.protocol.body_app import BodyUnavailable, make_body_app
from tests.helpers import free_port
from tests.fakes.broken_body import make_broken_body_app

TOKEN = "client-token"


class Body:
    def __init__(self):
        self.spoken = []
        self.never = asyncio.Event()

    async def status(self, request):
        return {"online": True}

    async def look(self, request):
        return {"text": f"looking for {request['question']}"}

    async def speak(self, request):
        self.spoken.append(request["text"])
        return {}

    async def express(self, request):
        raise BodyUnavailable("the face panel is off")

    async def hang(self, request):
        await self.never.wait()


async def base_url(aiohttp_server, app):
    server = await aiohttp_server(app)
    return str(server.make_url("")).rstrip("/")


async def test_calls_return_the_validated_answer(aiohttp_server):
    body = Body()
    handlers = {"status": body.status, "look": body.look, "speak": body.speak}
    url = await base_url(aiohttp_server, make_body_app(handlers, token=TOKEN))
    async with BodyClient.at(url, token=TOKEN, endpoints=("status", "look", "speak")) as client:
        assert await client.status() == {"online": True}
        assert await client.look("a cat") == {"text": "looking for a cat"}
        assert await client.speak("hello") == {}
    assert body.spoken == ["hello"]


async def test_a_non_2xx_answer_raises_with_status_and_message(aiohttp_server):
    body = Body()
    url = await base_url(aiohttp_server, make_body_app({"express": body.express}))
    async with BodyClient.at(url) as client:
        with pytest.raises(BodyError) as caught:
            await client.express("happy")
    assert caught.value.status == 503
    assert caught.value.message == "the face panel is off"


async def test_a_wrong_token_raises_401(aiohttp_server):
    url = await base_url(aiohttp_server, make_body_app({"status": Body().status}, token=TOKEN))
    async with BodyClient.at(url, token="not-it") as client:
        with pytest.raises(BodyError) as caught:
            await client.status()
    assert caught.value.status == 401


async def test_a_body_that_never_answers_times_out(aiohttp_server):
    body = Body()
    url = await base_url(aiohttp_server, make_body_app({"status": body.hang}))
    async with BodyClient.at(url, timeout_s=0.2) as client:
        with pytest.raises(BodyError) as caught:
            await client.status()
    assert caught.value.status == 0
    assert "did not answer within 0.2 s" in caught.value.message
    body.never.set()


async def test_a_refused_connection_raises():
    url = f"http://127.0.0.1:{free_port()}"
    async with BodyClient.at(url) as client:
        with pytest.raises(BodyError) as caught:
            await client.speak("anyone there?")
    assert caught.value.status == 0
    # In a few plain words, not aiohttp's "Cannot connect to host ... ssl:default [Connect call failed ...]".
    assert caught.value.message == f"/speak at {url}/speak could not be reached (Connection refused)"


@pytest.mark.parametrize(
    "call, expected",
    [
        (lambda c: c.status(), "wrong shape"),
        (lambda c: c.look("x"), "JPEG SOI"),
        (lambda c: c.speak("hi"), "without a JSON body"),
    ],
)
async def test_a_2xx_of_the_wrong_shape_still_raises(aiohttp_server, call, expected):
    url = await base_url(aiohttp_server, make_broken_body_app())
    async with BodyClient.at(url) as client:
        with pytest.raises(BodyError) as caught:
            await call(client)
    assert caught.value.status == 200
    assert expected in caught.value.message


async def test_a_non_json_error_page_still_raises(aiohttp_server):
    async def crash(request):
        return web.Response(status=500, text="<html>Internal Server Error</html>")

    app = web.Application()
    app.router.add_post("/status", crash)
    url = await base_url(aiohttp_server, app)
    async with BodyClient.at(url) as client:
        with pytest.raises(BodyError) as caught:
            await client.status()
    assert caught.value.status == 500


async def test_a_request_the_protocol_forbids_is_refused_before_it_is_sent_and_the_soul_is_told(aiohttp_server):
    from types import SimpleNamespace

    from soulstack.protocol.shapes import MAX_SPEAK_CHARS, ProtocolError
    from soulstack.soul.prompts import texts
    from soulstack.soul.tools.body import speak

    asked = []

    async def record(request):
        asked.append(await request.json())
        return web.json_response({})

    app = web.Application()
    app.router.add_post("/speak", record)
    async with BodyClient.at(await base_url(aiohttp_server, app), endpoints=("speak",)) as client:
        for text in ("", "x" * (MAX_SPEAK_CHARS + 1)):
            with pytest.raises(ProtocolError):
                await client.speak(text)
        said = await speak(SimpleNamespace(lang=texts("en"), body=client), "   ")
        assert not said.ok and said.content[0].text.startswith("That call was not understood: ")
        assert asked == []  # checked once, on this side, before anything went out
        assert (await speak(SimpleNamespace(lang=texts("en"), body=client), "hello")).ok
    assert asked == [{"text": "hello"}]
