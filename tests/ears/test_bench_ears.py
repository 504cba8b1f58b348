"""tools/bench-ears runs end to end in this process (its figures are for people to read: only what it
prints is checked, every stage and its last line)."""

import importlib.util
import re

from tests.helpers import ROOT

SPEC = importlib.util.spec_from_file_location("bench_ears", ROOT / "tools" / "bench_ears.py")
bench_ears = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(bench_ears)


async def test_bench_ears_prints_each_stage_and_its_last_line():
    args = bench_ears.parse(["--runs", "1", "--model-ms", "50"])
    lines = bench_ears.report(*await bench_ears.run(args), args)
    assert re.fullmatch(r"ears_overhead_ms_p50=-?\d+ ears_overhead_ms_p95=-?\d+ ears_total_ms_p50=\d+", lines[-1])
    for stage in bench_ears.STAGES:
        assert re.search(rf"^{stage} +-?\d+ +-?\d+$", "\n".join(lines), re.M), lines
    assert re.fullmatch(r"misheard [01] of 1(; '.*')?", lines[1]), lines
