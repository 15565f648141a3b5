"""The stand-in map of this run, and what every writer calls before it writes.

One command invocation is one run: its run directory, its documents and its terminal output
share one `SecretBook`, so the same secret always gets the same stand-in
(`REDACTED-<kind>-<n>`) wherever it would have appeared. Writers call:

- `argv(list)`: a command line before it is recorded (run.json, launch.json, bench.json);
- `url(text)`: an endpoint or any URL (credentials in `scheme://user:PASS@host`);
- `headers(dict)`: HTTP headers (`Authorization`, `X-Api-Key`, cookies: values replaced whole);
- `text(str)`: free text (error messages, log lines, terminal lines);
- `document(value)`: a JSON-like document before it is written (store/documents.py does this
  for every document and record it writes).

Nothing here keeps a secret: the book holds a 16-hex SHA-256 prefix per stand-in only.
"""

from __future__ import annotations

import re
from typing import Any, Iterable, Mapping

from sparktriage.redact.argv import redact_argv
from sparktriage.redact.detect import SecretBook, SecretScrubber, secret_name
from sparktriage.redact.documents import DocumentRedactor

_SECRET_HEADERS = re.compile(
    r"(?i)^(?:(?:proxy-)?authorization|cookie|set-cookie|x-api-key|api-key|x-auth-token"
    r"|x-amz-security-token|x-goog-api-key)$")

_state: dict[str, DocumentRedactor] = {}


def book() -> SecretBook:
    """This run's stand-ins (one per process)."""
    return redactor().book


def redactor() -> DocumentRedactor:
    """This run's document walker, over this run's book."""
    found = _state.get("redactor")
    if found is None:
        found = _state["redactor"] = DocumentRedactor()
    return found


def new_run() -> None:
    """Start a fresh stand-in map (tests; a long-lived process serving several runs)."""
    _state.clear()


def _scrubber() -> SecretScrubber:
    return SecretScrubber(book())


def text(value: str) -> str:
    """Free text with every secret replaced (stateless: no key block carries over)."""
    if not value:
        return value
    return _scrubber().scrub(value)


def lines(values: Iterable[str]) -> list[str]:
    """Consecutive lines (a log's tail, an error's lines): a private key block that spans them
    is replaced from its BEGIN line to its END line."""
    scrubber = _scrubber()
    return [scrubber.scrub(v) for v in values]


def argv(values: Iterable) -> list[str]:
    """A command line with the values of secret flags, `--flag=value`, `NAME=value`, URL
    credentials and key shapes replaced."""
    return redact_argv(values, _scrubber())


def url(value: str | None) -> str | None:
    """A URL with its password (and a token of a known shape used as the user) replaced."""
    return text(value) if value else value


def headers(values: Mapping[str, Any]) -> dict[str, Any]:
    """HTTP headers with secret values replaced whole."""
    out: dict[str, Any] = {}
    for name, value in values.items():
        if isinstance(value, str) and value and (_SECRET_HEADERS.match(str(name)) or secret_name(str(name))):
            out[name] = book().stand_in("header", value)
        else:
            out[name] = text(value) if isinstance(value, str) else value
    return out


def document(value: Any) -> Any:
    """A JSON-like document with every string scrubbed (this run's stand-ins)."""
    walker = redactor()
    walker.reset()
    return walker.value(value)


__all__ = ["book", "redactor", "new_run", "text", "lines", "argv", "url", "headers", "document"]
