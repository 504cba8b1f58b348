"""Hostile input against every server a stranger can reach, as real processes on loopback.

The fixed corpus (tools/fuzzkit.py: deep JSON, lone surrogates, control
characters, bogus charsets, header bytes, 10 MB bodies, broken framing, wrong
methods, long URLs, wrong types) and hypothesis-made JSON bodies. No answer may
be a 5xx (bodies may say an honest 503), none may take over 5 s, no server may
die, and afterwards each still serves a clean scenario — the soul still makes a
model call for a clean nudge.
"""

import asyncio
import json
import threading

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from soulstack.fakes.anthropic_api import FakeAnthropic, tool_use
from tools import fuzzkit

SERVERS = ("soul", "terminal", "sim", "bridge", "stackchan", "tts", "ears", "flock")


class FakeModelThread:
    """The scripted Anthropic API on its own event loop, for a soul that runs as a process."""

    def __init__(self):
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)

    def __enter__(self):
        self.thread.start()
        self.fake = FakeAnthropic(default=lambda request: tool_use("sleep", {"minutes": 60}))
        asyncio.run_coroutine_threadsafe(self.fake.start(), self.loop).result(10)
        return self.fake

    def __exit__(self, *exc):
        asyncio.run_coroutine_threadsafe(self.fake.stop(), self.loop).result(10)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)


@pytest.fixture(scope="module")
def servers():
    with FakeModelThread() as fake:
        env = {k: v for k, v in __import__("os").environ.items() if not k.startswith(("ANTHROPIC_", "OPENAI_"))}
        env.update(ANTHROPIC_API_KEY="test-key", ANTHROPIC_BASE_URL=fake.base_url)
        with fuzzkit.Servers(env, soul_model={"provider": "anthropic", "id": "claude-test"}) as running:
            running.start_all()
            running.fake = fake
            yield running


@pytest.mark.parametrize("name", SERVERS)
def test_the_corpus_gets_no_5xx_no_hang_and_leaves_the_server_able(servers, name):
    server = servers.servers[name]
    calls_before = len(servers.fake.bodies)
    tally = fuzzkit.fuzz(server.port, server.endpoints, server.token, server.allow_503, server.alive)
    assert tally.failures == [], tally.failures
    assert tally.sent >= 40 and server.alive()
    assert fuzzkit.still_able(server) is None
    if name != "sim":  # every host server refuses what a web page can send; the firmware is not one
        browser = {
            case: status
            for case, status in tally.answers.items()
            if case.startswith("POST ") and case.split(" ", 2)[2] in fuzzkit.BROWSER_CASES
        }
        assert browser and all(status in (403, 415, 421) for status in browser.values()), browser
    if name == "soul":
        # The clean nudge still reaches the mind: a model call shows it. (The fuzz's own valid nudges
        # make calls too, so the first call after calls_before need not be the clean one.)
        def shown():
            return any(
                "a clean nudge after the fuzz" in json.dumps(body, ensure_ascii=False)
                for body in servers.fake.bodies[calls_before:]
            )

        fuzzkit.wait_until(shown, "a model call showing the clean nudge", timeout=20)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=50),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=10), children, max_size=4),
    max_leaves=12,
)


@pytest.mark.parametrize("name", SERVERS)
def test_hypothesis_bodies_get_no_5xx(servers, name):
    server = servers.servers[name]
    posts = [endpoint for endpoint in server.endpoints if endpoint.method == "POST"]

    @settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
    @given(index=st.integers(0, len(posts) - 1), value=json_values, field_value=json_values)
    def hostile(index, value, field_value):
        endpoint = posts[index]
        bodies = [value]
        if endpoint.fields:
            bodies.append(dict(endpoint.example, **{endpoint.fields[0]: field_value}))
        for body in bodies:
            raw = fuzzkit.request(
                "POST", endpoint.path, json.dumps(body).encode(), {"Authorization": f"Bearer {server.token}"}
            )
            answer = fuzzkit.send(server.port, raw)
            assert not answer.hung, (endpoint.path, body)
            assert answer.status is not None and (answer.status < 500 or (server.allow_503 and answer.status == 503)), (
                endpoint.path,
                body,
                answer.status,
            )

    hostile()
    assert server.alive() and fuzzkit.still_able(server) is None
