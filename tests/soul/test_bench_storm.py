"""tools/bench-storm, small and in this process: its storms coalesce and its last line counts every distinct reason."""

import importlib.util
import re

from tests.helpers import ROOT


def load_bench():
    spec = importlib.util.spec_from_file_location("bench_storm", ROOT / "tools" / "bench_storm.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


async def test_a_small_storm_wakes_the_soul_at_most_twice_and_every_reason_is_seen(capsys):
    bench = load_bench()
    assert await bench.main(bench.parse_args(["--nudges", "40", "--seconds", "0.5", "--interval", "2"])) == 0
    lines = capsys.readouterr().out.splitlines()
    rows, last = lines[:-1], lines[-1]
    assert len(rows) == 2 and all("202s    40" in row for row in rows)
    figures = dict(re.findall(r"(\w+)=(\S+)", last))
    assert 1 <= int(figures["wakings_identical"]) <= 2 and 1 <= int(figures["wakings_distinct"]) <= 2
    assert figures["reasons_seen"] == "41/41"
