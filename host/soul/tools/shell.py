"""shell(command): the soul's hands on the machine it lives on, fenced by shell.allow.

Text the soul did not write reaches its model (nudge reasons, MCP results,
flock answers, a body's /look text), and a model does what text asks often
enough. So the tool runs only what the owner listed: `shell.allow` holds
commands as a person types them ("uptime", "df -h", "git status"), and a call
runs only when its words begin with one entry's words. Everything else is
refused and nothing starts. An empty list (the default) refuses all.

By default there is no shell: the command is split with shlex and started
directly, so `;`, `&&`, `|`, `$VAR` and globs are plain characters handed to
the one allowed program. `shell.interpreter: true` runs the line through
/bin/sh instead; the allow-list then checks only the first words, and
`uptime ; anything` passes it, so that is for owners who want exactly that.

It is NOT a sandbox: an allowed command runs with the soul's user and rights,
in shell.cwd (default soulDir), killed with everything it started after
shell.timeoutSeconds, its output cut to shell.maxOutputChars. Every call is
one log line (logger soul.shell) and shows in GET /health.

`shell_exposure_problem` is the start-up rule: with the shell on, every way
into the soul's server must be loopback-only or need a token.
"""

import asyncio
import json
import logging
import os
import shlex
import signal
from collections import deque
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from soulstack.exposure import is_loopback
from soulstack.soul.tools import Outcome, SoulTool

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from soulstack.soul.config import Shell, SoulConfig

# Named for what it logs, not for this module (soul.tools.shell): docs/soul.md names `soul.shell`, the
# logger an operator follows for every command the soul ran or was refused, and its tests read it.
log = logging.getLogger("soulstack.soul.shell")

RECENT = 10  # runs /health shows
SHOWN_CHARS = 200  # of a command, in the log and /health: a whole script pasted by the model is not a log line
# Environment variables a command does not get: the soul's API keys and tokens are no business of `env`.
SECRET_WORDS = ("KEY", "TOKEN", "SECRET", "PASSWORD", "CREDENTIAL")


def cap(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    half = limit // 2
    return f"{text[:half]}\n… [{len(text) - 2 * half} characters cut] …\n{text[-half:]}"


def shell_exposure_problem(cfg: "SoulConfig", host: str) -> str | None:
    """Why the soul must not start with its shell on `host`; None when it may.

    Anyone who can reach /nudge or /v1/chat/completions can put words in front of
    the model, and the model holds the shell. So the shell needs the server on
    loopback, or both doors locked. (MCP servers are called by the soul, not the
    other way round; their answers are untrusted text, which the allow-list fences.)
    """
    if not cfg.shell.enabled or is_loopback(host):
        return None
    nudge_token = cfg.nudge.token
    converse_token = cfg.converse.token or nudge_token
    if nudge_token and converse_token:
        return None
    return (
        f"shell.enabled is true and the soul listens on {host or 'every address'} without nudge.token, so anyone "
        "who can reach it could make it run commands; set nudge.token or listen on 127.0.0.1 (--host)"
    )


def child_env() -> dict:
    return {name: value for name, value in os.environ.items() if not any(word in name.upper() for word in SECRET_WORDS)}


def shown(command: str) -> str:
    """A command as one short line (json quotes it, so a newline in it stays on the line)."""
    text = command if len(command) <= SHOWN_CHARS else command[:SHOWN_CHARS] + "…"
    return json.dumps(text, ensure_ascii=False)


@dataclass
class Run:
    command: str
    at: datetime  # from the soul's clock
    outcome: str  # "exit 0", "refused: ...", "killed after 30 s", "not started: ..."


class Fence:
    """The allow-list, the runs and refusals so far, and the running of one command."""

    def __init__(self, settings: "Shell"):
        self.settings = settings
        self.allow = [tuple(shlex.split(entry)) for entry in settings.allow]  # checked at config load
        self.runs = 0
        self.refusals = 0
        self.recent: deque = deque(maxlen=RECENT)

    def refusal(self, command: str) -> tuple:
        """(words, None, None) for a command that may run, or (None, why in words for the soul, a short outcome)."""
        if not command.strip():
            return None, "the command is empty; nothing ran", "refused: empty"
        try:
            words = shlex.split(command)
        except ValueError as error:
            return None, f"could not read the command ({error}); nothing ran", f"refused: unreadable ({error})"
        if any(tuple(words[: len(prefix)]) == prefix for prefix in self.allow):
            return words, None, None
        allowed = ", ".join(shown(entry) for entry in self.settings.allow) or "none"
        return (
            None,
            (
                f"refused: {shown(command)} is not an allowed command, so nothing ran (allowed: {allowed}). "
                "The owner can add it to shell.allow in the soul's config."
            ),
            "refused: not on shell.allow",
        )

    def note(self, soul, command: str, outcome: str, refused: bool = False) -> None:
        if refused:
            self.refusals += 1
        self.recent.append(Run(command, soul.clock.now(), outcome))
        (log.warning if refused else log.info)("shell %s: %s", shown(command), outcome)

    async def run(self, soul, command: str) -> Outcome:
        words, why, outcome = self.refusal(command)
        if why:
            self.note(soul, command, outcome, refused=True)
            return Outcome.text(why, ok=False)
        self.runs += 1
        settings = self.settings
        try:
            process = await self.start(command, words, Path(settings.cwd or soul.cfg.soul_dir))
        except OSError as error:  # no such program, not executable, no such cwd
            self.note(soul, command, f"not started: {error.strerror or error}")
            return Outcome.text(f"could not start {shown(words[0])}: {error.strerror or error}", ok=False)
        try:
            output, _ = await asyncio.wait_for(process.communicate(), settings.timeout_seconds)
        except TimeoutError:
            try:
                os.killpg(process.pid, signal.SIGKILL)  # the whole group: what it started dies with it
            except ProcessLookupError:
                pass
            await process.wait()
            said = f"killed after {settings.timeout_seconds:g} s without finishing"
            self.note(soul, command, said)
            return Outcome.text(said, ok=False)
        self.note(soul, command, f"exit {process.returncode}")
        text = cap(output.decode("utf-8", errors="replace"), settings.max_output_chars)
        return Outcome.text(f"exit status {process.returncode}\n{text}", ok=process.returncode == 0)

    async def start(self, command: str, words: list, cwd: Path):
        options: dict[str, Any] = dict(
            cwd=cwd,
            env=child_env(),
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
            start_new_session=True,
        )  # its own group, so a timeout kills all of it
        if self.settings.interpreter:
            return await asyncio.create_subprocess_shell(command, **options)
        return await asyncio.create_subprocess_exec(*words, **options)

    def health(self, tz) -> dict:
        return {
            "enabled": True,
            "interpreter": self.settings.interpreter,
            "allow": list(self.settings.allow),
            "runs": self.runs,
            "refusals": self.refusals,
            "recent": [
                {
                    "command": run.command[:SHOWN_CHARS],
                    "at": run.at.astimezone(tz).isoformat(timespec="seconds"),
                    "outcome": run.outcome,
                }
                for run in self.recent
            ],
        }


@dataclass
class ShellTool(SoulTool):
    fence: Fence | None = None  # so /health finds the runs (shell_health)


def describe(settings: "Shell") -> str:
    allowed = ", ".join(f"`{entry}`" for entry in settings.allow)
    if allowed:
        what = (
            f"Run one of the commands the owner allowed on the machine you live on: {allowed} "
            "(each may be followed by more arguments). Anything else is refused."
        )
    else:
        what = "Run a command on the machine you live on. The owner has allowed none yet, so every call is refused."
    how = (
        "It runs through /bin/sh."
        if settings.interpreter
        else "There is no shell: pipes, ;, &&, $VARIABLES and * are passed to the command as plain text."
    )
    return (
        f"{what} {how} Your home folder is the working directory; it is stopped after "
        f"{settings.timeout_seconds:g} s; long output is cut."
    )


def shell_tools(cfg: "SoulConfig") -> list:
    fence = Fence(cfg.shell)
    line = "the command line, run by /bin/sh" if cfg.shell.interpreter else "the command and its arguments"
    return [
        ShellTool(
            "shell",
            describe(cfg.shell),
            {"command": {"type": "string", "description": line}},
            fence.run,
            ["command"],
            fence=fence,
        )
    ]


def shell_health(soul) -> dict:
    """The "shell" part of GET /health."""
    tool = soul.toolbox.builtin.get("shell")
    if not isinstance(tool, ShellTool) or tool.fence is None:
        return {"enabled": False}
    return tool.fence.health(soul.tz)
