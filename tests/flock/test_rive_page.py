"""The real flock page with its built-in crows (no --rive): Rive draws the ten figures from the
flock's own file, the flock's events drive them, a crow that works an item flies to its list's
marker in the sky and back; at 390 px all ten sit in view. And the page items of issue 34: answers
stay readable (and copyable) once a list is finished, read back from GET /api/lists/{id}; earlier
lists come from GET /api/lists; the trust table shows each streak's progress; the form's word that
a list went fades; nests are made from the page and a message can address one crow.

Chromium through playwright as in test_flock_page_browser.py (one browser for the module), the
fake model behind the real anthropic SDK; every test fails on a console error and saves
screenshots under its tmp_path (printed with -s)."""

import re

import pytest
import pytest_asyncio
from playwright.async_api import expect

from tests.flock.helpers import Flock, Page, approve, config, send_list, start_fake_model

pytestmark = pytest.mark.asyncio(loop_scope="module")

AWAY = re.compile(r"\baway\b")  # a figure out at a list's marker (scene.js)
# Every move the scene gives a crow's figure: [name, its CSS transform].
WATCH_FLIGHTS = """
window.flights = [];
new MutationObserver(records => {
  for (const r of records) if (r.target.matches && r.target.matches("figure.crow") && r.target.style.transform) {
    window.flights.push([r.target.dataset.name, r.target.style.transform]);
  }
}).observe(document, { subtree: true, attributes: true, attributeFilter: ["style"] });
"""
# Where a crow's first move took it, from the marker of its list: [dx, dy] between their centres.
FLIGHT_GAP = r"""([name, listId]) => {
  const [, transform] = flights.find(([n]) => n === name);
  const [x, y] = transform.match(/-?[\d.]+/g).map(Number);
  const figure = document.querySelector(`figure.crow[data-name="${name}"]`);
  const mark = document.querySelector(`.list-mark[data-list-id="${listId}"]`);
  return [figure.offsetLeft + figure.offsetWidth / 2 + x - (mark.offsetLeft + mark.offsetWidth / 2),
          figure.offsetTop + figure.offsetHeight / 2 + y - (mark.offsetTop + mark.offsetHeight / 2)];
}"""
# The dark pixels a Rive canvas holds (a crow drawn there, not an empty canvas).
DARK_PIXELS = """canvas => {
  const data = canvas.getContext("2d").getImageData(0, 0, canvas.width, canvas.height).data;
  let n = 0;
  for (let i = 0; i < data.length; i += 4) if (data[i + 3] > 200 && Math.max(data[i], data[i + 1], data[i + 2]) < 110) n++;
  return n;
}"""


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def fake_model():
    fake, model = await start_fake_model()
    yield model
    await fake.stop()


@pytest_asyncio.fixture(loop_scope="module")
async def flock(tmp_path, fake_model):
    flock = await Flock(tmp_path / "data", model=fake_model, config=config()).start()
    yield flock
    await flock.stop()


async def test_the_built_in_crows_fly_to_their_list_and_the_answers_stay(browser, flock, tmp_path):
    session = Page(browser, tmp_path)
    async with session as page:
        warnings = []  # the runtime's console warnings (rive.js names the machine each figure plays)
        page.on("console", lambda m: m.type == "warning" and warnings.append(m.text))
        await page.add_init_script(WATCH_FLIGHTS)
        await session.context.grant_permissions(["clipboard-read", "clipboard-write"])
        await page.goto(f"http://127.0.0.1:{flock.port}/")
        await expect(page.locator("#conn")).to_have_class("conn live")
        canvases = page.locator("figure.crow.rive canvas")
        await expect(canvases).to_have_count(10)
        assert await page.locator("#renderer-note").is_hidden()
        drawn = f"[...document.querySelectorAll('figure.crow canvas')].every(c => ({DARK_PIXELS})(c) > 1000)"
        await page.wait_for_function(drawn)  # ten figures drawn, none an empty canvas
        await session.shot("1-built-in-crows")

        list_id = await send_list(page, "research the tides")
        mark = page.locator(f'.list-mark[data-list-id="{list_id}"]')
        await expect(mark).to_contain_text("your list")
        sentry = page.locator('figure.crow[data-name="Sentry"]')
        # The triage: the Sentry flies to the list's marker (where its move ends, whatever the
        # machine's speed), stays a while, and comes back to the perch.
        await page.wait_for_function("flights.some(([name]) => name === 'Sentry')")
        gap = await page.evaluate(FLIGHT_GAP, ["Sentry", list_id])
        assert abs(gap[0]) < 60 and abs(gap[1]) < 160, gap
        await session.shot("2-the-sentry-at-the-list")
        await expect(sentry).not_to_have_class(AWAY, timeout=8000)

        await approve(page, f"{list_id}-1 triage")
        crow = page.locator("figure.crow.away").first
        await expect(crow).to_have_count(1)
        name = await crow.get_attribute("data-name")
        await expect(page.locator(f'figure.crow[data-name="{name}"]')).not_to_have_class(AWAY, timeout=8000)
        answer = page.locator(f'article[data-key="{list_id}-1 output"] .answer')
        await expect(answer).to_contain_text("done:")
        text = (await answer.text_content()).strip()
        await approve(page, f"{list_id}-1 output")

        card = page.locator(f'details.list-card[data-list-id="{list_id}"]')
        await expect(card).to_have_class("list-card finished")
        await expect(card.locator("summary .opens")).to_be_visible()  # marked as one to open
        await expect(card.locator("summary .who")).to_have_text("your list")  # not "me's list"
        await card.locator("summary").click()
        await expect(card.locator("summary .opens")).to_be_hidden()
        kept = card.locator(".kept-answer .answer")
        await expect(kept).to_have_text(text)  # the approved answer, still readable
        await card.locator(".kept-answer button.copy").click()
        await expect(card.locator(".kept-answer .reply")).to_have_text("copied")
        assert (await page.evaluate("navigator.clipboard.readText()")).strip() == text
        # The trust table shows how far each streak is towards the next level.
        streak = page.locator("#ledger td.level-0 progress").first
        await expect(streak).to_have_attribute("max", "3")
        assert int(await streak.get_attribute("value")) >= 1
        await expect(page.locator("#ledger td.level-0").first).to_contain_text("/3")
        # The form's word that the list went is gone by now; the card is what lasts.
        await expect(page.locator("#form-answer")).to_have_text("", timeout=8000)
        await session.shot("3-finished-answer-kept")

        await page.reload()  # the answer survives a reload (the opening view and the store)
        card = page.locator(f'details.list-card[data-list-id="{list_id}"]')
        await card.locator("summary").click()
        await expect(card.locator(".kept-answer .answer")).to_have_text(text)
    assert session.errors == []
    assert [w for w in warnings if re.search("rive|state ?machine", w, re.I)] == [], warnings


async def test_at_390_px_all_ten_crows_sit_in_view_and_a_nest_is_made_and_addressed(browser, flock, tmp_path):
    session = Page(browser, tmp_path, width=390, height=844)
    async with session as page:
        await page.goto(f"http://127.0.0.1:{flock.port}/")
        await expect(page.locator("figure.crow.rive canvas")).to_have_count(10)
        for figure in await page.locator("figure.crow").all():
            box = await figure.bounding_box()
            assert box["x"] >= 0 and box["x"] + box["width"] <= 390, box  # no crow off to the side
        sky = await page.locator("#sky").bounding_box()
        assert sky["y"] + sky["height"] < 844  # the whole scene in the first screen
        await send_list(page, "research boxes")
        await expect(page.locator(".list-mark")).to_have_count(1)
        assert await page.evaluate("document.documentElement.scrollWidth") <= 390
        await session.shot("4-at-390px")

        new = page.locator(".new-nest")
        await new.locator("summary").click()
        await new.locator("input[name=name]").fill("Garden")
        for crow in ("Soot", "Tinker"):
            await new.locator(f'input[name=crows][value="{crow}"]').check()
        await new.locator("button").click()
        nest = page.locator('.nest[data-nest-id="garden"]')
        await expect(nest.locator(".chip")).to_have_text(["Tinker", "Soot"])  # in the roster's order
        await expect(page.locator('#nest-select option[value="garden"]')).to_have_count(1)  # the form offers it
        await new.locator("summary").click()
        await new.locator("input[name=name]").fill("Garden")
        await new.locator('input[name=crows][value="Soot"]').check()
        await new.locator("button").click()
        await expect(new.locator(".reply.error")).to_contain_text("already exists")  # the server's word

        await nest.locator("details.conversation summary").click()
        form = nest.locator("form.post")
        await form.locator("select[name=to]").select_option("Soot")
        await form.locator("input[name=text]").fill("which bed gets the sun?")
        await form.locator("button").click()
        message = nest.locator("li.message").filter(has_text="which bed gets the sun?")
        await expect(message).to_contain_text("→ @Soot")
        await session.shot("5-a-nest-made-and-addressed")
    # The second "Garden" was refused on purpose; chromium logs that 409 itself. Nothing else may complain.
    assert [e for e in session.errors if "409 (Conflict)" not in e] == []


async def test_earlier_lists_are_read_from_the_store(browser, tmp_path):
    flock = await Flock(tmp_path / "data", config=config()).start()  # no model: lists finish at once
    session = Page(browser, tmp_path)
    try:
        first = await flock.new_list("the oldest errand", requester="ada")
        for n in range(20):  # the opening view holds the 20 latest lists
            await flock.new_list(f"errand {n}")
        async with session as page:
            await page.goto(f"http://127.0.0.1:{flock.port}/")
            await expect(page.locator("#lists details.list-card")).to_have_count(20)
            assert await page.locator(f'#lists details[data-list-id="{first}"]').count() == 0
            await page.locator("#earlier > summary").click()
            card = page.locator(f'#earlier-lists details.list-card[data-list-id="{first}"]')
            await expect(card.locator("summary")).to_contain_text("ada’s list")
            await expect(card.locator("summary")).to_contain_text("the oldest errand")
            await card.locator("summary").click()
            await expect(card.locator(".item .text")).to_have_text("the oldest errand")
            await expect(card.locator(".item .skip")).to_contain_text("no model configured")
            await session.shot("6-earlier-lists")
    finally:
        await flock.stop()
    assert session.errors == []
