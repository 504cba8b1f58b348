"""The flock tests' shared fixtures: a Brain and the fake model it plays (the flow and banter tests),
a model-less flock (`brainstem`), and one chromium for a page-test module (`browser`)."""

import os

import pytest
import pytest_asyncio
from playwright.async_api import async_playwright

from soulstack.flock.lists.flow import FlockConfig
from tests.flock.helpers import ARGS, CHROMIUM, Brain, Flock, start_fake_model


# The fixtures of the flow and banter tests: a Brain and the fake model it plays.
@pytest.fixture
async def brain():
    return Brain()


@pytest.fixture
async def fake_model(brain):
    fake, model = await start_fake_model(brain)
    yield fake, model
    brain.banter_release.set()  # a banter line held in flight ends before the fake stops
    await fake.stop()


@pytest.fixture
async def brainstem(tmp_path):
    flock = await Flock(tmp_path, model=None, config=FlockConfig(heartbeat_s=0.05, lists_per_minute=1000)).start()
    yield flock
    await flock.stop()


# One chromium for a whole module (starting it is most of a page test's time); each test has its own context.
@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def browser():
    assert os.path.exists(CHROMIUM), "chromium is missing: tools/test installs it (apt-get install chromium)"
    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        yield browser
        await browser.close()
