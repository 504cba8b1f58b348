"""A soul's process holds only what it uses: the model provider in use is the only SDK it loads.

Each SDK is tens of MB resident once imported (docs/metabolism.md, "The archive": the anthropic SDK
~46 MB, the openai one ~20 MB), so a soul must never load the other. Checked in fresh processes
(this test process has both loaded), through the soul's own config and build_soul's make_model.
"""

import json
import os
import subprocess
import sys

from tests.helpers import ROOT

CHILD = """
import json, sys
from soulstack.soul import config
from soulstack.soul.run import make_model
provider = sys.argv[1]
raw = {"soulDir": sys.argv[2], "model": {"provider": provider, "id": "some-model"}}
cfg, _ = config.from_dict(raw)
env = {"ANTHROPIC_API_KEY": "k", "OPENAI_BASE_URL": "http://127.0.0.1:9/v1", "OPENAI_API_KEY": "k"}
model = make_model(cfg, env=env)
print(json.dumps({"model": type(model).__name__, "loaded": sorted(m for m in ("anthropic", "openai") if m in sys.modules)}))
"""


def loaded(provider: str, folder) -> dict:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    child = subprocess.run(
        [sys.executable, "-c", CHILD, provider, str(folder)], capture_output=True, text=True, env=env, timeout=60
    )
    assert child.returncode == 0, child.stderr[-2000:]
    return json.loads(child.stdout.strip().splitlines()[-1])


def test_a_soul_on_anthropic_never_loads_the_openai_sdk_and_the_other_way_round(tmp_path):
    assert loaded("anthropic", tmp_path) == {"model": "AnthropicModel", "loaded": ["anthropic"]}
    assert loaded("openai", tmp_path) == {"model": "OpenAIModel", "loaded": ["openai"]}
