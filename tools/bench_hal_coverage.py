#!/usr/bin/env python3
"""Print how many statements of firmware/hal the HAL tests execute under real MicroPython.

Runs tests/firmware/test_sim_hals.py, tests/firmware/test_uiflow_mic.py and
tests/firmware/test_hal_coverage.py (and tests/firmware/test_sim.py with --all) with SOULSTACK_HAL_COVERAGE set, so every
firmware they start runs marked copies of hal/uiflow.py, hal/esp32.py and
hal/generic.py (host/sim/coverage.py says how), then prints, per file, the
statements run, the total, and the line numbers never reached.
"""

import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from soulstack.sim import coverage  # noqa: E402


def main():
    tests = [
        "tests/firmware/test_sim_hals.py",
        "tests/firmware/test_uiflow_mic.py",
        "tests/firmware/test_hal_coverage.py",
    ]
    tests += ["tests/firmware/test_sim.py"] if "--all" in sys.argv[1:] else []
    with tempfile.TemporaryDirectory() as folder:
        hits = Path(folder) / "hits"
        env = dict(os.environ, **{coverage.ENV: str(hits)})
        run = subprocess.run(
            [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", *tests],
            cwd=ROOT,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        print(run.stdout.strip().splitlines()[-1])
        total_run = total = 0
        for name, (ran, statements, missed) in coverage.report(hits).items():
            total_run, total = total_run + ran, total + statements
            print(
                f"firmware/hal/{name:11} {ran:4} of {statements:4} statements ({100 * ran / statements:.0f}%)"
                + (f"  never run: lines {', '.join(map(str, missed))}" if missed else "")
            )
        print(f"all three        {total_run:4} of {total:4} statements ({100 * total_run / total:.0f}%)")
    return run.returncode


if __name__ == "__main__":
    sys.exit(main())
