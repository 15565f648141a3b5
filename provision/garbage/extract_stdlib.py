"""Extract the English prose and Python code the tiny MoE model is trained on (run once).

Usage: python extract_stdlib.py [OUT_DIR]  (default: provision/garbage/data)

Reads the docstrings and small function bodies of the Python standard library of the
interpreter running it (files sorted by name, ASCII only) and writes them, gzip-compressed,
to `stdlib-docs.txt.gz` (one paragraph block per docstring, separated by blank lines) and
`stdlib-code.txt.gz` (one function per block). The outputs are committed, so training
(train.py) is reproducible without re-running this script. The Python standard library is
distributed under the PSF License, which permits redistribution of these excerpts.
"""

from __future__ import annotations

import ast
import glob
import gzip
import os
import re
import sys
import sysconfig

SEP = "\n\n\x1e\n\n"  # record separator between extracted blocks
MAX_CODE_LINES = 24
MAX_CODE_BYTES = 900_000
ROLE = re.compile(r":(?:func|class|meth|mod|attr|data|const|exc|obj|ref|term|pep|rfc):`~?([^`]*)`")


def stdlib_files() -> list[str]:
    root = sysconfig.get_paths()["stdlib"]
    files = sorted(glob.glob(os.path.join(root, "**", "*.py"), recursive=True))
    skip = ("site-packages", os.sep + "test", "idlelib", "lib2to3", "turtledemo", "ensurepip")
    return [f for f in files if not any(s in f for s in skip)]


def clean_doc(text: str) -> str | None:
    text = ROLE.sub(r"\1", text).replace("``", "")
    if not text.isascii() or len(text) < 40:
        return None
    return text.strip()


def extract(files: list[str]) -> tuple[list[str], list[str]]:
    docs, code = [], []
    code_bytes = 0
    for path in files:
        try:
            source = open(path, encoding="utf-8").read()
            tree = ast.parse(source)
        except (OSError, SyntaxError, UnicodeDecodeError, ValueError):
            continue
        for node in ast.walk(tree):
            if not isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            doc = ast.get_docstring(node)
            if doc and (cleaned := clean_doc(doc)):
                name = getattr(node, "name", os.path.basename(path)[:-3])
                docs.append(f"{name}: {cleaned}")
            if isinstance(node, ast.FunctionDef) and code_bytes < MAX_CODE_BYTES:
                segment = ast.get_source_segment(source, node)
                if segment and segment.isascii() and segment.count("\n") < MAX_CODE_LINES:
                    code.append(segment)
                    code_bytes += len(segment)
    return docs, code


def main() -> None:
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "data")
    os.makedirs(out, exist_ok=True)
    docs, code = extract(stdlib_files())
    for name, blocks in (("stdlib-docs.txt.gz", docs), ("stdlib-code.txt.gz", code)):
        with gzip.GzipFile(os.path.join(out, name), "wb", mtime=0) as fh:
            fh.write(SEP.join(blocks).encode("ascii"))
        print(f"{name}: {len(blocks)} blocks, {sum(map(len, blocks))} bytes")


if __name__ == "__main__":
    main()
