"""The systemd units in deploy/, made ready for this machine.

The shipped units name /opt/soulstack/bin/soulstack (where docs/deploy.md
installs it); `render` points them at the soulstack actually running, so a
unit works from a venv or pipx install too. Each unit reads its secrets from
/etc/soulstack/NAME.env; `env_template` is what a new one starts with.
"""

import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

from soulstack.deploy import DEPLOY_DIR

SHIPPED_PATH = "/opt/soulstack/bin/soulstack"
SHIPPED_ENV_DIR = "/etc/soulstack"  # where the shipped units read their environment files
# Every unit deploy/ ships (soulstack-NAME.service), the five first in their usual order, then any
# added since (a new service needs only its unit file there to be installable).
_FIRST = ("soul", "flock", "bridge", "tts", "stackchan")
_SHIPPED = sorted(path.name[len("soulstack-") : -len(".service")] for path in DEPLOY_DIR.glob("soulstack-*.service"))
NAMES = tuple([name for name in _FIRST if name in _SHIPPED] + [name for name in _SHIPPED if name not in _FIRST])

# What each service's environment file starts with: which secrets and options belong there.
ENV_HINTS = {
    "soul": "# ANTHROPIC_API_KEY=sk-ant-...\n# OPENAI_API_KEY=...\n# OPENAI_BASE_URL=http://127.0.0.1:11434/v1\n"
    "# NUDGE_TOKEN=...        (the soul's own token, when the config leaves nudge.token null)\n"
    "# BODY_TOKEN=...         (the body's token, when the config leaves body.token null)\n",
    "flock": "# ANTHROPIC_API_KEY=sk-ant-...\n# FLOCK_CONFIG=/etc/soulstack/flock.config.json\n"
    "# FLOCK_TOKEN=...        (locks the flock's API)\n# BODY_TOKEN=...\n"
    "# SOULSTACK_ARGS=--body http://ROBOT\n",
    "bridge": "# BODY_TOKEN=...         (callers of the bridge must send it)\n# NUDGE_TOKEN=...\n"
    "# SOULSTACK_ARGS=--nudge-url http://127.0.0.1:9202/nudge\n",
    "tts": "# TTS_TOKEN=...          (needed to listen beyond loopback)\n# SOULSTACK_ARGS=--host 0.0.0.0\n",
    "ears": "# EARS_TOKEN=...         (the robots' config.json ears_token; needed to listen beyond loopback)\n"
    "# NUDGE_TOKEN=...        (the soul's converse.token or nudge.token)\n# BODY_TOKEN=...\n"
    "# OPENAI_API_KEY=...     (only with --recogniser openai)\n"
    "# SOULSTACK_ARGS=--host 0.0.0.0 --body stackchan=http://ROBOT\n",
    "stackchan": "# DEVICE_AUTH_KEY=...    (xiaozhi-server's server.auth_key: checks the tokens it signs for robots)\n"
    "# DEVICE_TOKEN=...       (or one fixed token, for a robot that sends its own, like py-xiaozhi)\n"
    "# DEVICE_ID=...          (the robot's Device-Id, to pin the body to it)\n"
    "# BODY_TOKEN=...\n# NUDGE_TOKEN=...\n"
    "# SOULSTACK_ARGS=--upstream ws://XIAOZHI-HOST:8000/xiaozhi/v1/\n",
}


SYSTEM_UNITS = Path("/etc/systemd/system")  # where a person's own units go
# systemd's usual search path, for a machine whose systemd-analyze cannot tell us
USUAL_UNIT_PATHS = (
    "/etc/systemd/system",
    "/run/systemd/system",
    "/usr/local/lib/systemd/system",
    "/lib/systemd/system",
)


def unit_paths() -> list[Path]:
    """The folders systemd reads system units from: systemd-analyze's own list (it honours
    $SYSTEMD_UNIT_PATH, systemd's way to change it), else the usual ones."""
    try:
        listed = subprocess.run(["systemd-analyze", "unit-paths"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        listed = None
    lines = listed.stdout.split() if listed is not None and listed.returncode == 0 else []
    if not lines:  # systemd's own rule for the variable: its folders, and the usual ones after a trailing ":"
        named = os.environ.get("SYSTEMD_UNIT_PATH", "")
        lines = [folder for folder in named.split(":") if folder]
        if not named or named.endswith(":"):
            lines += USUAL_UNIT_PATHS
    return [Path(line) for line in lines]


def systemd_reads(unit_dir: Path) -> bool:
    where = unit_dir.resolve()
    return any(where == folder.resolve() for folder in unit_paths())


def where_to_copy(unit_dir: Path, units: list[Path], start: str) -> str:
    """The line for units written where systemd does not read them: nothing was started, and what
    to copy where, then `start` (the systemctl line)."""
    them = "them" if len(units) > 1 else "it"
    return (
        f"systemd does not read units from {unit_dir}, so nothing was started; copy {them} where it does "
        f"and start {them}: cp {' '.join(shlex.quote(str(unit)) for unit in units)} {SYSTEM_UNITS}/ && {start}"
    )


def unit_name(name: str) -> str:
    return f"soulstack-{name}.service"


def soulstack_executable() -> str | None:
    """The `soulstack` script of the install that is running now, or None if there is none."""
    beside = Path(sys.executable).parent / "soulstack"  # a venv's or pipx's bin folder
    if beside.is_file():
        return str(beside)
    return shutil.which("soulstack")


def unit_path_problem(path: str) -> str | None:
    """Why `path` cannot be written into a unit's lines as it is, or None. systemd splits ExecStart=,
    ReadWritePaths= and the like at whitespace and reads %, quotes and backslashes as its own: a
    folder named "my robot" would become two arguments, one of them missing."""
    for char in path:
        if char.isspace() or char in "%\\'\"" or not char.isprintable():
            return f"holds {'a space' if char == ' ' else repr(char)}, which systemd's unit lines cannot carry as it is"
    return None


def render(name: str, executable: str, env_dir: str = SHIPPED_ENV_DIR) -> str:
    """The unit for `name` with its commands pointing at `executable` and its environment file in `env_dir`."""
    text = (DEPLOY_DIR / unit_name(name)).read_text().replace(SHIPPED_PATH, executable)
    return text.replace(f"EnvironmentFile=-{SHIPPED_ENV_DIR}/", f"EnvironmentFile=-{env_dir.rstrip('/') or '/'}/")


def checkout_of(executable: str) -> Path | None:
    """The source checkout whose .venv holds `executable` (CHECKOUT/.venv/bin/soulstack), else None.

    A unit pointed there stops working when the checkout moves, is deleted or its .venv is rebuilt."""
    path = Path(executable)
    root = path.parent.parent.parent
    if path.parent.parent.name == ".venv" and (root / "pyproject.toml").is_file() and (root / "host").is_dir():
        return root
    return None


def env_template(name: str) -> str:
    return (
        f"# Environment for {unit_name(name)}: secrets and extra options. Keep it readable by root only.\n"
        "# Tokens go in their own variables below, never in SOULSTACK_ARGS: options are visible to\n"
        "# every account in the process list. SOULSTACK_ARGS adds options (see `soulstack --help`).\n"
        + ENV_HINTS.get(name, "")
    )
