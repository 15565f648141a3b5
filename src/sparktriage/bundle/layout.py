"""Names inside an evidence bundle, and the checks that keep hostile names out of paths.

Node names, log names and record files all become path components under the bundle folder.
They come from configs, from remote agents and from bundles other people send, so every one
is checked against a strict pattern before it touches the filesystem (no `..`, no `/`, no
leading dot, no control characters).
"""

from __future__ import annotations

import re

from sparktriage.errors import InputError

SCHEMA_VERSION = 1
KIND = "sparktriage-bundle"

BUNDLE_FILE = "bundle.json"
MANIFEST_FILE = "manifest.jsonl"
EVENTS_FILE = "events.jsonl"
ENV_DIFF_FILE = "environment-diff.json"
NODES_DIR = "nodes"

SAMPLE_KINDS = ("host", "disk", "net", "procs", "gpu")
RECORD_FILES = frozenset(
    [f"samples/{kind}.jsonl" for kind in SAMPLE_KINDS] + ["stacks.jsonl", "dmesg.jsonl"]
)
NODE_DOCUMENTS = frozenset(["environment.json", "clock.json"])

_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9._-]{0,63}\Z")
_LOG_FILE = re.compile(r"^logs/([A-Za-z0-9_][A-Za-z0-9._-]{0,63})\.lines\.jsonl\Z")


def check_name(name: str, what: str = "node name") -> str:
    """Return `name` when it is a safe single path component, else raise InputError."""
    if not isinstance(name, str) or not _NAME.match(name) or name.endswith(".lines"):
        raise InputError(f"{what} {name!r} must be 1-64 of [A-Za-z0-9._-], not starting with "
                         f"'.' or '-'")
    return name


def safe_name(text: str, fallback: str = "proc") -> str:
    """A safe path component made from free text (for log names derived from process names)."""
    cleaned = re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip(".-")[:64]
    return cleaned if cleaned and _NAME.match(cleaned) else fallback


def check_record_file(relpath: str) -> str:
    """Return `relpath` when it names a per-node record file of the bundle format."""
    if relpath in RECORD_FILES or _LOG_FILE.match(relpath):
        return relpath
    raise InputError(f"{relpath!r} is not a record file of the bundle format")


def log_file(name: str) -> str:
    """The node-relative path of the line records of the process or file called `name`."""
    return f"logs/{check_name(name, 'log name')}.lines.jsonl"


def log_name(relpath: str) -> str | None:
    """The log name of a node-relative `logs/<name>.lines.jsonl` path, else None."""
    match = _LOG_FILE.match(relpath)
    return match.group(1) if match else None
