"""An input read once, bounded, and its kind decided once.

`read` gives the input's `ReadInput`: its text (at most MAX_INPUT_BYTES, UTF-8, no NUL byte,
lines bounded), a Makefile or a justfile already as the shell text of its recipes, line for
line (read/makefile.py, read/justfile.py). `detect` names the kind the registry (importers/registry.py)
decides for a text; the order and the refusals are documented there.
"""

from __future__ import annotations

from pathlib import Path

from sparktriage.errors import InputError
from sparktriage.limits import check_lines
from sparktriage.reproduce.read import justfile, makefile
from sparktriage.reproduce.importers.protocol import ReadInput
from sparktriage.reproduce.importers.registry import decide
from sparktriage.reproduce.shell import MAX_INPUT_BYTES


def read_input(path: Path) -> str:
    """The file's text: at most MAX_INPUT_BYTES, UTF-8, no NUL byte."""
    try:
        with open(path, "rb") as fh:
            data = fh.read(MAX_INPUT_BYTES + 1)
    except FileNotFoundError:
        raise InputError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise InputError(f"{path}: is a folder, not an input file") from None
    except OSError as exc:
        raise InputError(f"{path}: cannot read ({exc.strerror or exc})") from None
    if len(data) > MAX_INPUT_BYTES:
        raise InputError(f"{path}: larger than {MAX_INPUT_BYTES // (1024 * 1024)} MiB; not a "
                         "config a client sends")
    if b"\x00" in data:
        raise InputError(f"{path}: contains a NUL byte; not a text file")
    check_lines(data, str(path))
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"{path}: not UTF-8 text (byte {exc.start})") from None


def read(path: Path) -> ReadInput:
    """The input as read, once: a Makefile or a justfile as the shell text of its recipes."""
    text = read_input(path)
    if justfile.looks_like(path):
        text, notes = justfile.to_shell(text, str(path))
    elif makefile.looks_like(path, text):
        text, notes = makefile.to_shell(text, str(path))
    else:
        notes = []
    return ReadInput(path, text, list(notes))


def detect(text: str) -> str:
    """The kind of input `text` is (InputError for a refused or unknown shape)."""
    return decide(ReadInput(Path("input"), text)).kind
