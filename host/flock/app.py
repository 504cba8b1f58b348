"""The flock's HTTP server: routes over the store, the flow and the event log.

`make_flock_app(data_dir, model, clock, config)` builds it; `soulstack flock` runs it.
Its lifecycle is the one place the rooms meet: it builds the store and the event log, the
Flock (lists/), the nests' harness (nests/) with Jev (jev/) and hands the harness the Flock,
and lets the robot's voice (voice/) hear every event.
Every mistake in a request is a 4xx with {"message": "..."}; see docs/events.md.
"""

import asyncio
import logging
import sqlite3
from pathlib import Path

from aiohttp import web

from soulstack.clocks import Clock, rfc3339
from soulstack.errors import UsageError
from soulstack.disk.storage import storage_problem
from soulstack.serving import BadRequest, background, error_response, make_server_app, read_json
from soulstack.flock import events as sse
from soulstack.flock.web import routes as page
from soulstack.flock.web.routes import TOKEN_COOKIE  # the page keeps the token here, so its EventSource carries it
from soulstack.flock.events import EventLog
from soulstack.flock.personas import all_crows
from soulstack.flock.pranks import Pranks
from soulstack.flock.request_bodies import kind_body, list_body, verdict_body
from soulstack.flock.store import Store
from soulstack.flock.trust import LEVELS, PROMOTE_AFTER, TrustLedger
from soulstack.flock.lists.flow import Flock, FlockConfig
from soulstack.flock.lists import read_api
from soulstack.flock.nests.harness import Harness, NestConfig
from soulstack.flock.nests.messages import NestLog, message_body
from soulstack.flock.nests.registry import Nests
from soulstack.flock.nests.store import NestStore
from soulstack.flock.jev.local import StartingJev
from soulstack.flock.jev.tagging import JevLog, Tagger

log = logging.getLogger(__name__)

FLOCK = web.AppKey("flock", Flock)
HARNESS = web.AppKey("harness", Harness)
WARM_UP_AFTER_S = 2.0  # when Jev starts training after start-up


# --- routes ---------------------------------------------------------------
async def post_list(request: web.Request) -> web.Response:
    flock = request.app[FLOCK]
    texts, requester, nest_id = list_body(await read_json(request))
    if flock.nests.get(nest_id) is None:
        return error_response(404, f"no nest {nest_id[:60]!r}; GET /api/nests lists them")
    refused = flock.pranks.check(requester)
    if refused:
        message, cooldown_s = refused
        flock.prank(requester, message, cooldown_s)
        return web.json_response({"message": message, "cooldown_s": cooldown_s}, status=429)
    list_id = flock.submit(requester, nest_id, texts)
    return web.json_response({"list_id": list_id}, status=202)


async def get_events(request: web.Request) -> web.StreamResponse:
    flock = request.app[FLOCK]
    if "nest_id" in request.query:
        nest_id = request.query["nest_id"]
        if "list_id" in request.query:
            raise BadRequest("give ?nest_id= or ?list_id=, not both: each is a stream of its own")
        if "recent" in request.query:
            raise BadRequest("recent is for the all-lists stream; a nest's stream replays from ?after=n")
        if flock.nests.get(nest_id) is None:
            return error_response(404, f"no nest {nest_id[:60]!r}; GET /api/nests lists them")
        return await request.app[HARNESS].messages.stream(request, nest_id, flock.config.heartbeat_s)
    if request.query.get("list_id", None) == "":
        raise BadRequest("list_id is empty: name a list, or leave it out for the all-lists stream")
    list_id = request.query.get("list_id") or None
    if list_id is not None and not flock.store.list_exists(list_id):
        return error_response(404, f"no list {list_id[:60]!r}")
    return await sse.stream(request, flock.events, list_id, flock.config.heartbeat_s)


async def post_verdict(request: web.Request) -> web.Response:
    flock = request.app[FLOCK]
    item_id, target, approve = verdict_body(await read_json(request))
    if target == "flag":
        answered = request.app[HARNESS].verdict(item_id, approve)
    else:
        answered = flock.approvals.answer(item_id, target, approve)
    if not answered:
        article = "an" if target[0] in "aeiou" else "a"  # an output verdict, a triage verdict
        return error_response(404, f"nothing is waiting for {article} {target} verdict on {item_id[:80]!r}")
    return web.Response(status=204)


async def get_waiting(request: web.Request) -> web.Response:
    """What waits for a person's verdict: items, with their words and, for an answer, the answer;
    then the Sentry's open flags, with the crow they quarantine and why."""
    flock = request.app[FLOCK]
    waiting = []
    for item_id, target, deadline in flock.store.all_pending():
        item = flock.store.item(item_id)  # None: a pending row whose item is gone (nothing to show but its id)
        triage = item and item.triage
        waiting.append(
            {
                "item_id": item_id,
                "list_id": item and item.list_id,
                "target": target,
                "text": item and item.text,
                "task_type": triage.task_type if triage else None,
                "crows": item.crows if item else [],
                "answer": item.answer if item and target == "output" else None,
                "deadline": rfc3339(deadline),
            }
        )
    for flag in request.app[HARNESS].open_flags():
        # A Sentry flag: the verdict names the flag's message (approve upholds the quarantine).
        waiting.append(
            {
                "item_id": flag.flag_msg_id,
                "list_id": None,
                "nest_id": flag.nest_id,
                "target": "flag",
                "text": flag.why,
                "task_type": None,
                "crows": [flag.crow],
                "answer": None,
                "deadline": rfc3339(flag.deadline),
            }
        )
    return web.json_response({"waiting": waiting})


async def get_trust(request: web.Request) -> web.Response:
    flock = request.app[FLOCK]
    return web.json_response(
        {
            "levels": {str(level): name for level, name in LEVELS.items()},
            "promote_after": PROMOTE_AFTER,
            "trust": flock.trust.to_json(),
            "strikes": flock.pranks.to_json(),
        }
    )


async def get_nests(request: web.Request) -> web.Response:
    return web.json_response(request.app[FLOCK].nests.to_json())


async def post_nest(request: web.Request) -> web.Response:
    nest = request.app[FLOCK].nests.create(await read_json(request))
    return web.json_response(nest.wire(), status=201)


def nest_of(request: web.Request) -> str:
    nest_id = request.match_info["nest_id"]
    if request.app[FLOCK].nests.get(nest_id) is None:
        raise BadRequest(f"no nest {nest_id[:60]!r}; GET /api/nests lists them", status=404)
    return nest_id


async def post_message(request: web.Request) -> web.Response:
    flock, harness = request.app[FLOCK], request.app[HARNESS]
    nest_id = nest_of(request)
    fields = message_body(await read_json(request))
    refused = harness.pranks.check(fields["author"])
    if refused:
        message, cooldown_s = refused
        flock.prank(fields["author"], message, cooldown_s)
        return web.json_response({"message": message, "cooldown_s": cooldown_s}, status=429)
    return web.json_response((await harness.post(nest_id, fields)).wire(), status=201)


async def get_messages(request: web.Request) -> web.Response:
    nest_id = nest_of(request)
    return web.json_response(request.app[HARNESS].messages.history(nest_id, request.query.get("after")))


async def post_kind(request: web.Request) -> web.Response:
    nest_id = nest_of(request)
    record = request.app[HARNESS].correct(nest_id, request.match_info["msg_id"], kind_body(await read_json(request)))
    return web.json_response(record.wire())


async def get_crows(request: web.Request) -> web.Response:
    return web.json_response(all_crows())


# --- the app --------------------------------------------------------------
def make_flock_app(
    data_dir,
    model=None,
    clock=None,
    config: FlockConfig | None = None,
    token: str | None = None,
    robot=None,
    rive=None,
    nest_config: NestConfig | None = None,
    jev=None,
) -> web.Application:
    """The flock server. `model` None is the brainstem: lists are accepted and every item is
    skipped as "no model configured". `clock` is the time seam (soulstack.clocks.Clock by default).

    With `token`, every /api/ route and the event stream need it (a bearer header, or
    the page's cookie); the page itself loads without it and asks for it once.
    `robot` (soulstack.flock.voice.robot's BodyVoice or SoulVoice) hears every event and
    tells a person on the robot, in its own background task.
    `rive` is the path of a .riv file the page draws the crows with (else SVG).
    `nest_config` holds the nests' numbers; `jev` is Jev's backend (the local classifier by default).
    """
    config = config or FlockConfig()
    nest_config = nest_config or NestConfig()
    clock = clock or Clock()

    def token_for(request: web.Request):
        # The page is open (it asks for the token itself); the API and /health are not.
        return token if request.path.startswith("/api/") or request.path == "/health" else None

    app = make_server_app(
        token_for=token_for, cookie=TOKEN_COOKIE, locked=bool(token), how_to_lock="--token-file FILE (or $FLOCK_TOKEN)"
    )

    async def lifecycle(app):
        store = open_store(data_dir)
        events = EventLog(store, clock)
        flock = Flock(
            store,
            events,
            starting(store, data_dir, Nests),
            TrustLedger(store),
            Pranks(store, clock, config.lists_per_minute),
            model,
            clock,
            config,
        )
        app[FLOCK] = flock
        if robot is not None:
            robot.attach(store)  # before resume: what it had not told comes first, then what resumes
            events.listeners.append(robot.on_event)
        backend = jev or StartingJev()
        warming = None
        if isinstance(backend, StartingJev):
            # Train in a thread once the server is listening (importing scikit-learn competes with
            # start-up for the interpreter); a message posted sooner starts it and waits.
            warming = asyncio.get_running_loop().call_later(WARM_UP_AFTER_S, backend.warm_up)
        tagger = Tagger(backend, nest_config.band, JevLog(Path(data_dir) / "jev.jsonl"))
        nest_store = NestStore(store)
        # Messages per minute and cooldowns reuse the requester strikes of the ledger, keyed by author.
        nest_pranks = Pranks(store, clock, nest_config.messages_per_minute)
        harness = Harness(flock, nest_store, NestLog(nest_store, clock), tagger, nest_config, nest_pranks)
        app[HARNESS] = harness
        if robot is not None:
            robot.hear_flags(harness)
        flock.resume()
        harness.start()
        yield
        if warming is not None:
            warming.cancel()
        events.close_all()
        harness.messages.close_all()
        await flock.stop()
        store.close()

    app.cleanup_ctx.append(lifecycle)
    if robot is not None:
        app.cleanup_ctx.append(background(robot.run))
    app.on_shutdown.append(lambda app: _close_streams(app))
    app.router.add_post("/api/lists", post_list)
    get_lists, get_list = read_api.make_routes(lambda request: request.app[FLOCK].store)
    app.router.add_get("/api/lists", get_lists)
    app.router.add_get("/api/lists/{list_id}", get_list)
    app.router.add_get("/api/events", get_events)
    app.router.add_post("/api/verdicts", post_verdict)
    app.router.add_get("/api/trust", get_trust)
    app.router.add_get("/api/waiting", get_waiting)
    app.router.add_get("/api/nests", get_nests)
    app.router.add_post("/api/nests", post_nest)
    app.router.add_post("/api/nests/{nest_id}/messages", post_message)
    app.router.add_get("/api/nests/{nest_id}/messages", get_messages)
    app.router.add_post("/api/nests/{nest_id}/messages/{msg_id}/kind", post_kind)
    app.router.add_get("/api/crows", get_crows)
    page.add_routes(app, rive, mind_of(model))
    return app


def mind_of(model) -> dict:
    """What thinks in this flock, for the page to say at open (before anything is posted): no model
    (every item is skipped), the demo's scripted brain (soulstack.flock.demo), or a model."""
    if model is None:
        return {"kind": "none"}
    if model.provider == "demo":
        return {"kind": "demo", "pace_s": model.pace_s}
    return {"kind": "model", "provider": model.provider, "model": model.model_id}


def open_store(data_dir) -> Store:
    """The flock's store, or one line saying why it cannot open (a full disk at start: exit 2)."""
    try:
        return Store(Path(data_dir))
    except (OSError, sqlite3.Error) as error:
        raise UsageError(
            f"--data {data_dir}: cannot open the flock's store: {storage_problem(error, data_dir) or error}"
        ) from None


def starting(store: Store, data_dir, make, *args):
    """`make(store, *args)` at start-up; a storage fault is one line (UsageError), the store closed."""
    try:
        return make(store, *args)
    except (OSError, sqlite3.Error) as error:
        problem = storage_problem(error, data_dir)
        if problem is None:
            raise
        store.close()
        raise UsageError(f"--data {data_dir}: cannot start the flock: {problem}") from None


async def _close_streams(app) -> None:
    # SSE handlers wait forever; end them so shutdown does not hang on open browsers.
    if FLOCK in app:
        app[FLOCK].events.close_all()
    if HARNESS in app:
        app[HARNESS].messages.close_all()
