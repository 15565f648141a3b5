"""Every core renderer returns the one terminal-free type, `sparktriage.view.View` (or a single
`Table`), and cli/ draws it through `cli/console.draw` (issue 23).

Renderers are the public functions named `render*` or `summary` of the `render.py` modules
outside `cli/`; their return annotations are read with `ast`, so a renderer that goes back to
returning `str` or `list[str]` fails here before any screen test runs."""

from __future__ import annotations

import ast
from pathlib import Path

import sparktriage
from sparktriage.view import Line, View

ROOT = Path(sparktriage.__file__).parent


def _renderers() -> dict[str, str]:
    found = {}
    for path in sorted(ROOT.glob("*/render.py")):
        if path.parent.name == "cli":
            continue
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if isinstance(node, ast.FunctionDef) and (node.name.startswith("render")
                                                      or node.name == "summary"):
                name = f"{path.parent.name}.render.{node.name}"
                found[name] = ast.unparse(node.returns) if node.returns else "(none)"
    return found


def test_every_core_renderer_returns_a_view():
    renderers = _renderers()
    assert {"probe.render.render", "launch.render.render_launch_plan", "sweep.render.render_lines",
            "stalls.render.render", "reproduce.render.summary", "logs.render.render"} <= set(renderers)
    wrong = {name: returns for name, returns in renderers.items() if returns not in ("View", "Table")}
    assert not wrong, wrong


def test_a_view_of_lines_keeps_each_line_as_given():
    view = View.of_lines(["a", "", "b\tc", "d\ne"])
    assert view.parts == [Line("a"), Line(""), Line("b\tc"), Line("d\ne")]
    assert view.text() == "a\n\nb\tc\nd\ne"
