"""Tolerant readers for fields of documents written by other stages.

Other stages' documents are read by their JSON contracts, but a report must not crash on a
field that is absent, null or of an unexpected type: these helpers return None (or an empty
container) instead, and `require` turns a wrong type in a contract field into a one-line
InputError naming the file and the field.
"""

from __future__ import annotations

import datetime as _dt
import math
from typing import Any

from sparktriage.errors import InputError


def num(value: Any) -> float | None:
    """A finite float, or None (bools, strings and NaN are not numbers here)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    value = float(value)
    return value if math.isfinite(value) else None


def integer(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def as_list(value: Any) -> list:
    return value if isinstance(value, list) else []


def as_dict(value: Any) -> dict:
    return value if isinstance(value, dict) else {}


def require(doc: dict, key: str, kind: type | tuple[type, ...], rel: str) -> Any:
    """A contract field that may be absent or null, but must have the right type when set."""
    value = doc.get(key)
    if value is not None and not isinstance(value, kind):
        names = kind.__name__ if isinstance(kind, type) else "/".join(k.__name__ for k in kind)
        raise InputError(f"{rel}: field {key!r} must be {names}, found {type(value).__name__}")
    return value


def seconds(value: Any) -> float | None:
    """A time as seconds: numbers as they are (Unix or relative), ISO 8601 strings as Unix."""
    number = num(value)
    if number is not None:
        return number
    if isinstance(value, str) and value:
        try:
            parsed = _dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            return None
        if parsed.tzinfo is None:
            parsed = parsed.replace(tzinfo=_dt.timezone.utc)
        return parsed.timestamp()
    return None


def first_num(doc: dict, *keys: str) -> float | None:
    """The first of several candidate keys that holds a number."""
    for key in keys:
        value = num(doc.get(key))
        if value is not None:
            return value
    return None


def flatten(value: Any, prefix: str = "", limit: int = 400) -> list[tuple[str, str]]:
    """`a.b.c: value` rows for a nested document (lists of scalars joined), at most `limit`."""
    rows: list[tuple[str, str]] = []

    def walk(item: Any, path: str) -> None:
        if len(rows) >= limit:
            return
        if isinstance(item, dict):
            if not item:
                rows.append((path, "{}"))
            for key, sub in item.items():
                walk(sub, f"{path}.{key}" if path else str(key))
        elif isinstance(item, list):
            if all(not isinstance(v, (dict, list)) for v in item):
                rows.append((path, ", ".join(scalar(v) for v in item) if item else "[]"))
            else:
                for index, sub in enumerate(item):
                    walk(sub, f"{path}[{index}]")
        else:
            rows.append((path, scalar(item)))

    walk(value, prefix)
    return rows


def scalar(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return fixed(value, 6)
    return str(value)


def fixed(value: float, digits: int = 6) -> str:
    """`digits` significant digits, never in scientific notation (3.2e+10 -> 32000000000)."""
    import decimal
    import math

    if not math.isfinite(value):
        return str(value)
    text = f"{value:.{digits}g}"
    if "e" in text:
        text = format(decimal.Decimal(text), "f")
    return text
