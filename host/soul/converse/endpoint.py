"""Real-time dialog: an OpenAI-compatible chat endpoint that speaks into the
soul's own session.

A voice stack (xiaozhi-server, or anything that calls an LLM over the OpenAI
API) posts the human's words to `POST /v1/chat/completions`. We hand them to
the soul through the `Listener` seam and answer with what the soul says back:
one answer per utterance, shared by re-deliveries, a filler when it is late,
and an answer cut off never handed back (host/soul/converse/answers.py).

`add_routes(app, soul)` (called by the soul's server) mounts the endpoint in
front of the soul's `SoulListener` (host/soul/converse/listener.py): the soul's
own `deliver` and hooks, no loop of its own.

Who spoke travels with the words (`speaker_from_chat`: a voiceprint's name, or
OpenAI's `user`), and which body heard them (`heard_by_from_chat`: OpenAI's
`metadata.heard_by`; none named is the soul's own body). An utterance that is
the robot's own voice heard back (the echo guard, host/soul/converse/echo.py,
which judges only words heard by a body that hears itself) is answered with
silence and never reaches the soul; every sentence streamed is told to the
guard as played where the words were heard. A
voice stack that hangs up midway through a streamed answer cuts it there
(`Converse.heard_only`): only what was streamed is said.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from typing import TYPE_CHECKING

from aiohttp import web

from soulstack.clocks import Clock
from soulstack.serving import BadRequest, read_json
from soulstack.soul.converse.answers import FILLER_AFTER_S, Converse, Listener
from soulstack.soul.converse.reply import BadChatBody, heard_by_from_chat, speaker_from_chat, utterance_from_chat
from soulstack.soul.converse.shapes import Shape, estimate_tokens

if TYPE_CHECKING:
    from soulstack.soul.loop import Soul

log = logging.getLogger(__name__)

HANG_UP_CHECK_S = 0.1  # how often a streaming answer looks whether its voice stack is still there


CONVERSE = web.AppKey("converse", Converse)


def add_converse_route(
    app: web.Application,
    listener: Listener,
    clock: Clock | None = None,
    filler_after_s: float = FILLER_AFTER_S,
    model_name: str = "soul",
) -> Converse:
    """Serve POST /v1/chat/completions and GET /v1/models on `app` for `listener`.

    The token is the app's (soulstack.serving): build it with `error_body=openai_error_body`
    so every error (a refused token, a bad body, aiohttp's 404/405/413) comes in the shape OpenAI
    clients expect.
    """
    converse = Converse(listener, clock or Clock(), filler_after_s, model_name, getattr(listener, "echo", None))
    app[CONVERSE] = converse
    app.router.add_post("/v1/chat/completions", _chat_completions)
    app.router.add_get("/v1/models", _models)

    async def close_converse(app):
        await app[CONVERSE].close()

    app.on_cleanup.append(close_converse)
    return converse


def add_routes(app: web.Application, soul: Soul) -> Converse:
    """Mount the endpoint on the soul's server (host/soul/server.py's make_soul_app calls this), in front of
    the soul's own listener (`soul.converse`, attached by build_soul in host/soul/run.py)."""
    return add_converse_route(app, soul.converse, clock=soul.clock)


# --- HTTP --------------------------------------------------------------------


def openai_error_body(request: web.Request, status: int, message: str) -> dict:
    """An error in OpenAI's shape (the serving layer's `error_body`): what an OpenAI client reads."""
    kind = "server_error" if status >= 500 else "invalid_request_error"
    code = "invalid_api_key" if status == 401 else None
    return {"error": {"message": message, "type": kind, "param": None, "code": code}}


def _parse_request(body) -> tuple[str, str | None, str | None, bool, bool]:
    utterance = utterance_from_chat(body)
    speaker = speaker_from_chat(body)
    heard_by = heard_by_from_chat(body)
    stream = body.get("stream", False)
    if not isinstance(stream, bool):
        raise BadChatBody("'stream' must be true or false")
    options = body.get("stream_options")
    if options is not None and not isinstance(options, dict):
        raise BadChatBody("'stream_options' must be an object")
    include_usage = bool((options or {}).get("include_usage"))
    model = body.get("model")
    if model is not None and not isinstance(model, str):
        raise BadChatBody("'model' must be a string")
    return utterance, speaker, heard_by, stream, include_usage


async def _chat_completions(request: web.Request) -> web.StreamResponse:
    body = await read_json(request)  # a BadRequest is answered by the serving layer, in OpenAI's shape
    try:
        utterance, speaker, heard_by, stream, include_usage = _parse_request(body)
    except BadChatBody as error:
        raise BadRequest(str(error)) from None
    converse = request.app[CONVERSE]
    model = body.get("model") or converse.model_name
    shape = Shape(model, estimate_tokens(utterance))
    echo = converse.echo is not None and converse.echo.is_echo(utterance, "converse", heard_by)
    if echo:  # the robot heard itself: silence, and the soul is not disturbed
        log.info("converse: %r is the robot's own voice heard back (the echo guard); answered with silence", utterance)
    if not stream:
        answer = "" if echo else await converse.wait(utterance, speaker, heard_by)
        _said(converse, answer, heard_by)
        return web.json_response(shape.completion(answer))

    response = web.StreamResponse(headers={"Content-Type": "text/event-stream", "Cache-Control": "no-cache"})
    await response.prepare(request)
    said = []  # what went out: all the person may have heard
    handler = asyncio.current_task()
    assert handler is not None, "a request is handled in a task"
    watch = _on_hang_up(request, handler)
    try:
        # The role goes out at once, so the voice stack sees a live answer.
        await _send(response, shape.chunk({"role": "assistant", "content": ""}, None, include_usage))
        pieces = _nothing() if echo else converse.say(utterance, speaker, heard_by)  # each sentence when complete
        async with contextlib.aclosing(pieces):  # a hang-up closes it: no longer waiting when the cut is judged
            async for piece in pieces:
                await _send(response, shape.chunk({"content": piece}, None, include_usage))
                said.append(piece)
                _said(converse, piece, heard_by)
        answer = "".join(said)
        await _send(response, shape.chunk({}, "stop", include_usage))
        if include_usage:
            await _send(response, shape.usage_chunk(answer))
        await response.write(b"data: [DONE]\n\n")
        await response.write_eof()
    except ConnectionResetError:
        log.info("converse: the voice stack hung up before the answer to %r", utterance)
        converse.heard_only(utterance, "".join(said))
    except asyncio.CancelledError:
        # A handler whose client went away is cancelled (`_on_hang_up`). The answer
        # being made goes on regardless.
        log.info("converse: the voice stack hung up before the answer to %r", utterance)
        converse.heard_only(utterance, "".join(said))
        raise
    finally:
        watch.cancel()
    return response


def _on_hang_up(request: web.Request, handler: asyncio.Task) -> asyncio.Task:
    """Cancel `handler` once the voice stack's connection is gone. aiohttp tells a handler only when it
    next writes, and an answer may wait on the model for seconds: a re-delivery that comes meanwhile
    must find the earlier answer cut where it was, not share it."""

    async def watch():
        while request.transport is not None and not request.transport.is_closing():  # noqa: ASYNC110 - no event for it
            await asyncio.sleep(HANG_UP_CHECK_S)
        handler.cancel()

    return asyncio.ensure_future(watch())


def _said(converse: Converse, text: str, heard_by: str | None) -> None:
    # The voice stack plays the answer where the words were heard.
    if converse.echo is not None and text:
        converse.echo.said(text, heard_by)


async def _nothing():
    return
    yield


async def _send(response: web.StreamResponse, data: dict) -> None:
    await response.write(b"data: " + json.dumps(data, ensure_ascii=False).encode() + b"\n\n")


async def _models(request: web.Request) -> web.Response:
    name = request.app[CONVERSE].model_name
    return web.json_response(
        {
            "object": "list",
            "data": [{"id": name, "object": "model", "created": 0, "owned_by": "soulstack"}],
        }
    )
