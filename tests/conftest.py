"""Shared test helpers. Keep this small and generic; feature fixtures live with their tests."""

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
# `from tests.fakes import ...` works however pytest is started.
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


@pytest.fixture
def soulstack_cmd():
    """The argv prefix that runs the real `soulstack` command in a subprocess."""
    return [sys.executable, "-m", "soulstack.cli"]
