"""The import graph of `src/sparktriage`: no cycles between modules or between packages.

Every `import` and `from ... import` statement of every module is read with `ast` (imports
inside functions count too: a lazy import is still a dependency), resolved to a module of the
package, and the graph is searched for cycles. Packages are the first-level folders
(`sparktriage.bench`, `sparktriage.logs`, ...); top-level modules count as their own package.
"""

from __future__ import annotations

import ast
from pathlib import Path

import sparktriage

ROOT = Path(sparktriage.__file__).parent


def _modules() -> dict[str, Path]:
    found = {}
    for path in ROOT.rglob("*.py"):
        parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join(parts)] = path
    return found


def _imports(name: str, path: Path, known: dict[str, Path]) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    targets: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            candidates = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            candidates = [f"{module}.{alias.name}" for alias in node.names] + [module]
        else:
            continue
        for candidate in candidates:
            # the longest known module that the dotted name names (a module, not a symbol in it)
            while candidate and candidate not in known:
                candidate = candidate.rpartition(".")[0]
            if candidate and candidate != name and candidate.startswith("sparktriage"):
                targets.add(candidate)
    return targets


def _graph() -> dict[str, set[str]]:
    known = _modules()
    return {name: _imports(name, path, known) for name, path in known.items()}


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle of the graph as a path, or None (iterative depth-first search)."""
    state: dict[str, int] = {}
    for start in sorted(graph):
        if state.get(start):
            continue
        stack = [(start, iter(sorted(graph[start])))]
        path = [start]
        state[start] = 1
        while stack:
            node, children = stack[-1]
            child = next(children, None)
            if child is None:
                state[node] = 2
                stack.pop()
                path.pop()
                continue
            if state.get(child) == 1:
                return path[path.index(child):] + [child]
            if not state.get(child):
                state[child] = 1
                path.append(child)
                stack.append((child, iter(sorted(graph.get(child, ())))))
    return None


def _package(module: str) -> str:
    parts = module.split(".")
    return ".".join(parts[:2])


def _is_package_init(module: str) -> bool:
    return (ROOT.parent / module.replace(".", "/") / "__init__.py").exists()


def test_the_graph_sees_the_package():
    graph = _graph()
    assert "sparktriage.cli.app" in graph and "sparktriage.logs.parser" in graph
    assert "sparktriage.logs.events" in graph["sparktriage.logs.parser"]


def test_no_cycle_between_modules():
    graph = _graph()
    # a package's __init__ re-exporting its own modules is not a cycle through them
    for name in graph:
        if _is_package_init(name):
            graph[name] = {t for t in graph[name] if not t.startswith(name + ".")}
    assert _cycle(graph) is None, " -> ".join(_cycle(graph) or [])


def test_no_cycle_between_packages():
    graph: dict[str, set[str]] = {}
    for module, targets in _graph().items():
        source = _package(module)
        graph.setdefault(source, set()).update(
            _package(t) for t in targets if _package(t) != source)
    assert _cycle(graph) is None, " -> ".join(_cycle(graph) or [])


def test_cycle_finder_finds_a_cycle():
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": set()}) is None
