"""The soul's one HTTP server (default 127.0.0.1:9202): POST /nudge, and the routes features add.

`make_soul_app(soul, routes)` builds the aiohttp app on the shared serving layer
(soulstack.serving: one bearer check, JSON errors, safe JSON bodies). `routes`
are `add_routes(app, soul)` functions passed in by whoever builds the soul
(soulstack.soul.run: GET /health from the metabolism, POST /v1/chat/completions
from converse). Every route is served on every port the soul listens on
(nudge.port, and converse.port / health.port when they differ).

Tokens: /v1/... needs converse.token (default: nudge.token); every other route needs nudge.token.
/v1/... answers every error in OpenAI's shape (`error_body`), the others as {"message"}.

POST /nudge {"reason": "<what happened>"}, {"words": "<a person's exact words>"} or both
  (and our `speaker` beside `words`, `heard`: host/protocol/nudges.py)
  -> 202 {"queued": true, "state": ...} once the nudge is on disk (host/soul/nudges/inbox.py)
  -> 202 {"queued": false, "echo": true} when its words are the robot's own voice heard back (the echo
     guard, host/soul/converse/echo.py) and it tells nothing else: not kept, not shown
  -> the first answer again, keeping nothing, for a nudge whose `nudge_id` was answered within the window
     (a body sending again a nudge whose answer it lost: host/soul/nudges/ids.py)
  400 {"message"} for a body that is not a nudge (host/protocol/nudges.py's parse_nudge)
  401 {"message"} when nudge.token is set and the bearer token is missing or wrong
  503 {"message"} when the soul could not write it down (the sender tries again)
Refusals of /nudge are logged at most once a minute per kind, with a count, so
a body sending without the token (or a broken body) is visible in the soul's log.
"""

import logging
from dataclasses import replace

from aiohttp import web

from soulstack.exposure import Exposure
from soulstack.protocol.nudge_sender import RateLimitedLog
from soulstack.protocol.nudges import BadNudge, Nudge, parse_nudge
from soulstack.serving import BadRequest, error_response, make_server_app, message_body, read_json, refuse_json
from soulstack.soul.loop import Soul
from soulstack.soul.nudges.ids import fingerprint

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from soulstack.soul.config import SoulConfig

log = logging.getLogger(__name__)

SOUL = web.AppKey("soul", Soul)
REFUSALS = web.AppKey("nudge refusals", RateLimitedLog)


async def nudge(request: web.Request) -> web.Response:
    soul = request.app[SOUL]
    try:
        given = parse_nudge(await read_json(request))
    except (BadRequest, BadNudge) as error:
        request.app[REFUSALS].log(logging.WARNING, "400", "refused a nudge from %s: %s", request.remote, error)
        raise error if isinstance(error, BadRequest) else BadRequest(str(error)) from None
    if given.nudge_id is None:
        return (await _keep(soul, given))[0]
    ids, said = soul.inbox.ids, fingerprint(given)
    if ids.reused(given.nudge_id, said, soul.clock.time()):
        # A sender's bug, not a resend: the words are a person's, so they are kept, under no id.
        log.warning(
            "nudge %s came again saying something else: kept as a new nudge (a sender must give each nudge its own id)",
            given.nudge_id,
        )
        return (await _keep(soul, replace(given, nudge_id=None)))[0]
    earlier = await ids.earlier_answer(given.nudge_id, soul.clock.time())
    if earlier is not None:
        log.info("nudge %s again (its answer was lost on the way): answered as before, not kept twice", given.nudge_id)
        return web.json_response(earlier, status=202)
    ids.answering(given.nudge_id, said)
    answer = None
    try:
        response, answer = await _keep(soul, given)
    finally:
        ids.answered_with(given.nudge_id, answer, soul.clock.time(), said)
    if answer is not None and answer.get("echo"):
        try:
            await ids.save()  # nothing kept in NUDGES.jsonl carries this id: on disk now
        except OSError as error:  # kept nothing either way; only a repeat after a restart would be judged anew
            log.warning("could not write down the id of an echoed nudge: %s", error)
    return response


async def _keep(soul: Soul, given: Nudge) -> tuple:
    """Keep a nudge: (the response, and the answer a 202 carries: None for any other)."""
    kept = _without_echo(soul, given)
    if kept is None:
        return _accepted({"queued": False, "echo": True})
    state = soul.state
    try:
        await soul.nudge(kept)
    except OSError as error:  # not on disk, so not promised: the sender keeps it and tries again
        log.error("could not keep a nudge (%s): %s", error, kept.reason)
        message = f"the soul could not keep the nudge ({error.strerror or error}); try again"
        return error_response(503, message), None
    log.info("nudge (%s): %s%s", state, kept.told, " [a person's words]" if kept.words else "")
    return _accepted({"queued": True, "state": state})


def _accepted(answer: dict) -> tuple:
    return web.json_response(answer, status=202), answer


def _without_echo(soul: Soul, given: Nudge) -> Nudge | None:
    """The nudge without words that are the robot hearing itself; None when nothing else is left."""
    echo = getattr(soul, "converse", None) and soul.converse.echo
    if not given.words or not echo or not echo.is_echo(given.words, "nudge"):
        return given
    log.info("nudge: %r is the robot's own voice heard back (the echo guard); not a person's words", given.words)
    # The body's own reason (a touch, a sound) still stands, unless it quotes the echoed words.
    reason = given.reason if given.reason and given.words not in given.reason else None
    return Nudge(reason, heard=given.heard, nudge_id=given.nudge_id) if reason or given.heard else None


def error_body(request: web.Request, status: int, message: str) -> dict:
    """/v1/... answers errors as OpenAI does (its clients read that shape); every other route {"message"}."""
    from soulstack.soul.converse.endpoint import openai_error_body

    shape = openai_error_body if request.path.startswith("/v1/") else message_body
    return shape(request, status, message)


def make_soul_app(soul: Soul, routes=()) -> web.Application:
    cfg = soul.cfg
    nudge_token = cfg.nudge.token
    converse_token = cfg.converse.token or nudge_token

    def token_for(request: web.Request):
        return converse_token if request.path.startswith("/v1/") else nudge_token

    def refuse(request: web.Request, message: str) -> web.Response:
        if request.path == "/nudge":  # a body without the token: say so in the soul's log too
            refusals.log(logging.WARNING, "401", "refused a nudge from %s: %s", request.remote, message)
        return refuse_json(request, message)

    refusals = RateLimitedLog(log, clock=soul.clock.monotonic)
    exposure = soul_exposure(cfg)
    app = make_server_app(
        token_for=token_for,
        refuse=refuse,
        error_body=error_body,
        locked=exposure.locked,
        how_to_lock=exposure.how_to_lock,
    )
    app[SOUL] = soul
    app[REFUSALS] = refusals
    app.router.add_post("/nudge", nudge)
    for add_routes in routes:
        add_routes(app, soul)
    return app


def soul_exposure(cfg: "SoulConfig") -> Exposure:
    """Locked only when both doors are: an open /v1 lets anyone talk to the soul as its person."""
    nudge_token = cfg.nudge.token
    return Exposure(
        locked=bool(nudge_token and (cfg.converse.token or nudge_token)),
        how_to_lock="nudge.token in the soul's config (or $NUDGE_TOKEN)",
    )


def ports(cfg: "SoulConfig") -> list:
    """Every port the soul serves on: nudge.port first, then converse/health ports that differ."""
    out = [cfg.nudge.port]
    for extra in (cfg.converse.port, cfg.health.port):
        if extra is not None and extra not in out:
            out.append(extra)
    return out
