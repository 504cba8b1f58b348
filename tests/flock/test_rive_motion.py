"""The Rive crows and reduced motion (CSS `prefers-reduced-motion`): asked for, the canvases hold a
still pose (nothing changes over time), a state change still shows its new pose (the Sentry aloft
while its triage hangs) without animating there, and a change of the preference while the page is
open is followed both ways; not asked for, the crows breathe, blink and flap.

The real page with the built-in crows in chromium (one browser for the module, tests/flock/conftest.py),
the preference set with playwright's emulate_media, the pixels read from each canvas."""

import re

import pytest
import pytest_asyncio
from playwright.async_api import expect

from tests.flock.helpers import Brain, Flock, Page, config, start_fake_model

pytestmark = pytest.mark.asyncio(loop_scope="module")

# Each crow's canvas as one number (an FNV-1a hash of its pixels): equal numbers, an unchanged drawing.
SIGNS = """() => Object.fromEntries([...document.querySelectorAll("figure.crow.rive")].map(figure => {
  const canvas = figure.querySelector("canvas");
  const data = canvas.getContext("2d").getImageData(0, 0, canvas.width, canvas.height).data;
  let hash = 2166136261;
  for (let i = 0; i < data.length; i++) hash = Math.imul(hash ^ data[i], 16777619);
  return [figure.dataset.name, hash >>> 0];
}))"""
# Every canvas holds a crow (dark pixels), not an empty canvas.
DRAWN = """() => [...document.querySelectorAll("figure.crow.rive canvas")].length === 10 &&
  [...document.querySelectorAll("figure.crow.rive canvas")].every(canvas => {
    const data = canvas.getContext("2d").getImageData(0, 0, canvas.width, canvas.height).data;
    let dark = 0;
    for (let i = 0; i < data.length; i += 4) if (data[i + 3] > 200 && Math.max(data[i], data[i + 1], data[i + 2]) < 110) dark++;
    return dark > 1000;
  })"""
APART_MS = 700  # longer than a blink and many frames at 60 fps: a live crow changes in that time
SETTLE_S = 15  # the page settles a still pose 2.6 s after the last state change; the machine is slow


@pytest_asyncio.fixture(loop_scope="module")
async def hanging():
    """A flock whose triage hangs (the brain's "hang"): a list keeps the Sentry in the air."""
    brain = Brain()
    fake, model = await start_fake_model(brain)
    yield brain, model
    brain.hang.set()
    await fake.stop()


async def open_page(page, flock):
    await page.goto(f"http://127.0.0.1:{flock.port}/")
    await expect(page.locator("#conn")).to_have_class("conn live")
    await page.wait_for_function(DRAWN)


async def still(page, count=10):
    await expect(page.locator('figure.crow.rive[data-motion="still"]')).to_have_count(count, timeout=SETTLE_S * 1000)


async def unchanged(page):
    """The signs of every canvas, read twice APART_MS apart, equal."""
    before = await page.evaluate(SIGNS)
    await page.wait_for_timeout(APART_MS)
    after = await page.evaluate(SIGNS)
    assert after == before, [name for name in before if before[name] != after[name]]
    return after


async def test_reduced_motion_holds_the_crows_still_and_follows_the_preference(browser, hanging, tmp_path):
    brain, model = hanging
    flock = await Flock(tmp_path / "data", model=model, config=config()).start()
    session = Page(browser, tmp_path)
    try:
        async with session as page:
            await page.emulate_media(reduced_motion="reduce")
            await open_page(page, flock)
            await still(page)
            perched = await unchanged(page)
            await session.shot("1-reduced-motion-still")

            # A state change: the Sentry takes off for a triage that hangs. Its pose changes (aloft)
            # and then holds, as every other crow's does.
            await flock.new_list("hang on to this errand")
            sentry = page.locator('figure.crow[data-name="Sentry"]')
            await expect(sentry).to_have_class(re.compile(r"\bflying\b"))
            await still(page)
            aloft = await unchanged(page)
            assert aloft["Sentry"] != perched["Sentry"]
            await session.shot("2-reduced-motion-the-sentry-aloft")

            # The person turns reduced motion off with the page open: the crows move again (the
            # Sentry flaps); turned back on, they hold still again.
            await page.emulate_media(reduced_motion="no-preference")
            await expect(page.locator('figure.crow.rive[data-motion="live"]')).to_have_count(10)
            before = await page.evaluate(SIGNS)
            await page.wait_for_timeout(APART_MS)
            assert (await page.evaluate(SIGNS))["Sentry"] != before["Sentry"]
            await page.emulate_media(reduced_motion="reduce")
            await still(page)
            await unchanged(page)
    finally:
        brain.hang.set()
        await flock.stop()
    assert session.errors == []


async def test_without_reduced_motion_the_crows_animate(browser, tmp_path):
    flock = await Flock(tmp_path / "data", config=config()).start()  # no model: nothing flies
    session = Page(browser, tmp_path)
    try:
        async with session as page:
            await page.emulate_media(reduced_motion="no-preference")
            await open_page(page, flock)
            await expect(page.locator('figure.crow.rive[data-motion="live"]')).to_have_count(10)
            before = await page.evaluate(SIGNS)
            await page.wait_for_timeout(APART_MS)
            after = await page.evaluate(SIGNS)
            assert [name for name in before if before[name] == after[name]] == []  # each one breathes
    finally:
        await flock.stop()
    assert session.errors == []
