"""Hypothesis throws arbitrary bodies at every POST route: the flock answers 2xx or 4xx, never 5xx.

The flock runs on its own event loop in a thread, so hypothesis drives it with
plain blocking HTTP (urllib) over loopback.
"""

import asyncio
import json
import threading
import urllib.error
import urllib.request

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from soulstack.flock.lists.flow import FlockConfig
from soulstack.flock.nests.harness import NestConfig
from tests.flock.helpers import Flock


def json_containers(inner):
    # A named function, not a lambda: to describe a lambda, hypothesis walks sys.modules, which the
    # flock's thread can change meanwhile (a lazy import on its first request): "dictionary changed
    # size during iteration" failed a full run.
    return st.lists(inner, max_size=5) | st.dictionaries(st.text(max_size=12), inner, max_size=5)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=60),
    json_containers,
    max_leaves=20,
)
crow_names = st.sampled_from(["Hugin", "Munin", "Pepper", "Inky", "Tinker", "Ledger", "Soot", "Marlow", "Sentry", "x"])
list_bodies = st.fixed_dictionaries(
    {},
    optional={
        "text": st.text(max_size=300) | json_values,
        "requester": st.text(max_size=120) | json_values,
        "nest_id": st.sampled_from(["todo", "nope", ""]) | json_values,
    },
)
verdict_bodies = st.fixed_dictionaries(
    {},
    optional={
        "item_id": st.text(max_size=40) | json_values,
        "target": st.sampled_from(["triage", "output", "x"]) | json_values,
        "approve": st.booleans() | json_values,
    },
)
nest_bodies = st.fixed_dictionaries(
    {},
    optional={
        "name": st.text(max_size=50) | json_values,
        "crows": st.lists(crow_names | json_values, max_size=10) | json_values,
    },
)

message_bodies = st.fixed_dictionaries(
    {},
    optional={
        "author": st.sampled_from(["owner", "Pepper", "Sentry", "harness", ""]) | st.text(max_size=20) | json_values,
        "text": st.text(max_size=300) | json_values,
        "to": crow_names | st.text(max_size=20) | json_values,
        "kind": st.sampled_from(["say", "request", "claim", "deliver", "refer", "decline", "nudge", "flag", "x"])
        | json_values,
        "refers_to": st.sampled_from(["todo-1", "todo-0", "todo-x", ""]) | json_values,
    },
)


@pytest.fixture(scope="module")
def base_url(tmp_path_factory):
    loop = asyncio.new_event_loop()
    config = FlockConfig(lists_per_minute=5, heartbeat_s=5)
    # messages are not rate-limited here, so the fuzzing reaches past the 429
    flock = Flock(
        tmp_path_factory.mktemp("fuzz"), model=None, config=config, nest_config=NestConfig(messages_per_minute=10**6)
    )
    ready = threading.Event()

    def serve():
        asyncio.set_event_loop(loop)
        loop.run_until_complete(flock.start())
        ready.set()
        loop.run_forever()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    assert ready.wait(10)
    yield f"http://127.0.0.1:{flock.port}"
    asyncio.run_coroutine_threadsafe(flock.stop(), loop).result(10)
    loop.call_soon_threadsafe(loop.stop)
    thread.join(10)


def post(url, data: bytes) -> int:
    request = urllib.request.Request(url, data=data, method="POST", headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status
    except urllib.error.HTTPError as error:
        body = json.loads(error.read())
        assert isinstance(body.get("message"), str) and body["message"], body
        return error.code


FUZZ = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


@pytest.mark.parametrize(
    "path, bodies",
    [
        ("/api/lists", list_bodies),
        ("/api/verdicts", verdict_bodies),
        ("/api/nests", nest_bodies),
        ("/api/nests/todo/messages", message_bodies),
        (
            "/api/nests/todo/messages/todo-1/kind",
            st.fixed_dictionaries({}, optional={"kind": st.text(max_size=10) | json_values}),
        ),
    ],
)
def test_json_bodies_never_5xx(base_url, path, bodies):
    @FUZZ
    @given(body=bodies | json_values)
    def check(body):
        status = post(base_url + path, json.dumps(body).encode())
        assert status < 500, (path, body, status)

    check()


@pytest.mark.parametrize("path", ["/api/lists", "/api/verdicts", "/api/nests", "/api/nests/todo/messages"])
def test_raw_bytes_never_5xx(base_url, path):
    @FUZZ
    @given(data=st.binary(max_size=200))
    def check(data):
        assert post(base_url + path, data) < 500

    check()
