"""docs/architecture.md's package map is the package as it is (issue 23, item 6).

The map's second column names every first-level package of `src/sparktriage/` (`cli/`) and
every top-level module (`errors.py`), each exactly once, and nothing that does not exist. Every
path a row names in backticks (`steps.py`, `testbed/lab/`, `store/typed.py`, the repository's
`rules/`) exists: relative to the row's own packages, to `src/sparktriage/`, or to the
repository. Modules inside a package may come and go without touching this test; a row that
names one that is gone fails here."""

from __future__ import annotations

import re
from pathlib import Path

import sparktriage

ROOT = Path(sparktriage.__file__).parent
REPO = ROOT.parents[1]
DOC = REPO / "docs" / "architecture.md"
HEADER = "| stage | package or module | job |"
TICKED = re.compile(r"`([^`]+)`")
PATHLIKE = re.compile(r"^[\w.-]+(/[\w.-]+)*/?$")


def _rows() -> list[tuple[str, str]]:
    """(second column, third column) of every row of the package map table."""
    lines = DOC.read_text(encoding="utf-8").splitlines()
    start = lines.index(HEADER) + 2  # after the header and its |---| line
    rows = []
    for line in lines[start:]:
        if not line.startswith("|"):
            break
        cells = [cell.strip() for cell in line.strip().strip("|").split(" | ")]
        assert len(cells) == 3, line
        rows.append((cells[1], cells[2]))
    return rows


def _named(cell: str) -> list[str]:
    return TICKED.findall(cell)


def _packages() -> set[str]:
    return {f"{p.parent.name}/" for p in ROOT.glob("*/__init__.py")}


def _top_modules() -> set[str]:
    return {p.name for p in ROOT.glob("*.py") if p.name != "__init__.py"}


def test_the_map_names_every_package_and_top_level_module_once_and_nothing_else():
    named = [name for cell, _ in _rows() for name in _named(cell)]
    expected = _packages() | _top_modules()
    problems = {
        "named in more than one row": sorted({n for n in named if named.count(n) > 1}),
        "not in the package map of docs/architecture.md": sorted(expected - set(named)),
        "in the package map but not in src/sparktriage/": sorted(set(named) - expected),
    }
    assert not any(problems.values()), {what: names for what, names in problems.items() if names}


def test_every_path_a_row_names_exists():
    gone = []
    for cell, job in _rows():
        bases = [ROOT / name for name in _named(cell) if name.endswith("/")] or [ROOT]
        for name in _named(job):
            if not PATHLIKE.match(name) or not (name.endswith((".py", "/")) or "/" in name):
                continue  # a command, a function, a field: not a path
            candidates = [base / name for base in bases] + [ROOT / name, REPO / name]
            if not any(path.exists() for path in candidates):
                gone.append(f"{cell}: {name}")
    assert not gone, f"named in the package map but not found: {gone}"


def test_the_checks_see_the_table():
    rows = _rows()
    assert len(rows) >= 20
    assert "cli/" in _packages() and "errors.py" in _top_modules()
    assert any("`measure/`" in cell for cell, _ in rows)
