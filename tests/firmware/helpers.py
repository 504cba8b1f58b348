"""Plain helpers for the firmware's tests: where firmware/ and these MicroPython scripts live, and
`micropython`, which runs a script under real MicroPython (the unix port beside this Python) with
both on MICROPYPATH."""

import os
import subprocess
import sys
from pathlib import Path

from tests.helpers import ROOT

FIRMWARE = ROOT / "firmware"
TESTS = ROOT / "tests" / "firmware"
MICROPYTHON = Path(sys.executable).parent / "micropython"


def micropython(script, *args, heap="256K"):
    env = dict(os.environ, MICROPYPATH=os.pathsep.join([".frozen", str(FIRMWARE), str(TESTS)]))
    return subprocess.run(
        [str(MICROPYTHON), "-X", f"heapsize={heap}", str(script), *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
