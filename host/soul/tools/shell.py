"""shell(command): the soul's hands on the machine it lives on, when shell.enabled is true.

NOT a sandbox: the command runs with the soul's own user and rights, through
/bin/sh, in shell.cwd (default soulDir). Off by default. It is killed (with
everything it started) after shell.timeoutSeconds, and its output is cut to
shell.maxOutputChars, keeping the beginning and the end.
"""

import asyncio
import os
import signal
from pathlib import Path

from soulstack.soul.tools import Outcome, SoulTool


def cap(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    half = limit // 2
    return f"{text[:half]}\n… [{len(text) - 2 * half} characters cut] …\n{text[-half:]}"


async def shell(soul, command: str) -> Outcome:
    settings = soul.cfg["shell"]
    if not command.strip():
        return Outcome.text(soul.T.TEXT["bad_input"].format(problem="command is empty"), ok=False)
    cwd = Path(settings["cwd"] or soul.cfg["soulDir"])
    process = await asyncio.create_subprocess_shell(
        command, cwd=cwd, stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT, start_new_session=True,  # its own group, so a timeout kills all of it
    )
    try:
        output, _ = await asyncio.wait_for(process.communicate(), settings["timeoutSeconds"])
    except asyncio.TimeoutError:
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        await process.wait()
        return Outcome.text(f"killed after {settings['timeoutSeconds']:g} s without finishing", ok=False)
    text = cap(output.decode("utf-8", errors="replace"), settings["maxOutputChars"])
    return Outcome.text(f"exit status {process.returncode}\n{text}", ok=process.returncode == 0)


def shell_tools(cfg: dict) -> list:
    return [SoulTool(
        "shell",
        "Run a shell command on the machine you live on (your home folder is the working directory). "
        f"It is stopped after {cfg['shell']['timeoutSeconds']:g} s; long output is cut.",
        {"command": {"type": "string", "description": "the command line, run by /bin/sh"}}, shell, ["command"],
    )]
