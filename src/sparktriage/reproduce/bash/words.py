"""Words of a bash syntax tree expanded statically, the way bash would, without running anything.

Quotes, escapes, `$X`, `${X}`, `${X:-d}` `${X-d}` `${X:=d}` `${X=d}` `${X:?m}` `${X:+a}`,
`${#X}`, `${X#p}` `${X%p}` (and doubled), arrays (`"${A[@]}"`, `${A[0]}`), positional
parameters of a called function and simple integer arithmetic are evaluated from the variables
known at that point (the script's own assignments, then the values the client supplied).
Unquoted expansions are split into fields on blanks. What cannot be known without running
something (command substitution, process substitution, an unset variable with no default, a
script argument) becomes a `<supply:NAME>` placeholder and a `Hole` with its line. Every value
is measured before it is built and charged to the read's byte budget (reproduce/budget.py).
"""

from __future__ import annotations

import re

from sparktriage.reproduce.bash.arith import arith, edit, trim
from sparktriage.reproduce.bash.scope import Hole, Scope, Value
from sparktriage.reproduce.bash.tree import Node, line, text
from sparktriage.reproduce.budget import size_of

__all__ = ["Expander", "Hole", "Scope"]
_BLANKS = re.compile(r"([ \t\n]+)")
_LEAD = re.compile(rb"(?:[ \t\n]|\\\n)*")  # blanks and `\<newline>` before a `$`
_ESCAPED_IN_QUOTES = re.compile(r"\\([\\$`\"])|\\\n")  # \<newline> joins lines
_ANSI = {"n": "\n", "t": "\t", "\\": "\\", "'": "'", '"': '"', "e": "\x1b", "r": "\r", "a": "\a",
         "b": "\b", "f": "\f", "v": "\v"}
_SPECIAL = {"?": "status", "$": "pid", "!": "last_pid", "-": "flags", "0": "script",
            "_": "last_arg"}
MAX_WORD_DEPTH = 48  # expansions and quotes nested in one word


def _unquote(match: re.Match) -> str:
    return match.group(1) or ""


def _unescape(raw: str) -> str:
    """An unquoted word's text: backslash-newline joins, backslash-X is X."""
    return re.sub(r"\\(.)", r"\1", raw.replace("\\\n", ""), flags=re.DOTALL)


def _ansi_c(raw: str) -> str:
    body = raw[2:-1]
    return re.sub(r"\\(.)", lambda m: _ANSI.get(m.group(1), "\\" + m.group(1)), body,
                  flags=re.DOTALL)


class Expander:
    """Expands word nodes against a scope; `hint` names a placeholder (the assigned variable)."""

    def __init__(self, data: bytes, scope: Scope, hint: str | None = None) -> None:
        self.data, self.scope, self.hint = data, scope, hint
        self.depth = 0

    # fields: (kind, value): "lit" text kept whole, "split" text split on blanks, "fields" list
    def fields(self, nodes: list[Node]) -> list[str]:
        out: list[str] = []
        size = 0
        for node in nodes:
            fields = _split(self._tilde(node, self.segments(node, quoted=False)))
            size += size_of(fields)
            self.scope.budget.check(size, line(node), len(out) + len(fields))
            out.extend(fields)
        if nodes:
            self.scope.budget.charge(size, line(nodes[0]), len(out))
        return out

    def _tilde(self, node: Node, segments: list[tuple[str, Value]]) -> list[tuple[str, Value]]:
        """An unquoted leading `~` or `~/`: the home folder ($HOME, else a placeholder)."""
        raw = text(node, self.data)
        if not segments or segments[0][0] != "lit" or not (raw == "~" or raw.startswith("~/")):
            return segments
        home = self.scope.lookup("HOME")
        if not isinstance(home, str):
            home = self.scope.hole("HOME", node, "~ is the home folder, known only when the "
                                   "script runs")
        return [("lit", home + str(segments[0][1])[1:])] + segments[1:]

    def string(self, node: Node | None) -> str:
        """One value, not split (the right side of an assignment, a case subject)."""
        if node is None:
            return ""
        segments = self._tilde(node, self.segments(node, quoted=True))
        self.scope.budget.charge(_size(segments), line(node))
        return "".join(" ".join(value) if kind == "fields" else value
                       for kind, value in segments)

    def segments(self, node: Node, quoted: bool) -> list[tuple[str, Value]]:
        if self.depth >= MAX_WORD_DEPTH:
            return [("lit", self.scope.hole(self.hint or "nested", node, "a word nested more "
                                            f"than {MAX_WORD_DEPTH} levels deep (not expanded)"))]
        self.depth += 1
        try:
            segments = self._segments(node, quoted)
        finally:
            self.depth -= 1
        # the parts are shared references until joined: measure them before anything joins
        self.scope.budget.check(_size(segments), line(node))
        return segments

    def _segments(self, node: Node, quoted: bool) -> list[tuple[str, Value]]:
        kind = node.type
        if kind in ("word", "number", "extglob_pattern", "regex", "test_operator",
                    "special_variable_name", "variable_name", "file_descriptor"):
            raw = text(node, self.data)
            return [("lit", raw if quoted and kind != "word" else _unescape(raw))]
        if kind == "raw_string":
            return [("lit", text(node, self.data)[1:-1])]
        if kind == "ansi_c_string":
            return [("lit", _ansi_c(text(node, self.data)))]
        if kind in ("string", "translated_string"):
            inside = self._inside(node)
            if any(k == "fields" for k, _ in inside) and all(
                    k == "fields" or v == "" for k, v in inside):
                return inside  # "$@", "${A[@]}": as many fields as there are items, maybe none
            return [("lit", "")] + inside
        if kind == "string_content":
            return [("lit", _ESCAPED_IN_QUOTES.sub(_unquote, text(node, self.data)))]
        if kind == "concatenation":
            return [s for child in node.children for s in self.segments(child, quoted)]
        if kind == "simple_expansion":
            named = node.named_children
            return self._variable(text(named[0], self.data) if named else "$", node, quoted)
        if kind == "expansion":
            return self._expansion(node, quoted)
        if kind == "command_substitution":
            return [("lit", self._substitution(node))]
        if kind == "process_substitution":
            return [("lit", self.scope.hole(self.hint or "process_substitution", node,
                                            "process substitution " + _short(node, self.data)))]
        if kind == "arithmetic_expansion":
            return [("lit", self._arithmetic(node))]
        if kind == "brace_expression":
            return [("lit", text(node, self.data))]
        return [("lit", _unescape(text(node, self.data)))]

    def heredoc(self, node: Node) -> str:
        """An unquoted here-document's body, expanded as in double quotes."""
        segments = self._inside(node, node.start_byte, node.end_byte)
        self.scope.budget.charge(_size(segments), line(node))
        return "".join(" ".join(v) if k == "fields" else v for k, v in segments)

    def _inside(self, node: Node, pos: int | None = None,
                end: int | None = None) -> list[tuple[str, Value]]:
        """A double-quoted string's parts; the text between child nodes is literal."""
        out: list[tuple[str, Value]] = []
        if pos is None:
            pos = node.start_byte + (2 if text(node, self.data).startswith('$"') else 1)
        end = node.end_byte - 1 if end is None else end
        for child in node.children:
            if not child.is_named:
                continue
            # tree-sitter-bash may start an expansion node at the blanks and `\<newline>`
            # before its `$`: the text up to its first token is the string's own
            lead = _LEAD.match(self.data, child.start_byte, child.end_byte) \
                if child.type != "string_content" else None
            start = lead.end() if lead else child.start_byte
            if start > pos:
                out.append(("lit", _ESCAPED_IN_QUOTES.sub(
                    _unquote, self.data[pos:start].decode("utf-8", "replace"))))
            out.extend(self.segments(child, quoted=True))
            pos = child.end_byte
        if end > pos:
            out.append(("lit", _ESCAPED_IN_QUOTES.sub(
                _unquote, self.data[pos:end].decode("utf-8", "replace"))))
        return out

    def _substitution(self, node: Node) -> str:
        names = [text(n, self.data) for n in _descendants(node, "command_name", 3)]
        name = self.hint or (f"output_of_{names[0].rsplit('/', 1)[-1]}" if names
                             else "command_output")
        return self.scope.hole(name, node, "command substitution " + _short(node, self.data))

    def _value(self, name: str, node: Node) -> Value | None:
        """A variable's value, positional parameters included (None: unset)."""
        if name.isdigit():
            args = self.scope.positional
            if args is None:
                return self.scope.hole(f"arg{name}", node, f"script argument ${name}")
            index = int(name)
            return args[index - 1] if 0 < index <= len(args) else None
        if name == "#":
            args = self.scope.positional
            if args is None:  # the script's arguments are not known: none assumed
                self.scope.hole("argument_count", node, "$# taken as 0: the script's own "
                                "arguments are not known; none assumed", dropped=True)
                return "0"
            return str(len(args))
        if name in ("?", "$", "!", "-", "0", "_", "RANDOM", "PPID", "HOSTNAME", "SECONDS"):
            if name == "HOSTNAME" and self.scope.lookup(name) is not None:
                return self.scope.lookup(name)
            return self.scope.hole(f"shell_{_SPECIAL.get(name, name)}", node,
                                   f"${name} is known only when the script runs")
        return self.scope.lookup(name)

    def _variable(self, name: str, node: Node, quoted: bool) -> list[tuple[str, Value]]:
        if name in ("@", "*"):
            args = self.scope.positional
            if args is None:
                self.scope.hole("script_args", node, f"${name}: the script's own arguments "
                                "are not known; none assumed", dropped=True)
                return [("fields", [])]
            return [("fields", list(args))] if quoted and name == "@" else \
                [("lit" if quoted else "split", " ".join(args))]
        value = self._value(name, node)
        if value is None:
            value = self.scope.hole(f"arg{name}" if name.isdigit() else name, node,
                                    f"${name} is not set in the script and no default is given")
            return [("lit", value)]
        if isinstance(value, list):
            value = value[0] if value else ""
        if value.startswith("<supply:") and value.endswith(">") and value.count("<") == 1:
            return [("lit", value)]
        return [("lit" if quoted else "split", value)]

    def _expansion(self, node: Node, quoted: bool) -> list[tuple[str, Value]]:
        """`${...}`: the variable (or array element), then the operator and its operand."""
        children = [c for c in node.children if c.type not in ("${", "}")]
        length = bool(children) and children[0].type == "#" and len(children) > 1
        if length or (children and children[0].type == "!"):
            children = children[1:]
        if not children:
            return [("lit", "")]
        target, rest = children[0], children[1:]
        element: str | None = None
        if target.type == "subscript":
            name_node = target.child_by_field_name("name")
            index_node = target.child_by_field_name("index")
            name = text(name_node, self.data) if name_node else ""
            element = text(index_node, self.data) if index_node else "0"
        else:
            name = text(target, self.data)
        if length or (node.children and len(node.children) > 1 and node.children[1].type == "!"):
            value = self._value(name, node)
            if length and value is not None and "<supply:" not in str(value):
                return [("lit", str(len(value)))]
            return [("lit", self.scope.hole(name, node, "${" + ("#" if length else "!")
                                            + name + "...} of a value not known"))]
        if element is not None:
            return self._element(name, element, node, quoted)
        if not rest:
            return self._variable(name, node, quoted)
        return self._operator(name, rest, node, quoted)

    def _element(self, name: str, index: str, node: Node, quoted: bool) -> list[tuple[str, Value]]:
        value = self.scope.lookup(name)
        if value is None:
            return [("lit", self.scope.hole(name, node, f"${{{name}[{index}]}}: {name} is not "
                                            "set in the script"))]
        items = value if isinstance(value, list) else [value]
        if index in ("@", "*"):
            return [("fields", list(items))] if quoted and index == "@" else \
                [("lit" if quoted else "split", " ".join(items))]
        if index.isdigit() and int(index) < len(items):
            return [("lit" if quoted else "split", items[int(index)])]
        return [("lit", "")]

    def _operand(self, nodes: list[Node]) -> str:
        """The operand of `${X:-...}`: its nodes, with the text between them kept."""
        parts: list[str] = []
        pos = None
        for child in nodes:
            if pos is not None and child.start_byte > pos:
                parts.append(self.data[pos:child.start_byte].decode("utf-8", "replace"))
            parts.append(self.string(child))
            pos = child.end_byte
        return "".join(parts)

    def _operator(self, name: str, rest: list[Node], node: Node,
                  quoted: bool) -> list[tuple[str, Value]]:
        op = rest[0].type if not rest[0].is_named else ""
        operand = self._operand(rest[1:] if op else rest)
        if name.isdigit() and self.scope.positional is None and self.scope.args_unknown:
            return [("lit", self.scope.hole(f"arg{name}", node, f"script argument ${name} "
                                            "(read as not known: without arguments the script "
                                            "runs no server)"))]
        if name.isdigit() and self.scope.positional is None:
            self.scope.hole(f"arg{name}", node, f"script argument ${name} assumed not given "
                            f"(the script's own arguments are not known)", dropped=True)
            value: Value | None = None
        else:
            value = self._value(name, node)
        if isinstance(value, list):
            value = value[0] if value else ""
        kind = "lit" if quoted else "split"
        unset = value is None
        empty = unset or value == ""
        if op in (":-", "-", ":=", "="):
            use_default = empty if op.startswith(":") else unset
            if use_default:
                if op in (":=", "="):
                    self.scope.values[name] = operand
                return [(kind, operand)]
            return [(kind, value)]
        if op in (":+", "+"):
            return [(kind, operand if not (empty if op == ":+" else unset) else "")]
        if op in (":?", "?"):
            if (empty if op == ":?" else unset):
                return [("lit", self.scope.hole(name, node, f"${{{name}{op}{operand}}}: the "
                                                "script requires it and sets no value"))]
            return [(kind, value)]
        if unset or "<supply:" in value:
            return [("lit", self.scope.hole(name, node, f"${{{name}{op}...}} of a value not "
                                            "known"))]
        if op in ("#", "##", "%", "%%") and (trimmed := trim(value, op, operand)) is not None:
            return [(kind, trimmed)]
        if (changed := edit(value, op, operand,
                            lambda size: self.scope.budget.check(size, line(node)))) is not None:
            return [(kind, changed)]
        return [("lit", self.scope.hole(name, node, f"${{{name}{op}...}}: this expansion is "
                                        "not evaluated"))]

    def _arithmetic(self, node: Node) -> str:
        inner = [c for c in node.named_children]
        result = arith(inner[0], self.scope.lookup, self.data) if len(inner) == 1 else None
        if result is None:
            return self.scope.hole(self.hint or "arithmetic", node,
                                   "arithmetic on values not known " + _short(node, self.data))
        return str(result)


def _size(segments: list[tuple[str, Value]]) -> int:
    return sum(size_of(value) for _, value in segments)


def _split(segments: list[tuple[str, Value]]) -> list[str]:
    """Segments into fields: split text on blanks, a quoted array makes one field each."""
    fields: list[str] = []
    current: str | None = None
    for kind, value in segments:
        if kind == "lit":
            current = (current or "") + value
        elif kind == "split":
            for token in _BLANKS.split(value):
                if not token:
                    continue
                if _BLANKS.fullmatch(token):
                    if current is not None:
                        fields.append(current)
                    current = None
                else:
                    current = (current or "") + token
        else:
            for index, item in enumerate(value):
                if index:
                    fields.append(current or "")
                    current = item
                else:
                    current = (current or "") + item
    if current is not None:
        fields.append(current)
    return fields


def _descendants(node: Node, kind: str, limit: int) -> list[Node]:
    out, stack = [], [node]
    while stack and len(out) < limit:
        current = stack.pop()
        if current.type == kind:
            out.append(current)
        stack.extend(reversed(current.children))
    return out


def _short(node: Node, data: bytes) -> str:
    raw = " ".join(text(node, data).split())
    return raw if len(raw) <= 80 else raw[:77] + "..."
