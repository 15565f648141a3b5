"""A bash syntax tree from text, bounded: tree-sitter-bash parses, nothing runs.

The parse stops at a deadline (the source is handed to tree-sitter through a reader that ends
the input once PARSE_SECONDS have passed: the text is then refused as too slow to read); the
tree is refused above MAX_NODES nodes. An input is parsed once: one command reads the same
text several times (to find the scripts another runs, to import it, to look for a unit it
writes), so the last few parses (trees and refusals) are kept by text. Helpers read a node's
text and its 1-based line.

One gap of the grammar is closed before parsing: a blank inside an ANSI-C string that opens a
bracket expression (`case $k in *[!$' \t']*)`, as bash reads it the set of a blank and a tab)
ends the grammar's pattern token, and the rest of the text then parses wrongly. Such blanks are
written as `\x20`, which bash's ANSI-C quoting reads as the same character; lines do not move.
"""

from __future__ import annotations

import re
import time
from collections import OrderedDict

import tree_sitter
import tree_sitter_bash

from sparktriage.errors import InputError

MAX_NODES = 400_000
PARSE_SECONDS = 5.0
_CHUNK = 16 * 1024  # the deadline is looked at between chunks
_KEPT = 4  # parses kept (a command reads a handful of inputs)
_KEPT_CHARS = 8 << 20  # and at most this much text: a tree takes tens of times its text
_parsed: OrderedDict[str, tuple[tree_sitter.Tree, bytes] | str] = OrderedDict()
_LANGUAGE = tree_sitter.Language(tree_sitter_bash.language())

Node = tree_sitter.Node
_BRACKET_ANSI = re.compile(r"(\[[!^]?)\$'([^'\n]*)'")


def parse(text: str, source: str) -> tuple[tree_sitter.Tree, bytes]:
    """(the tree, the UTF-8 bytes its offsets refer to); InputError when the bounds are hit."""
    if text in _parsed:
        _parsed.move_to_end(text)
        done = _parsed[text]
    else:
        done = _parse(_grammar_gaps(text))
        _parsed[text] = done
        while len(_parsed) > _KEPT or (len(_parsed) > 1
                                       and sum(map(len, _parsed)) > _KEPT_CHARS):
            _parsed.popitem(last=False)
    if isinstance(done, str):
        raise InputError(f"{source}: {done}; not a launch script a client sends")
    return done


def _grammar_gaps(text: str) -> str:
    """The text with the grammar's gap closed (the module doc); the same text for bash."""
    if "[" not in text or "$'" not in text:
        return text
    return _BRACKET_ANSI.sub(
        lambda m: m.group(1) + "$'" + m.group(2).replace(" ", "\\x20") + "'", text)


def _parse(text: str) -> tuple[tree_sitter.Tree, bytes] | str:
    """The tree and its bytes, or why the text is refused."""
    data = text.encode("utf-8")
    deadline = time.monotonic() + PARSE_SECONDS
    late = [False]

    def read(offset: int, _point) -> bytes:
        if time.monotonic() > deadline:
            late[0] = True
            return b""
        return data[offset:offset + _CHUNK]

    tree = tree_sitter.Parser(_LANGUAGE).parse(read)
    if late[0] or tree is None:
        return f"the shell text took more than {PARSE_SECONDS:.0f} s to parse"
    if tree.root_node.descendant_count > MAX_NODES:
        return f"the shell text has more than {MAX_NODES} syntax nodes"
    return tree, data


def line(node: Node) -> int:
    return node.start_point[0] + 1


def text(node: Node, data: bytes) -> str:
    return data[node.start_byte:node.end_byte].decode("utf-8", "replace")


def first_error(node: Node) -> Node | None:
    """The first ERROR or MISSING node under `node` (depth-first, bounded by the tree size)."""
    stack = [node]
    while stack:
        current = stack.pop()
        if current.is_error or current.is_missing:
            return current
        if current.has_error:
            stack.extend(reversed(current.children))
    return None
