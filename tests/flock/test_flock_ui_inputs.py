"""Runs the node tests of the page's event -> state-machine input mapping (tests/web/*.test.js,
node's own test runner) as part of the suite, so CI runs them with everything else."""

import shutil
import subprocess

from tests.helpers import ROOT


def test_the_event_to_input_mapping_passes_its_node_tests():
    node = shutil.which("node")
    assert node, "node is missing: tools/test installs it (apt nodejs)"
    run = subprocess.run([node, "--test", "tests/web/"], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]
    assert "# fail 0" in run.stdout and "# pass 0" not in run.stdout
