"""Fixtures for every feature's tests. Keep this small and generic: a feature's fixtures live in its
folder's conftest.py, plain helpers in helpers.py (tests/helpers.py for every feature's)."""

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
# `from tests.fakes import ...` works however pytest is started.
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


@pytest.fixture(scope="session", autouse=True)
def user_cache(tmp_path_factory):
    """The user cache (XDG_CACHE_HOME) of every test and every process it starts: the session's own
    folder, so what soulstack makes there (Moonshine's converted decoder, Whisper base joined) never
    lands in the real home, and each run starts from an empty cache as a new machine does."""
    folder = tmp_path_factory.mktemp("cache")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("XDG_CACHE_HOME", str(folder))
        yield folder


@pytest.fixture
def soulstack_cmd():
    """The argv prefix that runs the real `soulstack` command in a subprocess."""
    return [sys.executable, "-m", "soulstack.cli"]


@pytest.fixture
async def fake_anthropic():
    """A started FakeAnthropic (soulstack.fakes.anthropic_api) for one test."""
    from soulstack.fakes.anthropic_api import FakeAnthropic

    async with FakeAnthropic() as fake:
        yield fake


@pytest.fixture
async def fake_openai():
    """A started FakeOpenAI (soulstack.fakes.openai_api) for one test."""
    from soulstack.fakes.openai_api import FakeOpenAI

    async with FakeOpenAI() as fake:
        yield fake
