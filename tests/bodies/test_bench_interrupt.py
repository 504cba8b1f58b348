"""tools/bench-interrupt's adapter half runs and measures real interruptions (the figures are the bench's to
print, not this test's to judge: no timing is asserted beyond "within a second")."""

import importlib.util
import random
import shutil

import pytest

from tests.helpers import ROOT

_spec = importlib.util.spec_from_file_location("bench_interrupt", ROOT / "tools" / "bench_interrupt.py")
bench = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(bench)

pytestmark = [
    pytest.mark.timeout(60),
    pytest.mark.skipif(not shutil.which("espeak-ng"), reason="espeak-ng is not installed (tools/test installs it)"),
]


async def test_the_adapter_half_measures_each_interruption():
    last_frames, stops = await bench.adapter_ms(3, random.Random(1))
    assert len(last_frames) == len(stops) == 3
    assert all(0 <= ms < 1000 for ms in last_frames + stops)
    assert bench.percentile([3.0, 1.0, 2.0], 0.95) == 3.0
