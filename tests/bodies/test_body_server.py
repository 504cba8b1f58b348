"""host/protocol/body_app.py over real HTTP on loopback: every bad-input path and honest failure."""

import aiohttp
import pytest
from aiohttp import web

from soulstack.protocol.body_app import BodyUnavailable, make_body_app
from soulstack.serving import listening
from soulstack.errors import UsageError

TOKEN = "s3cret-token"


class Recorder:
    """A body whose handlers remember what reached them; some fail on purpose."""

    def __init__(self):
        self.seen = []

    async def status(self, request):
        self.seen.append(("status", request))
        return {"online": True}

    async def look(self, request):
        self.seen.append(("look", request))
        return {"text": "a desk"}

    async def speak(self, request):
        self.seen.append(("speak", request))
        return {}

    async def unplugged(self, request):
        raise BodyUnavailable("the speaker is unplugged")

    async def jammed(self, request):
        raise RuntimeError("servo jammed")

    async def wrong_shape(self, request):
        return {"online": "yes"}


@pytest.fixture
async def body(aiohttp_client):
    recorder = Recorder()
    app = make_body_app({"status": recorder.status, "look": recorder.look, "speak": recorder.speak})
    client = await aiohttp_client(app)
    client.recorder = recorder
    return client


async def message_of(response, status):
    assert response.status == status, await response.text()
    payload = await response.json()
    assert isinstance(payload["message"], str) and payload["message"]
    return payload["message"]


async def test_valid_requests_reach_the_handler_clean(body):
    response = await body.post("/speak", json={"text": "hello", "voice": "ignored extra field"})
    assert response.status == 200
    assert await response.json() == {}
    assert body.recorder.seen == [("speak", {"text": "hello"})]
    response = await body.post("/look", json={"question": "a face?"})
    assert await response.json() == {"text": "a desk"}


@pytest.mark.parametrize("method", ["GET", "PUT", "DELETE"])
async def test_only_post_is_allowed(body, method):
    response = await body.request(method, "/status")
    message = await message_of(response, 405)
    assert "POST" in message and method in message
    assert "POST" in response.headers["Allow"]


@pytest.mark.parametrize(
    "raw, expected",
    [
        (b'{"text": "unfinished', "not valid JSON"),
        (b"", "no body"),
        (b"\xff\xfe not utf-8", "not UTF-8 text"),
        (b'"just a string"', "JSON object"),
        (b'{"text": 5}', '"text" must be a string'),
        (b'{"words": "hi"}', '"text"'),
        (b'{"text": "   "}', "must not be empty"),
        (('{"text": "' + "a" * 2001 + '"}').encode(), "at most 2000"),
    ],
)
async def test_bad_requests_get_400_naming_the_problem(body, raw, expected):
    response = await body.post("/speak", data=raw, headers={"Content-Type": "application/json"})
    assert expected in await message_of(response, 400)
    assert body.recorder.seen == []


async def test_an_endpoint_the_body_lacks_is_404_with_a_message(body):
    response = await body.post("/express", json={"emotion": "happy"})
    assert "/express" in await message_of(response, 404)


@pytest.fixture
async def guarded(aiohttp_client):
    recorder = Recorder()
    return await aiohttp_client(make_body_app({"status": recorder.status}, token=TOKEN))


@pytest.mark.parametrize(
    "headers, expected",
    [
        ({}, "missing bearer token"),
        ({"Authorization": "Bearer nope"}, "wrong bearer token"),
        ({"Authorization": f"Basic {TOKEN}"}, "wrong bearer token"),
        ({"Authorization": f"Bearer {TOKEN}x"}, "wrong bearer token"),
    ],
)
async def test_a_missing_or_wrong_token_is_401(guarded, headers, expected):
    response = await guarded.post("/status", json={}, headers=headers)
    assert expected in await message_of(response, 401)


async def test_the_right_token_is_accepted(guarded):
    response = await guarded.post("/status", json={}, headers={"Authorization": f"Bearer {TOKEN}"})
    assert response.status == 200
    assert await response.json() == {"online": True}


async def test_auth_is_checked_before_the_body_is_read(guarded):
    response = await guarded.post("/status", data=b"{broken")
    assert response.status == 401


@pytest.mark.parametrize(
    "handler, status, expected",
    [
        ("unplugged", 503, "the speaker is unplugged"),
        ("jammed", 502, "servo jammed"),
        ("wrong_shape", 502, "wrong shape"),
    ],
)
async def test_handler_failures_are_honest_never_2xx(aiohttp_client, handler, status, expected):
    client = await aiohttp_client(make_body_app({"status": getattr(Recorder(), handler)}))
    response = await client.post("/status", json={})
    assert expected in await message_of(response, status)


def test_unknown_endpoints_are_a_programming_error():
    with pytest.raises(ValueError, match="smell"):
        make_body_app({"smell": Recorder().status})


async def test_listening_yields_the_bound_port_and_serves():
    app = make_body_app({"status": Recorder().status})
    async with listening(app, "127.0.0.1", 0) as port:
        assert port > 0
        async with aiohttp.ClientSession() as session:
            async with session.post(f"http://127.0.0.1:{port}/status", json={}) as response:
                assert await response.json() == {"online": True}


async def test_a_taken_port_is_a_one_line_usage_error():
    async with listening(web.Application(), "127.0.0.1", 0) as port:
        with pytest.raises(UsageError, match=f"cannot listen on 127.0.0.1:{port}"):
            async with listening(web.Application(), "127.0.0.1", port):
                pass
