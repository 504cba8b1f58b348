"""The flock's page in a real browser: Debian's chromium driven by playwright (never a downloaded
browser; tools/test installs both), the flock on loopback with the fake model behind the real
anthropic SDK. Every test saves a screenshot under its tmp_path (printed with -s) and fails on any
console error or uncaught page error, except where the server is deliberately down. One chromium
serves the whole module (starting it is most of a test's time); each test has its own context."""

import asyncio

import pytest
import pytest_asyncio
from playwright.async_api import expect

from soulstack.fakes.anthropic_api import text
from soulstack.flock.demo.model import DemoModel
from tests.fakes.riv import riv
from tests.flock.helpers import Brain, Flock, Page, approve, config, send_list, start_fake_model

pytestmark = pytest.mark.asyncio(loop_scope="module")  # the tests share the module's browser and loop

XSS_ANSWER = """**Bold** and a list:

- one
- two

<script>window.pwned = "script"</script>
<img src="data:image/png;base64,broken" onerror="window.pwned = 'onerror'">
[a javascript link](javascript:window.pwned='link') and <a href="javascript:window.pwned='a'">another</a>
<iframe src="javascript:parent.pwned='iframe'"></iframe>"""


LONG_ANSWER = "\n\n".join(
    f"Paragraph {n}: the parts came from Inky, Tinker, and a crow or two more." for n in range(60)
)
LONG_ANSWER += "\n\nThe last line of the long answer."


class XssBrain(Brain):
    """The usual brain, except that a crow asked about "xss" answers with hostile Markdown, and one
    asked about "longread" with sixty paragraphs."""

    def __call__(self, body):
        first = body["messages"][0]["content"]
        prompt = first if isinstance(first, str) else " ".join(b.get("text", "") for b in first)
        if not body.get("tools") and "one short aside" not in str(body.get("system")):
            if "xss" in prompt:
                return text(XSS_ANSWER)
            if "longread" in prompt:
                return text(LONG_ANSWER)
        return super().__call__(body)


# The boxes from a node up to the page that scroll on their own: a box a person must scroll inside.
SCROLL_BOXES = """node => {
  const boxes = [];
  for (let n = node; n && n !== document.body; n = n.parentElement) {
    const style = getComputedStyle(n);
    if (/auto|scroll/.test(style.overflowY) && n.scrollHeight > n.clientHeight + 1) boxes.push(n.className || n.tagName);
  }
  return boxes;
}"""


@pytest_asyncio.fixture(loop_scope="module")
async def fake_model():
    fake, model = await start_fake_model(XssBrain())
    yield model
    await fake.stop()


@pytest_asyncio.fixture(loop_scope="module")
async def flock(tmp_path, fake_model):
    flock = await Flock(tmp_path / "data", model=fake_model, config=config()).start()
    yield flock
    await flock.stop()


async def test_post_a_list_watch_the_crows_approve_in_the_page_and_the_list_finishes(browser, flock, tmp_path):
    session = Page(browser, tmp_path)
    async with session as page:
        await page.goto(f"http://127.0.0.1:{flock.port}/")
        await expect(page.locator("#conn")).to_have_class("conn live")
        await expect(page.locator("figure.crow")).to_have_count(10)
        list_id = await send_list(page, "research the tides\nsplit the garden chores")
        card = page.locator(f'details.list-card[data-list-id="{list_id}"]')
        await expect(card).to_be_visible()
        for n in (1, 2):
            await approve(page, f"{list_id}-{n} triage")
        await expect(card.locator(".subtasks li")).to_have_text(["first part", "second part"])
        answer = page.locator(f'article[data-key="{list_id}-2 output"] .answer')
        await expect(answer).to_contain_text("The Elder's ruling")
        # Banter: the split item's crows traded a line; it shows in a bubble and on the card.
        bubble = page.locator("figure.crow .bubble:visible")
        await expect(bubble).to_have_count(1)
        await expect(bubble).to_contain_text("Well flown")
        await expect(card.locator(".banter")).to_contain_text("Well flown")
        await session.shot("1-answers-waiting-with-banter")
        for n in (1, 2):
            await approve(page, f"{list_id}-{n} output")
        await expect(card).to_have_class("list-card finished")
        # The banter's moment ended with its list: no bubble is left over the sky.
        assert await page.locator("figure.crow .bubble:visible").count() == 0
        assert await card.evaluate("el => el.open") is False  # a finished list folds away
        await expect(card.locator("summary")).to_contain_text("finished")
        seen = set(await page.evaluate("[...window.crowClasses]"))
        assert {"flying", "takeoff", "land", "celebrate", "talk", "listen"} <= seen, seen
        await card.locator("summary").click()  # unfold it again
        await expect(card.locator(".track li.now")).to_have_text(["verdict", "verdict"])
        await expect(page.locator("#ledger table")).to_contain_text("stranger")
        await expect(page.locator(".nest")).to_have_attribute("data-nest-id", "todo")
        await session.shot("2-finished-and-unfolded")
    assert session.errors == []


async def test_a_hostile_answer_is_rendered_as_markdown_and_nothing_in_it_runs(browser, flock, tmp_path):
    session = Page(browser, tmp_path)
    async with session as page:
        await page.goto(f"http://127.0.0.1:{flock.port}/")
        list_id = await send_list(page, "research xss please")
        await approve(page, f"{list_id}-1 triage")
        answer = page.locator(f'article[data-key="{list_id}-1 output"] .answer')
        await expect(answer.locator("strong")).to_have_text("Bold")
        await expect(answer.locator("li")).to_have_count(2)
        assert await answer.locator("script, iframe").count() == 0
        assert await answer.locator("img").evaluate_all("els => els.map(e => e.getAttribute('onerror'))") in (
            [],
            [None],
        )
        hrefs = await answer.locator("a").evaluate_all("els => els.map(e => e.getAttribute('href'))")
        assert not any(h and h.strip().lower().startswith("javascript") for h in hrefs), hrefs
        for link in await answer.locator("a").all():
            await link.click()
        await asyncio.sleep(0.5)
        assert await page.evaluate("window.pwned") is None
        await session.shot("3-hostile-answer-sanitized")
        # Approved, the answer stays on the finished list's card: sanitized there too.
        await approve(page, f"{list_id}-1 output")
        card = page.locator(f'details.list-card[data-list-id="{list_id}"]')
        await expect(card).to_have_class("list-card finished")
        await card.locator("summary").click()
        kept = card.locator(".kept-answer .answer")
        await expect(kept.locator("strong")).to_have_text("Bold")
        assert await kept.locator("script, iframe").count() == 0
        hrefs = await kept.locator("a").evaluate_all("els => els.map(e => e.getAttribute('href'))")
        assert not any(h and h.strip().lower().startswith("javascript") for h in hrefs), hrefs
        assert await page.evaluate("window.pwned") is None
    assert session.errors == []


async def test_without_the_npm_libraries_the_crows_are_svg_and_answers_plain_text(browser, flock, tmp_path):
    # What a wheel install without `npm ci` serves: /api/ui says no library is there, /vendor/ is 404.
    session = Page(browser, tmp_path)
    async with session as page:

        async def no_libraries(route):
            answer = await route.fetch()
            ui = await answer.json()
            ui["vendor"] = {name: False for name in ui["vendor"]}
            await route.fulfill(response=answer, json=ui)

        await page.route("**/api/ui", no_libraries)
        await page.route("**/vendor/**", lambda route: route.fulfill(status=404, json={"message": "not installed"}))
        await page.goto(f"http://127.0.0.1:{flock.port}/")
        await expect(page.locator("#renderer-note")).to_contain_text("@rive-app/canvas) is not installed; run npm ci")
        await expect(page.locator("figure.crow svg")).to_have_count(10)
        list_id = await send_list(page, "research plain text")
        await approve(page, f"{list_id}-1 triage")
        answer = page.locator(f'article[data-key="{list_id}-1 output"] .answer')
        await expect(answer.locator("pre")).to_contain_text("done:")
        await expect(answer.locator(".note")).to_contain_text("plain text")
        seen = set(await page.evaluate("[...window.crowClasses]"))
        assert {"flying", "takeoff", "land"} <= seen, seen
        await session.shot("13-no-npm-libraries")
    assert session.errors == []


async def test_a_reload_midway_shows_the_same_waiting_approvals_once(browser, flock, tmp_path):
    session = Page(browser, tmp_path)
    async with session as page:
        await page.goto(f"http://127.0.0.1:{flock.port}/")
        list_id = await send_list(page, "research one\nresearch two")
        await expect(page.locator("article.approval")).to_have_count(2)
        await approve(page, f"{list_id}-1 triage")
        await expect(page.locator(f'article[data-key="{list_id}-1 output"]')).to_have_count(1)
        await page.reload()
        await expect(page.locator("#conn")).to_have_class("conn live")
        keys = page.locator("article.approval")
        await expect(keys).to_have_count(2)
        assert sorted(await keys.evaluate_all("els => els.map(e => e.dataset.key)")) == [
            f"{list_id}-1 output",
            f"{list_id}-2 triage",
        ]
        await expect(page.locator("details.list-card")).to_have_count(1)
        await approve(page, f"{list_id}-2 triage")
        await session.shot("4-after-reload")
    assert session.errors == []


async def test_server_stopped_then_restarted_errors_are_visible_and_buttons_come_back(browser, tmp_path, fake_model):
    flock = await Flock(tmp_path / "data", model=fake_model, config=config()).start()
    port = flock.port
    session = Page(browser, tmp_path)
    try:
        async with session as page:
            await page.goto(f"http://127.0.0.1:{port}/")
            list_id = await send_list(page, "research the moon")
            await expect(page.locator("article.approval")).to_have_count(1)
            await flock.stop()
            await expect(page.locator("#conn")).to_have_class("conn down")
            await page.fill("#list-form textarea", "research the sun")
            await page.click("#list-form button")
            await expect(page.locator("#form-answer")).to_contain_text("could not reach the flock")
            assert await page.input_value("#list-form textarea") == "research the sun"  # nothing lost
            row = page.locator(f'article[data-key="{list_id}-1 triage"]')
            await row.locator("button.approve").click()
            await expect(row.locator(".reply")).to_contain_text("could not reach the flock")
            await expect(row.locator("button.approve")).to_be_enabled()
            await session.shot("5-server-down")
            flock = await Flock(tmp_path / "data", model=fake_model, config=config()).start(port)
            await expect(page.locator("#conn")).to_have_class("conn live", timeout=15_000)
            await row.locator("button.approve").click()
            await expect(page.locator(f'article[data-key="{list_id}-1 output"]')).to_have_count(1)
            await session.shot("6-server-back")
    finally:
        await flock.stop()
    unexpected = [e for e in session.errors if "ERR_CONNECTION_REFUSED" not in e and "Failed to load resource" not in e]
    assert unexpected == []


async def test_readable_at_390_px(browser, flock, tmp_path):
    session = Page(browser, tmp_path, width=390, height=844)
    async with session as page:
        await page.goto(f"http://127.0.0.1:{flock.port}/")
        list_id = await send_list(page, "split the move\nresearch boxes")
        await expect(page.locator("article.approval")).to_have_count(2)
        await approve(page, f"{list_id}-1 triage")
        await expect(page.locator(f'article[data-key="{list_id}-1 output"]')).to_have_count(1)
        assert await page.evaluate("document.documentElement.scrollWidth") <= 390  # nothing sticks out sideways
        boxes = [await page.locator(s).bounding_box() for s in ("#ask", "#waiting", "#lists-section")]
        assert all(box["width"] > 330 for box in boxes)  # one column, full width
        assert boxes[0]["y"] < boxes[1]["y"] < boxes[2]["y"]
        await session.shot("7-at-390px")
    assert session.errors == []


async def test_at_390_px_an_answer_reads_in_full_in_the_pages_own_scroll(browser, flock, tmp_path):
    session = Page(browser, tmp_path, width=390, height=844)
    async with session as page:
        await page.goto(f"http://127.0.0.1:{flock.port}/")
        list_id = await send_list(page, "research longread")
        await approve(page, f"{list_id}-1 triage")
        waiting = page.locator(f'article[data-key="{list_id}-1 output"] .answer')
        await expect(waiting).to_contain_text("The last line of the long answer.")
        assert await waiting.evaluate(SCROLL_BOXES) == []  # the approval's answer: no box of its own
        await waiting.locator("p").last.scroll_into_view_if_needed()
        await session.shot("12-long-answer-waiting-390px")
        await approve(page, f"{list_id}-1 output")
        card = page.locator(f'details.list-card[data-list-id="{list_id}"]')
        await expect(card).to_have_class("list-card finished")
        await card.locator("summary").click()
        kept = card.locator(".kept-answer .answer")
        await expect(kept).to_contain_text("The last line of the long answer.")
        assert await kept.evaluate(SCROLL_BOXES) == []
        last = await kept.locator("p").last.bounding_box()
        copy = await card.locator(".kept-answer .copy").bounding_box()
        assert last["y"] + last["height"] <= copy["y"]  # the last line sits above "Copy the answer", uncut
        await card.locator(".kept-answer .copy").scroll_into_view_if_needed()
        await session.shot("13-long-answer-kept-390px")
    assert session.errors == []


async def test_a_finished_lists_banter_leaves_no_bubble_over_the_sky_at_open(browser, tmp_path, fake_model):
    # The list (a split item: its crows trade a line) is worked and judged before the page opens; the
    # page's opening view replays it whole, banter and all, and its moment is over by then.
    flock = await Flock(tmp_path / "data", model=fake_model, config=config()).start()
    session = Page(browser, tmp_path)
    try:
        list_id = await flock.new_list("split the attic")
        async with flock.events(list_id) as stream:
            await stream.until("item.triaged")
            assert await flock.verdict(f"{list_id}-1", "triage") == 204
            await stream.until("item.answered")
            await stream.seen_or_next("crow.banter")
            assert await flock.verdict(f"{list_id}-1", "output") == 204
            await stream.until("list.finished")
        async with session as page:
            await page.goto(f"http://127.0.0.1:{flock.port}/")
            card = page.locator(f'details.list-card[data-list-id="{list_id}"]')
            await expect(card).to_have_class("list-card finished")
            await expect(card.locator(".banter")).to_contain_text("Well flown")  # the line was replayed
            assert await page.locator("figure.crow .bubble:visible").count() == 0
            await session.shot("14-no-old-bubbles-at-open")
    finally:
        await flock.stop()
    assert session.errors == []


async def test_without_a_model_the_page_says_so_at_open_and_how_to_give_it_a_mind(browser, tmp_path):
    flock = await Flock(tmp_path / "data", config=config()).start()
    session = Page(browser, tmp_path)
    try:
        async with session as page:
            await page.goto(f"http://127.0.0.1:{flock.port}/")
            await expect(page.locator("#conn")).to_have_class("conn live")
            notice = page.locator("#no-model")
            await expect(notice).to_be_visible()  # before anything is posted
            await expect(notice).to_contain_text("ANTHROPIC_API_KEY")
            await expect(notice).to_contain_text("soulstack flock --demo")
            await expect(page.locator("#demo")).to_be_hidden()
            await session.shot("9-no-model-at-open")
            await send_list(page, "anything")
            await expect(page.locator(".item .skip")).to_have_text("skipped: no model configured")
            await expect(notice).to_be_visible()
    finally:
        await flock.stop()
    assert session.errors == []


async def test_a_demo_flock_says_at_open_that_its_answers_are_canned_and_works(browser, tmp_path):
    flock = await Flock(tmp_path / "data", model=DemoModel(pace_s=0.05), config=config()).start()
    session = Page(browser, tmp_path)
    try:
        async with session as page:
            await page.goto(f"http://127.0.0.1:{flock.port}/")
            notice = page.locator("#demo")
            await expect(notice).to_be_visible()  # before anything is posted
            await expect(notice).to_contain_text("no model thinks here")
            await expect(notice).to_contain_text("canned")
            await expect(page.locator("#no-model")).to_be_hidden()
            await session.shot("10-demo-at-open")
            list_id = await send_list(page, "buy bread, milk and eggs")
            await approve(page, f"{list_id}-1 triage")
            answer = page.locator(f'article[data-key="{list_id}-1 output"] .answer')
            await expect(answer).to_contain_text("no model thought about this")
            await session.shot("11-demo-answer-waiting")
    finally:
        await flock.stop()
    assert session.errors == []


@pytest.mark.parametrize(
    "riv, why", [("gone.riv", "gone.riv was not found"), ("junk.riv", "is not a Rive file this runtime can read")]
)
async def test_a_missing_or_unreadable_rive_file_falls_back_to_svg_and_says_why(browser, tmp_path, riv, why):
    (tmp_path / "junk.riv").write_bytes(b"this is not a rive file")
    flock = await Flock(tmp_path / "data", config=config(), rive=str(tmp_path / riv)).start()
    session = Page(browser, tmp_path)
    try:
        async with session as page:
            await page.goto(f"http://127.0.0.1:{flock.port}/")
            await expect(page.locator("#renderer-note")).to_contain_text(why)
            await expect(page.locator("figure.crow svg")).to_have_count(10)
            await session.shot(f"8-rive-fallback-{riv}")
    finally:
        await flock.stop()
    # The Rive runtime itself logs what it found wrong with a junk file; nothing else may complain.
    expected = {"console: Bad header", "console: The file failed to load"} if riv == "junk.riv" else set()
    assert set(session.errors) == expected


async def test_a_locked_flock_asks_for_its_token_once_then_works(browser, tmp_path, fake_model):
    flock = await Flock(tmp_path / "data", model=fake_model, config=config(), token="s3cret-token").start()
    session = Page(browser, tmp_path)
    try:
        async with session as page:
            await page.goto(f"http://127.0.0.1:{flock.port}/")
            await expect(page.locator("#unlock")).to_be_visible()
            await page.fill("#unlock input", "wrong")
            await page.click("#unlock button")
            await expect(page.locator("#unlock-answer")).to_contain_text("not accepted")
            await page.fill("#unlock input", "s3cret-token")
            await page.click("#unlock button")
            await expect(page.locator("#conn")).to_have_class("conn live")
            await expect(page.locator("#unlock")).to_be_hidden()
            await send_list(page, "research the locks")
            await expect(page.locator("article.approval")).to_have_count(1)
            await session.shot("10-unlocked")
    finally:
        await flock.stop()
    # The refused first load and the wrong token are the server's 401s, as they should be.
    assert [e for e in session.errors if "401" not in e] == []


CROW_INPUTS = {
    "takeoff": "trigger",
    "land": "trigger",
    "fail": "trigger",
    "talk": "trigger",
    "listen": "trigger",
    "celebrate": "trigger",
    "flying": "boolean",
    "borrowed": "boolean",
    "trust": "number",
}


async def test_a_rive_file_with_the_contracts_machine_draws_the_crows_and_its_inputs_are_driven(
    browser, tmp_path, fake_model
):
    # A real .riv (tests/fakes/riv.py writes the runtime's format), loaded by @rive-app/canvas.
    (tmp_path / "crows.riv").write_bytes(riv("crow", CROW_INPUTS))
    flock = await Flock(tmp_path / "data", model=fake_model, config=config(), rive=str(tmp_path / "crows.riv")).start()
    session = Page(browser, tmp_path)
    try:
        async with session as page:
            await page.goto(f"http://127.0.0.1:{flock.port}/")
            await expect(page.locator("figure.crow.rive canvas")).to_have_count(10)
            assert await page.locator("#renderer-note").is_hidden()
            list_id = await send_list(page, "research the runtime")
            await approve(page, f"{list_id}-1 triage")
            await expect(page.locator(f'article[data-key="{list_id}-1 output"]')).to_have_count(1)
            # The Sentry and a crow flew: the runtime's `flying` input went true, then back to false.
            seen = set(await page.evaluate("[...window.crowClasses]"))
            assert "flying" in seen, seen
            await expect(page.locator("figure.crow.rive.flying")).to_have_count(0)
            await session.shot("11-rive-renderer")
    finally:
        await flock.stop()
    assert session.errors == []


async def test_a_rive_file_missing_inputs_falls_back_to_svg_naming_them(browser, tmp_path):
    inputs = {name: kind for name, kind in CROW_INPUTS.items() if name != "talk"} | {"trust": "boolean"}
    (tmp_path / "old.riv").write_bytes(riv("crow", inputs))
    (tmp_path / "other.riv").write_bytes(riv("bird", CROW_INPUTS))
    for name, why in (
        ("old.riv", 'old.riv: state machine "crow": talk (trigger) is missing; trust is a boolean, not a number'),
        ("other.riv", 'other.riv has no state machine named "crow" (it has: bird)'),
    ):
        flock = await Flock(tmp_path / f"data-{name}", config=config(), rive=str(tmp_path / name)).start()
        session = Page(browser, tmp_path)
        try:
            async with session as page:
                await page.goto(f"http://127.0.0.1:{flock.port}/")
                await expect(page.locator("#renderer-note")).to_contain_text(why)
                await expect(page.locator("figure.crow svg")).to_have_count(10)
                await session.shot(f"12-rive-mismatch-{name}")
        finally:
            await flock.stop()
