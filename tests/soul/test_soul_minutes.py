"""Minutes in the soul's words and log are written as people write them."""

import pytest

from soulstack.soul.snapshot import fmt_minutes


@pytest.mark.parametrize(
    "value, shown",
    [(59.9072, "60"), (60, "60"), (12.4, "12"), (7, "7"), (2.5, "2.5"), (2.96, "3"), (0.25, "0.2"), (0.04, "0")],
)
def test_minutes_read_naturally(value, shown):
    assert fmt_minutes(value) == shown
