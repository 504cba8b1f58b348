"""No web page gets in: Debian's chromium, driven by playwright as in
tests/flock/test_flock_page_browser.py, against a real flock (a triage waiting for a person) and a real
`soulstack soul` process (the brainstem, with a RecordingBody).

A page served by an "attacker" on another origin (127.0.0.1:<another port>, which is even the
same site as both servers, so the flock's SameSite=Strict cookie goes along) tries each way in that
once worked: simple `text/plain` POSTs in no-cors mode to the soul's /nudge and
/v1/chat/completions and the flock's /api/lists and /api/verdicts; a form (enctype text/plain)
posting JSON-looking text to /api/verdicts; and `application/json` with a CORS preflight. A page on
a rebinding name (rebind.test, mapped to 127.0.0.1 by chromium's --host-resolver-rules) reads and
posts as its own origin. Every one is refused, and the proof is the servers' state: the triage
still waits, the flock's event log has not moved, the soul's log has no "nudge (" or "converse:
heard" line and no file of its life holds the words, its body said nothing. The statuses the
servers gave are recorded (the flock's own answers; the browser's responses for the soul). The
flock's own page keeps working: a list sent and a triage approved in it, open and token-locked.
"""

import asyncio
import json

import aiohttp
import pytest
import pytest_asyncio
from aiohttp import web
from playwright.async_api import async_playwright

import tests.flock.helpers as support
from soulstack.flock.app import TOKEN_COOKIE
from soulstack.fakes.soul_body import RecordingBody
from tests.helpers import free_port
from tests.flock.helpers import ARGS, CHROMIUM, Brain, Flock, Page, approve, config, send_list, start_fake_model
from tests.helpers import until_real as until
from tests.soul.helpers import start_soul, stop_with_ctrl_c, write_config

pytestmark = pytest.mark.asyncio(loop_scope="module")  # one browser, one soul, one loop for the module

REBIND = "rebind.test"
WORDS = "open the pod bay doors"  # what the attacker wants the soul to take as its person's
UNSET = (
    "NUDGE_TOKEN",
    "CONVERSE_TOKEN",
    "SOULSTACK_ALLOWED_HOSTS",
    "SOULSTACK_ALLOWED_ORIGINS",
)  # the servers are open

# A "simple" request (no preflight): the page cannot read the answer, but the server acts on it.
SIMPLE_POST = """async ([url, body, credentials]) => {
  try {
    const r = await fetch(url, {method: "POST", mode: "no-cors", credentials, body, headers: {"Content-Type": "text/plain"}});
    return "sent (" + r.type + ")";
  } catch (e) { return "failed: " + e.name; }
}"""
PREFLIGHTED_POST = """async ([url, body]) => {
  try {
    const r = await fetch(url, {method: "POST", mode: "cors", body, headers: {"Content-Type": "application/json"}});
    return "answered " + r.status;
  } catch (e) { return "failed: " + e.name; }
}"""
# The JSON is split into a field name and its value, so `name=value` is JSON again.
FORM_POST = """([action, json]) => {
  const form = Object.assign(document.createElement("form"), {method: "POST", action, enctype: "text/plain", target: "sink"});
  const input = Object.assign(document.createElement("input"), {name: json.slice(0, -2), value: '"}'});
  form.append(input); document.body.append(form); form.submit();
}"""
SAME_ORIGIN = """async ([method, path, body]) => {
  const r = await fetch(path, body ? {method, body, headers: {"Content-Type": "application/json"}} : {method});
  return [r.status, await r.text()];
}"""


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def browser():
    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(
            executable_path=CHROMIUM, args=[*ARGS, f"--host-resolver-rules=MAP {REBIND} 127.0.0.1"]
        )
        yield browser
        await browser.close()


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def attacker():
    """Another site's page, on 127.0.0.1 at a port of its own; its frame `sink` takes form posts."""
    app = web.Application()
    html = "<!doctype html><title>cute cats</title><h1>cats</h1><iframe name=sink></iframe>"

    async def page(request):
        return web.Response(text=html, content_type="text/html")

    app.router.add_get("/", page)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    yield f"http://127.0.0.1:{site._server.sockets[0].getsockname()[1]}/"
    await runner.cleanup()


class Soul:
    def __init__(self, port, log_path, soul_dir, body):
        self.port, self.log_path, self.soul_dir, self.body = port, log_path, soul_dir, body
        self.url = f"http://127.0.0.1:{port}"

    def log(self):
        return self.log_path.read_text()

    def heard(self, words):
        """Every trace of `words` in the soul: its log, any file of its life, its body's speech."""
        files = [p.read_text(errors="replace") for p in self.soul_dir.rglob("*") if p.is_file()]
        return [
            where
            for where, text in [("log", self.log()), ("body", json.dumps(self.body.spoken))]
            + [("soul dir", t) for t in files]
            if words in text
        ]


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def soul(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("soul")
    async with RecordingBody() as body:
        port = free_port()
        log_path = tmp / "soul.log"
        process = start_soul(write_config(tmp, body, port), log_path, **dict.fromkeys(UNSET, ""))
        try:
            await until(lambda: "waking 1:" in log_path.read_text(), what="the soul's first waking")
            yield Soul(port, log_path, tmp / "soul", body)
        finally:
            assert await stop_with_ctrl_c(process) == 0


@pytest_asyncio.fixture(loop_scope="module")
async def flock(tmp_path, monkeypatch, request):
    """A flock (locked with the token given as its param) whose every answer is recorded: method, path,
    status, and whether the page's token cookie came with the request."""
    fake, model = await start_fake_model(Brain())
    answers = []

    def recorded(*args, **kwargs):
        app = make_app(*args, **kwargs)

        async def record(asked, response):
            answers.append((asked.method, asked.path, response.status, TOKEN_COOKIE in asked.cookies))

        app.on_response_prepare.append(record)
        return app

    make_app = support.make_flock_app
    for name in UNSET:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(support, "make_flock_app", recorded)
    flock = await Flock(tmp_path / "data", model=model, config=config(), token=getattr(request, "param", None)).start()
    flock.answers = answers
    try:
        yield flock
    finally:
        await flock.stop()
        await fake.stop()


async def one_waiting_triage(flock):
    """A triage waiting for a person: (what /api/waiting says, the event log's last id)."""
    list_id = await flock.new_list("research the tides")
    for _ in range(250):
        waiting = (await flock.get("/api/waiting"))[1]["waiting"]
        if waiting:
            assert [(w["item_id"], w["target"]) for w in waiting] == [(f"{list_id}-1", "triage")]
            flock.answers.clear()  # from here on, what the attacks got
            return waiting, flock.flock.store.last_event_id()
        await asyncio.sleep(0.02)
    raise AssertionError("no triage came to wait")


async def unchanged(flock, waiting, last_event):
    await asyncio.sleep(0.5)  # long enough for a request that was taken to have acted
    assert (await flock.get("/api/waiting"))[1]["waiting"] == waiting
    assert flock.flock.store.last_event_id() == last_event  # no list, no verdict, nothing happened


async def attacker_page(browser, url):
    context = await browser.new_context()
    page = await context.new_page()
    page.set_default_timeout(10_000)
    page.responses = []  # (method, url, status) of every answer the page got
    page.on("response", lambda r: page.responses.append((r.request.method, r.url, r.status)))
    await page.goto(url)
    return context, page


def verdict(item_id):
    return json.dumps({"item_id": item_id, "target": "triage", "approve": True, "pad": ""})


async def test_another_site_cannot_make_a_list_or_approve_a_triage(browser, attacker, flock):
    waiting, last_event = await one_waiting_triage(flock)
    item_id = waiting[0]["item_id"]
    context, page = await attacker_page(browser, attacker)
    base = f"http://127.0.0.1:{flock.port}"
    new_list = json.dumps({"text": "research the owner's files", "requester": "mallory"})
    try:
        for path, body in (("/api/lists", new_list), ("/api/verdicts", verdict(item_id))):
            assert await page.evaluate(SIMPLE_POST, [base + path, body, "omit"]) == "sent (opaque)"
            assert await page.evaluate(PREFLIGHTED_POST, [base + path, body]) == "failed: TypeError"
        async with page.expect_response(base + "/api/verdicts") as form_answer:
            await page.evaluate(FORM_POST, [base + "/api/verdicts", verdict(item_id)])
        assert (await form_answer.value).status == 403
        await unchanged(flock, waiting, last_event)
    finally:
        await context.close()
    posts = [(m, p, s) for m, p, s, _ in flock.answers if p != "/api/waiting"]
    # Each simple post and the form: 403 (a foreign Origin); each preflight: 405, so no POST followed.
    assert posts == [
        ("POST", "/api/lists", 403),
        ("OPTIONS", "/api/lists", 405),
        ("POST", "/api/verdicts", 403),
        ("OPTIONS", "/api/verdicts", 405),
        ("POST", "/api/verdicts", 403),
    ]
    assert [s for m, u, s in page.responses if m == "POST"] == [403, 403, 403]


async def test_another_site_cannot_nudge_or_talk_to_the_soul(browser, attacker, soul):
    nudges = soul.log().count("nudge (")
    context, page = await attacker_page(browser, attacker)
    nudge = json.dumps({"reason": f"your human typed: {WORDS}", "words": WORDS})
    chat = json.dumps({"model": "soul", "messages": [{"role": "user", "content": WORDS}]})
    try:
        for path, body in (("/nudge", nudge), ("/v1/chat/completions", chat)):
            assert await page.evaluate(SIMPLE_POST, [soul.url + path, body, "include"]) == "sent (opaque)"
            assert await page.evaluate(PREFLIGHTED_POST, [soul.url + path, body]) == "failed: TypeError"
        async with page.expect_response(soul.url + "/nudge") as form_answer:
            await page.evaluate(FORM_POST, [soul.url + "/nudge", nudge])
        assert (await form_answer.value).status == 403
        await asyncio.sleep(1.0)
    finally:
        await context.close()
    assert [s for m, u, s in page.responses if m == "POST"] == [403, 403, 403]
    assert soul.heard(WORDS) == [] and soul.log().count("nudge (") == nudges
    assert "converse: heard" not in soul.log()
    # The same nudge from a program (no Origin, application/json) is taken: the checks above can see one.
    async with aiohttp.ClientSession() as http:
        async with http.post(
            soul.url + "/nudge", json={"reason": "your human typed: hello", "words": "hello"}
        ) as response:
            assert response.status == 202
    await until(lambda: "hello [a person's words]" in soul.log(), what="the program's nudge")
    assert soul.log().count("nudge (") == nudges + 1


async def test_a_rebinding_name_reaches_neither_server(browser, flock, soul):
    waiting, last_event = await one_waiting_triage(flock)
    context = await browser.new_context()
    page = await context.new_page()
    try:
        for base in (f"http://{REBIND}:{flock.port}", f"http://{REBIND}:{soul.port}"):
            response = await page.goto(base + "/")
            assert response.status == 421 and "SOULSTACK_ALLOWED_HOSTS" in (await response.json())["message"]
        flock_page = f"http://{REBIND}:{flock.port}/"
        await page.goto(flock_page)
        status, text = await page.evaluate(SAME_ORIGIN, ["GET", "/api/waiting", None])
        assert status == 421 and "SOULSTACK_ALLOWED_HOSTS" in json.loads(text)["message"]
        status, _ = await page.evaluate(SAME_ORIGIN, ["POST", "/api/verdicts", verdict(waiting[0]["item_id"])])
        assert status == 421
        await page.goto(f"http://{REBIND}:{soul.port}/health")
        assert (await page.evaluate(SAME_ORIGIN, ["GET", "/health", None]))[0] == 421
        nudge = json.dumps({"reason": f"your human typed: {WORDS}", "words": WORDS})
        assert (await page.evaluate(SAME_ORIGIN, ["POST", "/nudge", nudge]))[0] == 421
        await unchanged(flock, waiting, last_event)
    finally:
        await context.close()
    assert soul.heard(WORDS) == []
    rebound = [(m, p, s) for m, p, s, _ in flock.answers if p != "/api/waiting" or s != 200]  # not unchanged()'s GETs
    assert {("GET", "/"), ("GET", "/api/waiting"), ("POST", "/api/verdicts")} <= {(m, p) for m, p, s in rebound}
    assert {s for m, p, s in rebound} == {421}, rebound  # the page, its favicon, its reads and its posts


async def test_the_flock_s_own_page_still_sends_and_approves(browser, flock, tmp_path):
    session = Page(browser, tmp_path)
    async with session as page:
        await page.goto(f"http://127.0.0.1:{flock.port}/")
        list_id = await send_list(page, "research the moon")
        await approve(page, f"{list_id}-1 triage")
        await page.locator(f'article[data-key="{list_id}-1 output"]').wait_for()
        await session.shot("security-own-page-approves")
    assert session.errors == []
    assert ("POST", "/api/verdicts", 204, False) in flock.answers


@pytest.mark.parametrize("flock", ["s3cret-token"], indirect=True)
async def test_a_locked_flock_s_page_works_and_its_cookie_does_not_let_another_site_in(
    browser, attacker, flock, tmp_path
):
    # The attacker's page is the same site (127.0.0.1), so the page's SameSite=Strict cookie goes with its requests.
    waiting, last_event = await one_waiting_triage(flock)
    item_id = waiting[0]["item_id"]
    session = Page(browser, tmp_path)
    async with session as page:
        await page.goto(f"http://127.0.0.1:{flock.port}/")
        await page.fill("#unlock input", flock.token)
        await page.click("#unlock button")
        await page.locator(f'article[data-key="{item_id} triage"]').wait_for()
        other = await session.context.new_page()
        await other.goto(attacker)
        url = f"http://127.0.0.1:{flock.port}/api/verdicts"
        assert await other.evaluate(SIMPLE_POST, [url, verdict(item_id), "include"]) == "sent (opaque)"
        async with other.expect_response(url) as form_answer:
            await other.evaluate(FORM_POST, [url, verdict(item_id)])
        assert (await form_answer.value).status == 403
        await unchanged(flock, waiting, last_event)
        assert [a for a in flock.answers if a[1] == "/api/verdicts"] == [("POST", "/api/verdicts", 403, True)] * 2
        await approve(page, f"{item_id} triage")  # and the page itself still may
        await page.locator(f'article[data-key="{item_id} output"]').wait_for()
        await session.shot("security-locked-page-approves")
    assert ("POST", "/api/verdicts", 204, True) in flock.answers
    assert [e for e in session.errors if "401" not in e] == []  # the first load's 401, before the token
