"""A bash syntax tree from text, bounded: tree-sitter-bash parses, nothing runs.

The parse stops at a deadline (the source is handed to tree-sitter through a reader that ends
the input once PARSE_SECONDS have passed: the text is then refused as too slow to read); the
tree is refused above MAX_NODES nodes. Helpers read a node's text and its 1-based line.
"""

from __future__ import annotations

import time

import tree_sitter
import tree_sitter_bash

from sparktriage.errors import InputError

MAX_NODES = 400_000
PARSE_SECONDS = 5.0
_CHUNK = 64 * 1024
_LANGUAGE = tree_sitter.Language(tree_sitter_bash.language())

Node = tree_sitter.Node


def parse(text: str, source: str) -> tuple[tree_sitter.Tree, bytes]:
    """(the tree, the UTF-8 bytes its offsets refer to); InputError when the bounds are hit."""
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
        raise InputError(f"{source}: the shell text took more than {PARSE_SECONDS:.0f} s to "
                         "parse; not a launch script a client sends")
    if tree.root_node.descendant_count > MAX_NODES:
        raise InputError(f"{source}: the shell text has more than {MAX_NODES} syntax nodes; not "
                         "a launch script a client sends")
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
