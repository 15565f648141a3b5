"""Text from configs, logs and servers made safe to show a person.

Control characters (C0 but newline and tab, DEL, C1), and the bidirectional overrides that can
reorder what a reader sees, are shown escaped (`\\x1b`, `\\u202e`): an ANSI sequence in a config
value cannot hide a flag from the person reading a launch plan, a table or a report. Only
human outputs are escaped; JSON keeps the characters as data.
"""

from __future__ import annotations

import re

_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069"
                     "\ud800-\udfff]")


def _escape(match: re.Match) -> str:
    char = match.group()
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def escape_controls(text: str, keep_newlines: bool = True) -> str:
    """`text` with every control or reordering character escaped (newlines and tabs kept
    unless `keep_newlines` is false, for one-line values)."""
    escaped = _UNSAFE.sub(_escape, text)
    if not keep_newlines:
        escaped = escaped.replace("\n", "\\n").replace("\t", "\\t")
    return escaped


def has_controls(text: str) -> bool:
    return _UNSAFE.search(text) is not None
