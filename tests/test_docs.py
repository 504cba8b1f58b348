"""The docs: the index names every page, and every command they show is one the command line takes."""

import contextlib
import io
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path


def test_docs_readme_indexes_every_doc():
    # docs/README.md is the index: a page added without an entry there is a page nobody finds.
    docs = Path(__file__).resolve().parents[1] / "docs"
    index = (docs / "README.md").read_text()
    missing = [page.name for page in docs.glob("*.md") if page.name != "README.md" and f"]({page.name})" not in index]
    assert missing == []


# --- every command the docs show, against the real command line ---------------------------------

ROOT = Path(__file__).resolve().parents[1]
COMMAND = re.compile(r"^(?:sudo\s+)?(?:[A-Z_]+=\S+\s+)*(?:\S*/)?(soulstack|tools/flash)((?:\s.*)?)$")
PLACEHOLDERS = ("[", "<", "...", "|", "…")


def doc_commands():
    """(where, argv after `soulstack`) for each command line in README.md and docs/*.md: the lines of sh
    blocks, and inline `soulstack ...` code. Usage lines with [options], <placeholders> or a|b, and a
    command's own error messages quoted in the docs (`soulstack tts: refusing ...`) are not commands."""
    found = []
    for page in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        block, pending = False, ""
        for number, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1):
            if line.strip().startswith("```"):
                block, pending = not block, ""
                continue
            if block:
                text = pending + line.split(" #", 1)[0].strip()
                if text.endswith("\\"):
                    pending = text[:-1] + " "
                    continue
                pending, candidates = "", [text]
            else:
                candidates = re.findall(r"`([^`]*\b(?:soulstack|tools/flash)\b[^`]*)`", line)
            for text in candidates:
                match = COMMAND.match(text.strip().removeprefix("$ "))
                if not match or any(mark in text for mark in PLACEHOLDERS) or match.group(2).startswith(":"):
                    continue
                argv = shlex.split(match.group(2))
                if any(re.fullmatch(r"[A-Z][A-Z_]*", word) for word in argv) or (argv and argv[0].endswith(":")):
                    continue  # a usage form (`soulstack COMMAND --help`, `--port P`) or a quoted error message
                found.append((f"{page.name}:{number}", ["flash", *argv] if match.group(1) == "tools/flash" else argv))
    return found


def mentioned_only(argv: list, error: str) -> bool:
    """A sentence may name a command without what it needs: its required arguments, the value of the option
    it names last (`soulstack flash --over-wifi`), or a secret file only the reader has."""
    return (
        "the following arguments are required" in error
        or ("expected one argument" in error and argv[-1].startswith("--"))
        or bool(re.search(r"argument --[a-z-]+-file: cannot read", error))
    )


def test_every_command_the_docs_show_is_one_the_command_line_takes():
    # Parsed by the real parser: a flag, a subcommand or a choice the docs name that the CLI does not take fails
    # here. A doc may name a command without its required arguments (`soulstack bridge serial` in a sentence).
    from soulstack.cli import build_parser

    commands = doc_commands()
    assert len(commands) > 40
    wrong = []
    for where, argv in commands:
        parser, said = build_parser(), io.StringIO()
        with contextlib.redirect_stderr(said), contextlib.redirect_stdout(io.StringIO()):
            try:
                parser.parse_args(argv)
            except SystemExit as exit:
                if exit.code and not mentioned_only(argv, said.getvalue()):
                    wrong.append(f"{where}: soulstack {shlex.join(argv)}: {said.getvalue().strip()}")
    assert wrong == []


def test_the_doc_commands_that_can_run_here_run(tmp_path):
    # What runs on any machine without a robot, a model or a network: dry runs, starter configs, help.
    runnable = [
        (where, argv)
        for where, argv in doc_commands()
        if {"--dry-run", "--init", "--help", "--version"} & set(argv) and "--over-wifi" not in argv
    ]
    assert runnable
    for index, (where, argv) in enumerate(runnable):
        folder = tmp_path / str(index)
        folder.mkdir()
        done = subprocess.run(
            [sys.executable, "-m", "soulstack.cli", *argv],
            cwd=folder,
            env={k: v for k, v in os.environ.items() if k != "SOUL_CONFIG"},
            capture_output=True,
            text=True,
            timeout=60,
            stdin=subprocess.DEVNULL,
        )
        assert done.returncode == 0, f"{where}: soulstack {shlex.join(argv)}: {done.stderr.strip()}"
