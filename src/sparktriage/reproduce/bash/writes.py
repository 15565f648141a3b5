"""Files a script writes with `echo ... > F` / `printf ... > F` (and `>>` appends), kept as
text the way a here-document's file is (bash/files.py's bounded store), so that a container
that later runs F (`docker run -v F:/serve.sh ... /serve.sh`) or `vllm serve --config F` reads
what the script wrote. The words are expanded as bash would (never run); `echo` takes bash's
builtin options (-n, -e, -E), `printf` its format with `%s`/`%d`/`%b`/`%%` and the common
backslash escapes, reused while arguments remain. Any other command redirected to a file
writes nothing this module knows (None).
"""

from __future__ import annotations

import os
import re

from sparktriage.reproduce.bash.files import WRITE_OPS, command_words
from sparktriage.reproduce.bash.tree import Node, text
from sparktriage.reproduce.bash.words import Expander, Scope

_ESCAPES = {"n": "\n", "t": "\t", "\\": "\\", "a": "\a", "r": "\r", '"': '"', "'": "'",
            "e": "\x1b", "v": "\v", "f": "\f"}
_SPEC = re.compile(r"%(%|[-+ #0]*\d*(?:\.\d+)?[sdbiqxXuc])")
MAX_PRINTF_ROUNDS = 256


def _unescape(value: str) -> tuple[str, bool]:
    """Backslash escapes as `echo -e` / printf read them; (text, stop) where `\\c` stops."""
    out, i = [], 0
    while i < len(value):
        ch = value[i]
        if ch == "\\" and i + 1 < len(value):
            nxt = value[i + 1]
            if nxt == "c":
                return "".join(out), True
            out.append(_ESCAPES.get(nxt, "\\" + nxt))
            i += 2
            continue
        out.append(ch)
        i += 1
    return "".join(out), False


def echo_text(args: list[str]) -> str:
    """What `echo ARGS` prints (bash's builtin: -n, -e, -E options before the words)."""
    newline, escapes = True, False
    while args and re.fullmatch(r"-[neE]+", args[0]):
        newline = newline and "n" not in args[0]
        escapes = "e" in args[0] if "e" in args[0] or "E" in args[0] else escapes
        args = args[1:]
    body = " ".join(args)
    if escapes:
        body, stop = _unescape(body)
        if stop:
            return body
    return body + ("\n" if newline else "")


def printf_text(args: list[str]) -> str:
    """What `printf FORMAT ARGS` prints (the format reused while arguments remain)."""
    if args and args[0] == "--":
        args = args[1:]
    if not args:
        return ""
    fmt, rest = args[0], list(args[1:])
    out: list[str] = []
    for _ in range(MAX_PRINTF_ROUNDS):
        used = 0

        def one(match: re.Match) -> str:
            nonlocal used
            if match.group(1) == "%":
                return "%"
            value = rest[used] if used < len(rest) else ""
            used += 1
            if match.group(1).endswith("b"):
                return _unescape(value)[0]
            return value if not match.group(1)[-1] in "dixXu" or value else "0"
        piece, stop = _unescape(_SPEC.sub(one, fmt))
        out.append(piece)
        rest = rest[used:]
        if stop or not rest or used == 0:
            break
    return "".join(out)


def echo_write(node: Node, data: bytes, scope: Scope) -> tuple[list[str], str, bool] | None:
    """(the files, the text, whether it appends) of `echo|printf ... > F` (`>> F` appends);
    None for any other redirected statement."""
    body = node.child_by_field_name("body")
    if body is None or body.type != "command":
        return None
    words = command_words(body, data, scope)
    if not words or os.path.basename(words[0]) not in ("echo", "printf"):
        return None
    targets, append = [], False
    for redirect in (c for c in node.named_children if c.type == "file_redirect"):
        op = next((text(c, data) for c in redirect.children if not c.is_named), "")
        if op not in WRITE_OPS or redirect.child_by_field_name("descriptor") is not None \
                and text(redirect.child_by_field_name("descriptor"), data) != "1":
            continue
        dest = redirect.child_by_field_name("destination") or \
            (redirect.named_children[-1] if redirect.named_children else None)
        found = Expander(data, scope).fields([dest]) if dest is not None else []
        if len(found) == 1 and not found[0].startswith("/dev/"):
            targets.append(found[0])
            append = op in (">>", "&>>")
    if not targets:
        return None
    made = echo_text(words[1:]) if os.path.basename(words[0]) == "echo" \
        else printf_text(words[1:])
    return targets, made, append
