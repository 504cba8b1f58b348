"""The systemd units in deploy/, made ready for this machine.

The shipped units name /opt/soulstack/bin/soulstack (where docs/deploy.md
installs it); `render` points them at the soulstack actually running, so a
unit works from a venv or pipx install too. Each unit reads its secrets from
/etc/soulstack/NAME.env; `env_template` is what a new one starts with.
"""

import shutil
import sys
from pathlib import Path

from soulstack.deploy import DEPLOY_DIR

SHIPPED_PATH = "/opt/soulstack/bin/soulstack"
NAMES = ("soul", "flock", "bridge", "tts", "stackchan")

# What each service's environment file starts with: which secrets and options belong there.
ENV_HINTS = {
    "soul": "# ANTHROPIC_API_KEY=sk-ant-...\n# OPENAI_API_KEY=...\n# OPENAI_BASE_URL=http://127.0.0.1:11434/v1\n",
    "flock": "# ANTHROPIC_API_KEY=sk-ant-...\n# FLOCK_CONFIG=/etc/soulstack/flock.config.json\n"
             "# SOULSTACK_ARGS=--body http://ROBOT --body-token TOKEN\n",
    "bridge": "# SOULSTACK_ARGS=--token TOKEN --nudge-url http://127.0.0.1:9202/nudge --nudge-token TOKEN\n",
    "tts": "# SOULSTACK_ARGS=--host 0.0.0.0 --token TOKEN\n",
    "stackchan": "# SOULSTACK_ARGS=--upstream ws://XIAOZHI-HOST:8000/xiaozhi/v1/ --device-token TOKEN\n",
}


def unit_name(name: str) -> str:
    return f"soulstack-{name}.service"


def soulstack_executable() -> str | None:
    """The `soulstack` script of the install that is running now, or None if there is none."""
    beside = Path(sys.executable).parent / "soulstack"  # a venv's or pipx's bin folder
    if beside.is_file():
        return str(beside)
    return shutil.which("soulstack")


def render(name: str, executable: str) -> str:
    """The unit for `name` with its commands pointing at `executable`."""
    return (DEPLOY_DIR / unit_name(name)).read_text().replace(SHIPPED_PATH, executable)


def env_template(name: str) -> str:
    return (
        f"# Environment for {unit_name(name)}: secrets and extra options. Keep it readable by root only.\n"
        "# SOULSTACK_ARGS adds options to the command (see `soulstack --help`).\n" + ENV_HINTS[name]
    )
