"""Validation problems in plain words: pydantic's error records and messages, said our way.

Every place that turns a pydantic `ValidationError` (or typer's coercion, which uses pydantic)
into a message for the user goes through `plain(error)` or `plain_text(message)`, so no user
ever reads "Input should be greater than or equal to 1" or "Value error, ...".
"""

from __future__ import annotations

import re

_TEXT = (
    (re.compile(r"Input should be a valid (integer|number|boolean|string)[^(]*?(?=$|\s\()"),
     lambda m: {"integer": "expected an integer", "number": "expected a number",
                "boolean": "expected true or false", "string": "expected text"}[m.group(1)]),
    (re.compile(r"Input should be greater than or equal to ([^ (,]+)"), lambda m: f"must be at least {m.group(1)}"),
    (re.compile(r"Input should be less than or equal to ([^ (,]+)"), lambda m: f"must be at most {m.group(1)}"),
    (re.compile(r"Input should be greater than ([^ (,]+)"), lambda m: f"must be more than {m.group(1)}"),
    (re.compile(r"Input should be less than ([^ (,]+)"), lambda m: f"must be less than {m.group(1)}"),
    (re.compile(r"Input should be "), lambda m: "expected "),
    (re.compile(r"^Value error, "), lambda m: ""),
    (re.compile(r"^Assertion failed, "), lambda m: ""),
    (re.compile(r"Extra inputs are not permitted"), lambda m: "unknown key"),
    (re.compile(r"Field required"), lambda m: "required key missing"),
)


def plain_text(message: str) -> str:
    """A pydantic-worded message rewritten in plain words (other text passes through)."""
    for pattern, repl in _TEXT:
        message = pattern.sub(repl, message)
    return message.strip().rstrip(",")


def plain(error: dict) -> str:
    """One pydantic error record (`ValidationError.errors()` item) in plain words."""
    kind = error.get("type")
    if kind == "extra_forbidden":
        return "unknown key"
    if kind == "missing":
        return "required key missing"
    return plain_text(str(error.get("msg", "invalid")))


__all__ = ["plain", "plain_text"]
