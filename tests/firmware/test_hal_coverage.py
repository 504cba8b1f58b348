"""host/sim/coverage.py: marked source runs under real MicroPython and reports exactly the statements reached.

Also the generic HAL's refusals, which only a direct call reaches (tools/bench-hal-coverage runs this file too).
"""

import os
import subprocess
import textwrap

from soulstack.firmware import FIRMWARE_DIR
from soulstack.sim import coverage
from soulstack.sim.runner import DOUBLES
from soulstack.sim.staging import find_tool
from tests.helpers import ROOT

SOURCE = textwrap.dedent('''\
    """A docstring is not a statement."""
    import sys


    class Thing:
        kind = "thing"

        def pick(self, flag):
            if flag:
                return "yes"
            elif flag is None:
                return "none"
            try:
                raise ValueError("no")
            except ValueError:
                pass
            return "no"


    Thing().pick(True)
    Thing().pick(False)
''')


def test_marked_source_reports_the_statements_that_ran(tmp_path):
    (tmp_path / "sample.py").write_text(coverage.instrument(SOURCE, "sample.py"))
    (tmp_path / "_linehits.py").write_text(coverage.LINEHITS)
    hits = tmp_path / "hits"
    env = dict(os.environ, MICROPYPATH=f".frozen:{tmp_path}", **{coverage.ENV: str(hits)})
    result = subprocess.run([find_tool("micropython"), "-c", "import sample"], env=env, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    ran = {int(line.split(":")[1]) for line in hits.read_text().split()}
    statements = coverage.statements(SOURCE, "sample.py")
    assert 1 not in statements  # the docstring
    assert statements - ran == {12}  # only `return "none"` never ran
    assert ran <= statements


def test_the_generic_hal_refuses_what_it_lacks(tmp_path):
    """Its camera and speaker calls raise, never hand back a fake frame or swallow audio (under MicroPython)."""
    firmware = FIRMWARE_DIR
    if os.environ.get(coverage.ENV):  # tools/bench-hal-coverage counts these statements too
        firmware = coverage.stage(tmp_path / "firmware")
    env = dict(
        os.environ,
        MICROPYPATH=os.pathsep.join([".frozen", str(firmware), str(DOUBLES)]),
        SOULSTACK_DOUBLES=str(tmp_path),
    )
    result = subprocess.run(
        [find_tool("micropython"), str(ROOT / "tests/firmware/generic_hal.py")],
        env=env,
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert result.returncode == 0 and result.stdout.strip() == "ok", result.stdout + result.stderr
