"""Every repository path that the code and the docs name exists, and every relative link in the docs
leads somewhere: a comment that points at a moved or deleted file sends its reader nowhere.

Scanned: the tracked (and new, unignored) .py, .md, .js, .toml and .service files, and every
script in tools/. A path is a word that starts with one of the repository's folders (host/,
adapters/, firmware/, deploy/, docs/, tests/, tools/) and must exist from the repository's root;
`host/<module>.<name>` passes when host/<module>.py holds <name>. Not paths: MCP's method names (the `tools/...` family),
the pages of other projects quoted by their own paths (EXTERNAL), and patterns — a word holding a
glob or a placeholder (`*`, `{`, `<`, `$`). The docs' markdown links (docs/*.md, README.md) are
checked too, relative to their page, with the section a `#...` names.
"""

import os
import re
import subprocess
from pathlib import Path

ROOT = next(folder for folder in Path(__file__).resolve().parents if (folder / "pyproject.toml").is_file())
FOLDERS = ("host", "adapters", "firmware", "deploy", "docs", "tests", "tools")
SUFFIXES = (".py", ".md", ".js", ".toml", ".service")
IGNORED = {
    ".git",
    ".venv",
    "node_modules",
    "build",
    "dist",
    "__pycache__",
    ".pytest_cache",
    ".hypothesis",
    ".crows",
    ".demo",
}

# MCP's JSON-RPC methods, not our tools/ folder.
PROTOCOL_WORDS = {"tools/list", "tools/call"}
# Other projects' files, named by the paths they have there.
EXTERNAL = {
    "docs/en/": "UIFlow2's documentation (m5stack/uiflow-micropython), which the simulator's doubles follow",
    "adapters/terminal/body.mjs": "stackchan-soul's reference terminal body",
}

WORD = re.compile(r"(?<![\w./~@-])((?:" + "|".join(FOLDERS) + r")/[\w./\-*{}<>$]*)")
PATTERN_MARKS = set("*{<$")
LINK = re.compile(r"\]\(([^)\s]+)\)")
FENCE = re.compile(r"^(```|~~~).*?^\1", re.S | re.M)


def scanned_files() -> list:
    """The repository's files as a fresh clone has them, plus new ones not yet committed."""
    try:
        listed = subprocess.run(
            ["git", "ls-files", "--cached", "--others", "--exclude-standard"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.splitlines()
    except (OSError, subprocess.CalledProcessError):  # not a git checkout: walk it
        listed = []
        for folder, subfolders, files in os.walk(ROOT):
            subfolders[:] = [name for name in subfolders if name not in IGNORED and not name.endswith(".egg-info")]
            listed += [str((Path(folder) / name).relative_to(ROOT)) for name in files]
    return sorted(
        name
        for name in set(listed)
        if (ROOT / name).is_file() and (name.endswith(SUFFIXES) or name.startswith("tools/") or name.startswith(".ci/"))
    )


def exists(word: str) -> bool:
    if (ROOT / word).exists():
        return True
    head, _, attribute = word.rpartition("/")[2].partition(".")
    module = ROOT / word.rpartition("/")[0] / f"{head}.py"
    return bool(attribute) and module.is_file()  # host/soul/loop.Soul: a name inside host/soul/loop.py


def named_paths(text: str) -> list:
    """(line number, path) for each repository path `text` names."""
    found = []
    for number, line in enumerate(text.splitlines(), 1):
        for match in WORD.finditer(line):
            word = match.group(1)
            if PATTERN_MARKS & set(word):
                continue
            word = word.rstrip(".")  # the end of a sentence
            if word in PROTOCOL_WORDS or any(word.startswith(external) for external in EXTERNAL):
                continue
            found.append((number, word))
    return found


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lowercase, punctuation dropped, spaces to hyphens."""
    heading = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading.strip())
    return re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-")


def anchors(page: Path) -> set:
    seen, found = {}, set()
    for line in FENCE.sub("", page.read_text()).splitlines():
        if match := re.match(r"#{1,6} +(.+?) *#* *$", line):
            base = slug(match.group(1))
            count = seen.get(base, 0)
            seen[base] = count + 1
            found.add(base if count == 0 else f"{base}-{count}")
    return found


def broken_links(page: Path) -> list:
    broken = []
    text = FENCE.sub(lambda fence: "\n" * fence.group(0).count("\n"), page.read_text())
    for number, line in enumerate(text.splitlines(), 1):
        for target in LINK.findall(line):
            if re.match(r"[a-z][a-z0-9+.-]*:", target):  # https:, mailto:
                continue
            where, _, section = target.partition("#")
            goal = (page.parent / where).resolve() if where else page
            if not goal.exists():
                broken.append(f"{page.relative_to(ROOT)}:{number}: {target} (no such file)")
            elif section and goal.suffix == ".md" and section not in anchors(goal):
                broken.append(f"{page.relative_to(ROOT)}:{number}: {target} (no such section)")
    return broken


def test_every_path_named_in_code_and_docs_exists():
    missing = [
        f"{name}:{number}: {word}"
        for name in scanned_files()
        for number, word in named_paths((ROOT / name).read_text(errors="replace"))
        if not exists(word)
    ]
    assert missing == [], "paths named that do not exist:\n" + "\n".join(missing)


def test_every_relative_link_in_the_docs_leads_somewhere():
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    broken = [line for page in pages for line in broken_links(page)]
    assert broken == [], "links that lead nowhere:\n" + "\n".join(broken)


def test_the_scanner_sees_what_it_should():
    # A path named in a comment, in a sentence, as a module's name; the words it must leave alone.
    assert named_paths("see host/soul/loop.py, and host/soul/loop.Soul.") == [
        (1, "host/soul/loop.py"),
        (1, "host/soul/loop.Soul"),
    ]
    assert exists("host/soul/loop.Soul") and not exists("host/soul/" + "nowhere.py")
    quiet = (
        "MCP's tools/list; tools/bench-*; host/soul/prompts/<code>.py; docs/en/advanced/dl.rst; x/host/y; $ROOT/tools"
    )
    assert named_paths(quiet) == []
    assert slug("POST /status — does it feel its body?") == "post-status--does-it-feel-its-body"
    assert slug("Its life on disk (`soulDir`)") == "its-life-on-disk-souldir"


def test_the_map_shows_every_floor_of_the_layers_contract():
    """docs/architecture.md's floors are pyproject's layers: each module a layer names is on the map, by its
    path (so the path test above checks it exists)."""
    import tomllib

    contracts = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]
    layers = next(c["layers"] for c in contracts if c["type"] == "layers" and "containers" not in c)
    on_map = {word.rstrip("/") for _, word in named_paths((ROOT / "docs" / "architecture.md").read_text())}
    places = {"adapters": "adapters", "firmware": "firmware", "deploy": "deploy"}
    missing = []
    for layer in layers:
        for module in layer.replace(":", "|").split("|"):
            name = module.strip().removeprefix("soulstack.")
            path = places.get(name) or (
                f"host/{name}.py" if (ROOT / "host" / f"{name}.py").exists() else f"host/{name}"
            )
            if path not in on_map:
                missing.append(path)
    assert missing == [], f"floors of pyproject's layers missing from docs/architecture.md: {missing}"
