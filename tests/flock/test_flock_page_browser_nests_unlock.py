"""The page in a real browser (chromium, as test_flock_page_browser.py drives it), for what its
split into modules added: a nest's conversation follows the nest's stream only while its panel is
open (the EventSource is closed when it closes, in the browser and on the server) and catches up on
what was said meanwhile; and a locked flock's token, read from /api/ui once unlocked, still says
"not accepted" when a later load is refused with it."""

import pytest
from playwright.async_api import expect

from soulstack.flock.app import HARNESS
from tests.flock.helpers import Flock, Page, config
from tests.helpers import until

pytestmark = pytest.mark.asyncio(loop_scope="module")

# Keeps every EventSource the page opens on a nest's stream, to count the open ones.
WATCH_NEST_STREAMS = """
window.nestStreams = [];
const NativeEventSource = window.EventSource;
window.EventSource = class extends NativeEventSource {
  constructor(url, options) {
    super(url, options);
    if (String(url).includes("nest_id=")) window.nestStreams.push(this);
  }
};
"""
OPEN_NEST_STREAMS = "window.nestStreams.filter(s => s.readyState !== EventSource.CLOSED).length"


async def say(flock, text):
    status, record = await flock.post("/api/nests/todo/messages", {"author": "owner", "text": text})
    assert status == 201, record
    return record


async def test_a_conversation_streams_only_while_open_and_catches_up_when_opened_again(browser, tmp_path):
    flock = await Flock(tmp_path / "data", config=config()).start()
    session = Page(browser, tmp_path)

    def served():  # the nest streams the server holds open for "todo"
        return sum(1 for s in flock.runner.app[HARNESS].messages.subscribers.live if s.key == "todo")

    try:
        async with session as page:
            await page.add_init_script(WATCH_NEST_STREAMS)
            await say(flock, "before the page opened")
            await page.goto(f"http://127.0.0.1:{flock.port}/")
            await expect(page.locator("#conn")).to_have_class("conn live")
            talk = page.locator('.nest[data-nest-id="todo"] details.conversation')
            messages = talk.locator("li.message")
            assert await page.evaluate("window.nestStreams.length") == 0  # nothing streams until it is opened
            await talk.locator("summary").click()
            await expect(messages.filter(has_text="before the page opened")).to_have_count(1)
            assert await page.evaluate(OPEN_NEST_STREAMS) == 1
            await until(lambda: served() == 1, "the server streams the nest to the page")
            await say(flock, "said while it was open")
            await expect(messages.filter(has_text="said while it was open")).to_have_count(1)

            await talk.locator("summary").click()  # closed: its stream is closed, in the page and on the server
            await page.wait_for_function(f"{OPEN_NEST_STREAMS} === 0")  # the toggle event comes a moment later
            closed = await say(flock, "said while it was closed")  # the server finds the stream gone, at the latest now
            await until(lambda: served() == 0, "the server lets the page's nest stream go")

            await talk.locator("summary").click()  # open again: one new stream, and what it missed
            await expect(messages.filter(has_text="said while it was closed")).to_have_count(1)
            assert await page.evaluate(OPEN_NEST_STREAMS) == 1
            assert await page.evaluate("window.nestStreams.length") == 2
            await talk.locator("input").fill("typed in the page")
            await talk.locator("button").click()
            await expect(messages.filter(has_text="typed in the page")).to_have_count(1)
            ids = await messages.evaluate_all("els => els.map(e => e.dataset.msgId)")
            assert closed["msg_id"] in ids and len(ids) == len(set(ids))  # each message once
            assert [int(i.rsplit("-", 1)[1]) for i in ids] == list(range(1, len(ids) + 1))  # in the nest's order
            await session.shot("13-conversation-reopened")
    finally:
        await flock.stop()
    assert session.errors == []


async def test_a_token_that_stops_working_is_refused_on_the_next_load_and_the_page_says_so(browser, tmp_path):
    flock = await Flock(tmp_path / "data", config=config(), token="first-token").start()
    port = flock.port
    session = Page(browser, tmp_path)
    try:
        async with session as page:
            await page.goto(f"http://127.0.0.1:{port}/")
            await expect(page.locator("#unlock-answer")).to_have_text("")  # no token was tried yet
            await page.fill("#unlock input", "first-token")
            await page.click("#unlock button")
            await expect(page.locator("#conn")).to_have_class("conn live")
            await flock.stop()
            flock = await Flock(tmp_path / "data", config=config(), token="second-token").start(port)
            await page.reload()
            await expect(page.locator("#unlock")).to_be_visible()
            await expect(page.locator("#unlock-answer")).to_contain_text("not accepted")
            await page.fill("#unlock input", "second-token")
            await page.click("#unlock button")
            await expect(page.locator("#conn")).to_have_class("conn live")
            await expect(page.locator("#unlock")).to_be_hidden()
            await session.shot("14-unlocked-again")
    finally:
        await flock.stop()
    expected = ("401", "ERR_CONNECTION_REFUSED", "Failed to load resource")  # the refusals and the restart
    assert [e for e in session.errors if not any(x in e for x in expected)] == []


async def test_a_nest_message_reads_as_its_markdown_and_keeps_no_markup_a_crow_could_abuse(browser, tmp_path):
    """Crows write Markdown (the demo's "_(scripted offline answer)_"), and their words are untrusted:
    rendered and sanitized as list answers are, where they showed raw, their line breaks lost."""
    flock = await Flock(tmp_path / "data", config=config()).start()
    session = Page(browser, tmp_path)
    try:
        async with session as page:
            plain = await say(flock, "First line\n\n_an aside_ and **bold**")
            sly = await say(
                flock,
                'Look <b onmouseover="window.hacked=1">here</b><script>window.hacked=3</script> [or](javascript:x)',
            )
            await page.goto(f"http://127.0.0.1:{flock.port}/")
            await expect(page.locator("#conn")).to_have_class("conn live")
            talk = page.locator('.nest[data-nest-id="todo"] details.conversation')
            await talk.locator("summary").click()
            first = talk.locator(f'li.message[data-msg-id="{plain["msg_id"]}"] .text')
            await expect(first.locator("em")).to_have_text("an aside")
            await expect(first.locator("strong")).to_have_text("bold")
            await expect(first.locator("p")).to_have_count(2)  # the paragraphs kept apart
            second = talk.locator(f'li.message[data-msg-id="{sly["msg_id"]}"] .text')
            await expect(second).to_contain_text("Look")
            assert await second.locator("[onmouseover]").count() == 0 and await second.locator("script").count() == 0
            assert await second.locator("a[href^='javascript']").count() == 0
            assert await page.evaluate("window.hacked") is None
    finally:
        await flock.stop()
    assert session.errors == []


async def test_a_sentry_flag_is_answered_on_the_page(browser, tmp_path):
    """The flag asked the owner "a question" that only curl could answer: unanswered, it timed out into
    the quarantine. The page's Release frees the crow, and a second answer is said to be too late."""
    flock = await Flock(tmp_path / "data", config=config()).start()
    session = Page(browser, tmp_path)
    try:
        await flock.post("/api/nests", {"name": "Launch", "crows": ["Pepper", "Inky"]})
        status, _ = await flock.post(
            "/api/nests/launch/messages", {"author": "Pepper", "text": "Ask Zed.", "to": "Zed"}
        )
        assert status == 201  # a crow addressing one outside the nest: the Sentry flags it
        status, _ = await flock.post("/api/nests/launch/messages", {"author": "Pepper", "text": "hi"})
        assert status == 409  # quarantined
        async with session as page:
            await page.goto(f"http://127.0.0.1:{flock.port}/")
            await expect(page.locator("#conn")).to_have_class("conn live")
            talk = page.locator('.nest[data-nest-id="launch"] details.conversation')
            await talk.locator("summary").click()
            flag = talk.locator("li.message.kind-flag")
            await flag.get_by_role("button", name="Release").click()
            await expect(flag.locator(".reply")).to_have_text("released: Pepper may talk again")
            status, _ = await flock.post("/api/nests/launch/messages", {"author": "Pepper", "text": "hi again"})
            assert status == 201  # free
            await page.reload()
            await expect(page.locator("#conn")).to_have_class("conn live")
            await talk.locator("summary").click()
            await flag.get_by_role("button", name="Uphold").click()
            await expect(flag.locator(".reply")).to_contain_text("nothing is waiting for a flag verdict")
    finally:
        await flock.stop()
    assert all("status of 404" in e for e in session.errors), session.errors  # the browser logs the late answer's 404
