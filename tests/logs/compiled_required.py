"""The compiled scanner's tests need the extension: where it should exist, its absence fails.

setup.py builds `sparktriage.logs._fastscan` wherever a C compiler and the Python headers are
present, and the install still succeeds without them (the pure-Python scanner is used then). So
a missing extension on a machine that has a compiler is a failed or stale build, and the tests
that exercise it fail, saying so, instead of skipping. A machine that really has no compiler
says so explicitly: `SPARKTRIAGE_NO_COMPILER=1` skips them (docs/logs.md, "The compiled
scanner", Tests). With the extension built, the variable changes nothing: the tests run.
"""

from __future__ import annotations

import importlib
import os
import shutil
import sysconfig

import pytest

NO_COMPILER = "SPARKTRIAGE_NO_COMPILER"
EXTENSION = "sparktriage.logs._fastscan"


def _load():
    try:
        return importlib.import_module(EXTENSION), None
    except ImportError as exc:
        return None, exc


def _compiler() -> str | None:
    cc = (sysconfig.get_config_var("CC") or "cc").split()[0]
    return shutil.which(cc) or shutil.which("cc")


def declared_without_compiler() -> bool:
    return os.environ.get(NO_COMPILER) == "1"


def message(error: ImportError | None) -> str:
    """Why the compiled scanner's tests fail here, and what to do."""
    compiler = _compiler()
    return (f"the compiled log scanner {EXTENSION} is not built ({error}); setup.py builds it "
            "wherever a C compiler and the Python headers are present "
            f"({'C compiler here: ' + compiler if compiler else 'no C compiler found here'}). "
            "Rebuild it with `bash provision/setup.sh` (or `.venv/bin/pip install -e .`); on a "
            f"machine without a compiler set {NO_COMPILER}=1 to skip these tests")


def module():
    """At the top of a test module: the extension, or None when it is missing (the
    `compiled_extension` fixture then fails every test of the module with `message`). Under
    SPARKTRIAGE_NO_COMPILER=1 a missing extension skips the whole module instead."""
    found, _ = _load()
    if found is None and declared_without_compiler():
        pytest.skip(f"{NO_COMPILER}=1: this machine has no C compiler, so no compiled scanner",
                    allow_module_level=True)
    return found


def require():
    """The extension; fails the calling test when it is missing (skips under NO_COMPILER=1)."""
    found, error = _load()
    if found is not None:
        return found
    if declared_without_compiler():
        pytest.skip(f"{NO_COMPILER}=1: this machine has no C compiler, so no compiled scanner")
    pytest.fail(message(error), pytrace=False)
