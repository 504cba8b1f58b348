"""Which statements of firmware/hal run under MicroPython, measured without sys.settrace.

The unix port's standard build has no `sys.settrace` (checked: MicroPython
1.29 `standard` variant), so the simulator measures by marking: every
statement of the measured HAL files gets a call `_hit(file, line)` placed
just before it (found with CPython's `ast`, written back with
`ast.unparse`); the firmware runs from a copy holding the marked files, and `_linehits`
appends `file:line` to the file named by $SOULSTACK_HAL_COVERAGE the first
time each statement is reached. The figure is statement coverage in
coverage.py's sense: of the statements (docstrings aside), how many ran.
`tools/bench-hal-coverage` runs the HAL tests this way and prints it.
"""

import ast
import shutil
from pathlib import Path

from soulstack.firmware import FIRMWARE_DIR

ENV = "SOULSTACK_HAL_COVERAGE"
MEASURED = ("uiflow.py", "esp32.py", "generic.py")
LINEHITS = """import os
_out = open(os.getenv("SOULSTACK_HAL_COVERAGE"), "a")
_seen = set()


def hit(name, line):
    key = name + ":" + str(line)
    if key not in _seen:
        _seen.add(key)
        _out.write(key + "\\n")
        _out.flush()
"""


def _is_docstring(statement):
    return (
        isinstance(statement, ast.Expr)
        and isinstance(statement.value, ast.Constant)
        and isinstance(statement.value.value, str)
    )


class _Marker(ast.NodeTransformer):
    """Puts `_hit(name, line)` before each statement of every statement list; collects the lines."""

    def __init__(self, name):
        self.name = name
        self.lines = set()

    def generic_visit(self, node):
        super().generic_visit(node)
        for field in ("body", "orelse", "finalbody"):
            statements = getattr(node, field, None)
            if isinstance(statements, list) and statements and isinstance(statements[0], ast.stmt):
                setattr(node, field, self._mark(statements))
        return node

    def _mark(self, statements):
        marked = []
        for statement in statements:
            if not _is_docstring(statement):
                self.lines.add(statement.lineno)
                call = ast.Call(
                    ast.Name("_hit", ast.Load()), [ast.Constant(self.name), ast.Constant(statement.lineno)], []
                )
                marked.append(ast.Expr(call))
            marked.append(statement)
        return marked


def statements(source: str, name: str) -> set[int]:
    """The line numbers of the statements in `source` (what coverage counts)."""
    marker = _Marker(name)
    marker.visit(ast.parse(source))
    return marker.lines


def instrument(source: str, name: str) -> str:
    """`source` with a `_hit` marker before each statement, importing `_hit` from `_linehits`."""
    tree = _Marker(name).visit(ast.parse(source))
    tree.body.insert(0, ast.ImportFrom("_linehits", [ast.alias("hit", "_hit")], 0))
    return ast.unparse(ast.fix_missing_locations(tree)) + "\n"


def stage(folder: Path) -> Path:
    """A copy of firmware/ whose measured HAL files are marked, plus `_linehits.py`; run the firmware from it.

    A whole copy, because MicroPython looks in the running script's own folder first: a marked `hal`
    elsewhere on MICROPYPATH would never be imported.
    """
    shutil.copytree(FIRMWARE_DIR, folder, ignore=shutil.ignore_patterns("__pycache__", "config.json"))
    for name in MEASURED:
        path = folder / "hal" / name
        path.write_text(instrument(path.read_text(), name))
    (folder / "_linehits.py").write_text(LINEHITS)
    return folder


def report(hits_path: Path) -> dict[str, tuple[int, int, list[int]]]:
    """{file: (statements run, statements, lines never run)} for each measured HAL file."""
    hits = set(Path(hits_path).read_text().split()) if Path(hits_path).exists() else set()
    out = {}
    for name in MEASURED:
        lines = statements((FIRMWARE_DIR / "hal" / name).read_text(), name)
        missed = sorted(line for line in lines if f"{name}:{line}" not in hits)
        out[name] = (len(lines) - len(missed), len(lines), missed)
    return out
