"""What each message of vLLM's start-up means to the reading, as data keyed by its format string.

Two files in `logs/data/`:

- `message_meanings.tsv`, kept by hand: one line per format string (as the catalogue writes it,
  JSON-quoted), with its meaning and the `catalog.RULES` ids that read it, each with the names
  of the format's holes (`reported.model_loading(gib,s)`; `_` for a hole nobody reads).
- `vllm_message_meanings.json`, generated from it and the catalogue by
  `scripts/vllm_message_meanings.py`: every catalogue message of the start-up pool (and every
  other message the hand table names) with its meaning and rules; and beside it
  `vllm_rule_patterns.json`, the patterns of the rules derived from those formats, which
  `catalog.py` reads. A release that rewords a message is covered by regenerating the
  catalogue and these files; `tests/logs/test_message_meanings.py` fails while a start-up
  message has no meaning.

Meanings: `phase:<name>` (a phase boundary), `progress` (a bar or a step count),
`duration:<what>:<unit>` (the message states how long `what` took), `failure`, `serving`
(only a serving server prints it), `shutdown` (a stop that was asked for), `nothing`.
"""

from __future__ import annotations

import functools
import json
import os
import re
from dataclasses import dataclass

HAND = "data/message_meanings.tsv"
TABLE = "data/vllm_message_meanings.json"
PATTERNS = "data/vllm_rule_patterns.json"
# the start-up pool: what a start prints at the levels a log shows by default
POOL_KINDS = ("log", "helper", "progress")
POOL_LEVELS = ("INFO", "WARNING", "ERROR", "CRITICAL")
_MEANING = re.compile(r"^(?:phase:(?:resolve|engine_start|distributed_init|weight_read|post_load|"
                      r"compile|kv_profiling|kernel_jit|cuda_graphs|ready)|progress|"
                      r"duration:[a-z_]+:(?:s|ms)|failure|serving|shutdown|nothing)$")
_SPEC = re.compile(r"^(?P<rule>[a-z_]+(?:\.[a-z_0-9]+)*)(?:\((?P<holes>[\w,]*)\))?$")

# %-conversions as vLLM's source writes them (the catalogue turns f-strings into %s)
CONVERSION = re.compile(r"%(?:\((?P<key>[^)]{1,40})\))?[-+ #0]*(?:\d+|\*)?(?:\.\d+)?"
                        r"(?P<type>[sdifrxXeEgGcaou%])")
_INT = r"[-+]?\d[\d,]*"
_FLOAT = r"-?\d[\d,]*(?:\.\d+)?(?:[eE][-+]?\d+)?"
# hole names that always hold a number, whatever the conversion (f-strings become "%s")
NUMBERS = frozenset({"s", "ms", "gib", "c", "x", "len", "blocks", "size", "ws", "pct", "n",
                     "total", "threads", "tok"})
REST = frozenset({"config", "args", "tasks"})  # text holes that run to the line's end
WORDS = frozenset({"url", "arch", "nccl", "backend", "method", "master", "mq", "fs", "v"})  # one word
_SENTENCE_END = re.compile(r"\.\s")


@dataclass(frozen=True)
class RuleUse:
    """A rule that reads a format, and the names of the format's holes (None: every hole `_`)."""

    rule: str
    holes: tuple[str, ...] | None


@dataclass(frozen=True)
class HandEntry:
    fmt: str
    meaning: str
    uses: tuple[RuleUse, ...]
    line: int


class TableError(ValueError):
    """The hand table is malformed (the message names the line)."""


def parse_hand(text: str) -> dict[str, HandEntry]:
    """{format: entry} from the hand table's text; TableError on a malformed or repeated line."""
    out: dict[str, HandEntry] = {}
    for number, raw in enumerate(text.splitlines(), 1):
        if not raw.strip() or raw.startswith("#"):
            continue
        parts = raw.split("\t")
        if len(parts) != 3:
            raise TableError(f"line {number}: want meaning<TAB>rules<TAB>\"format\"")
        meaning, rules, quoted = parts
        if not _MEANING.match(meaning):
            raise TableError(f"line {number}: unknown meaning {meaning!r}")
        try:
            fmt = json.loads(quoted)
        except json.JSONDecodeError as exc:
            raise TableError(f"line {number}: the format is not a JSON string: {exc}") from None
        uses = []
        for spec in ([] if rules == "-" else rules.split(" ")):
            m = _SPEC.match(spec)
            if m is None:
                raise TableError(f"line {number}: bad rule {spec!r}")
            holes = _holes(m["holes"])
            if holes is not None and len(holes) != len(holes_of(fmt)):
                raise TableError(f"line {number}: {spec} names {len(holes)} holes, the format "
                                 f"has {len(holes_of(fmt))}")
            uses.append(RuleUse(m["rule"], holes))
        if fmt in out:
            raise TableError(f"line {number}: format repeated (line {out[fmt].line})")
        out[fmt] = HandEntry(fmt, meaning, tuple(uses), number)
    return out


def _holes(text: str | None) -> tuple[str, ...] | None:
    return None if text is None else tuple(text.split(",")) if text else ()


def holes_of(fmt: str) -> list[str]:
    """The conversion types of a format's first line, in order (`%%` is no hole)."""
    return [m["type"] for m in CONVERSION.finditer(head(fmt)) if m["type"] != "%"]


def head(fmt: str) -> str:
    """A format's first printed line: what one physical log line can show of it."""
    return next((line.strip() for line in fmt.strip().splitlines() if line.strip()), "")


def derived_pattern(fmt: str, holes: tuple[str, ...] | None, groups: tuple[str, ...]) -> str:
    """The regex a rule reads one format with: literal parts escaped, each hole typed by its
    conversion or its name (integers, numbers, text) and named where `holes` names it.

    The pattern stops after the sentence of the last named hole (after the first sentence when
    no hole is named), without the closing punctuation: vLLM follows many messages with advice
    that pastes cut, and ends others with "..." or ":" that excerpts drop. Every name in
    `groups` is defined (one this format lacks never participates), so each of a rule's
    patterns answers the same `match.group(name)`."""
    text = head(fmt)
    names = list(holes) if holes is not None else []
    last_named = max((i for i, n in enumerate(names) if n not in ("_", "tag")), default=-1)
    out, last, index = [], 0, 0
    for m in CONVERSION.finditer(text):
        if m["type"] == "%":
            continue
        if index > last_named and not (index == 0 and m.start() == 0 and m["type"] == "s"):
            break  # past the last named hole (a leading hole is the model tag: kept)
        out.append(re.escape(text[last:m.start()].replace("%%", "%")))
        name = names[index] if index < len(names) else "_"
        kind = m["type"]
        if index == 0 and m.start() == 0 and kind == "s" and name in ("_", "tag"):
            # a leading %s is the model tag of the compile lines: a search finds the message
            # after it (a leading optional group would make every search try each position)
            last, index = m.end(), 1
            continue
        elif kind in "dioxXu":
            body = _INT
        elif kind in "feEgG" or name in NUMBERS:  # "%s" of a number an f-string printed
            body = _FLOAT
        elif name == "_":
            body = r".*?"
        elif name in REST:
            body = r".*"
        elif name in WORDS:
            body = r"\S+?" if _following(text, m.end(), index == last_named) else r"\S+"
        else:  # named text: up to the literal that follows, else to the sentence's end
            body = r".+?" if _following(text, m.end(), index == last_named) else \
                r".+?(?=\.\s|[.:;,]?\s*$)"
        out.append(f"(?P<{name}>{body})" if name not in ("_", "tag") else f"(?:{body})")
        last = m.end()
        index += 1
    nxt = CONVERSION.search(text, last)
    while nxt is not None and nxt["type"] == "%":
        nxt = CONVERSION.search(text, nxt.end())
    out.append(re.escape(_clip(text[last:nxt.start() if nxt else len(text)].replace("%%", "%"))))
    missing = [g for g in groups if g not in names]
    return "".join(out) + "".join(f"(?P<{g}>(?!))?" for g in missing)


def _following(text: str, end: int, last: bool) -> str:
    """The literal after a hole (up to the next hole) as the pattern keeps it."""
    nxt = CONVERSION.search(text, end)
    follows = text[end:nxt.start() if nxt else len(text)]
    return _clip(follows) if last else follows


def _clip(literal: str) -> str:
    """A literal up to its sentence's end, without the closing punctuation."""
    found = _SENTENCE_END.search(literal)
    return (literal[:found.start()] if found else literal).rstrip(" .:;,\u2026")


@dataclass(frozen=True)
class Entry:
    """One catalogue message in the generated table."""

    id: str
    module: str
    level: str
    kind: str
    fmt: str
    releases: tuple[str, ...]
    meaning: str
    rules: tuple[RuleUse, ...]


def in_pool(message) -> bool:
    """Is a catalogue message one whose start-up meaning must be decided?"""
    return message.startup and message.kind in POOL_KINDS and message.level in POOL_LEVELS


def build(catalogue, hand: dict[str, HandEntry]) -> tuple[list[Entry], list[str], list[str]]:
    """(entries, undecided formats, stale hand formats): every pool message and every message
    the hand table names, with the hand table's meaning."""
    entries: list[Entry] = []
    undecided: list[str] = []
    seen: set[str] = set()
    for message in catalogue.messages:
        entry = hand.get(message.fmt)
        if entry is None:
            if in_pool(message) and message.fmt not in undecided:
                undecided.append(message.fmt)
            continue
        seen.add(message.fmt)
        entries.append(Entry(message.id, message.module, message.level, message.kind,
                             message.fmt, message.releases, entry.meaning, entry.uses))
    stale = [fmt for fmt in hand if fmt not in seen]
    return entries, undecided, stale


def _read(name: str) -> str:
    # a plain read beside this module: importlib.resources would add to every command's start
    with open(os.path.join(os.path.dirname(__file__), name), encoding="utf-8") as src:
        return src.read()


def hand_text() -> str:
    return _read(HAND)


def dump(entries: list[Entry]) -> str:
    """The generated table's text: one message per line, sorted by id (stable diffs)."""
    rows = []
    for e in sorted(entries, key=lambda e: e.id):
        rules = [u.rule + ("(" + ",".join(u.holes) + ")" if u.holes is not None else "")
                 for u in e.rules]
        rows.append(json.dumps({"id": e.id, "meaning": e.meaning, "rules": rules,
                                "level": e.level, "kind": e.kind, "module": e.module,
                                "fmt": e.fmt, "releases": list(e.releases)}, ensure_ascii=False))
    return ('{"schema_version": 1,\n"about": "every start-up message of vLLM 0.10+ (and each '
            'other message the reader maps) with its meaning for the start-up reading; '
            'generated by scripts/vllm_message_meanings.py from data/vllm_messages.json and '
            'data/message_meanings.tsv",\n"messages": [\n' + ",\n".join(rows) + "\n]}\n")


def dump_patterns(entries: list[Entry]) -> str:
    """The derived rules' patterns file: {rule id: [[regex, [names it defines]], ...]}."""
    patterns = []
    for rule, formats in sorted(_group_by_rule(entries).items()):
        derived = []
        for fmt, holes in formats:
            if holes is None:
                continue  # a hand rule that reads this format: listed, not derived
            names = [n for n in holes if n not in ("_", "tag")]
            item = [derived_pattern(fmt, holes, ()), names]
            if item not in derived:
                derived.append(item)
        if derived:
            patterns.append(json.dumps(rule) + ": " + json.dumps(derived, ensure_ascii=False))
    return ('{"schema_version": 1,\n"about": "the patterns of the log reader\'s rules derived '
            'from vLLM\'s formats (catalog.py): regex, the hole names it defines; generated by '
            'scripts/vllm_message_meanings.py with vllm_message_meanings.json",\n'
            '"patterns": {\n' + ",\n".join(patterns) + "\n}}\n")


@functools.lru_cache(maxsize=1)
def table() -> tuple[Entry, ...]:
    """The committed generated table (package data, read once)."""
    raw = _read(TABLE)
    out = []
    for m in json.loads(raw)["messages"]:
        uses = []
        for spec in m["rules"]:
            found = _SPEC.match(spec)
            uses.append(RuleUse(found["rule"], _holes(found["holes"])))
        out.append(Entry(m["id"], m["module"], m["level"], m["kind"], m["fmt"],
                         tuple(m["releases"]), m["meaning"], tuple(uses)))
    return tuple(out)


def formats_for(rule_id: str) -> list[tuple[str, tuple[str, ...] | None]]:
    """The distinct formats the committed table gives a rule, with their hole names, in the
    table's order (by message id)."""
    return list(_by_rule().get(rule_id, ()))


@functools.lru_cache(maxsize=1)
def _by_rule() -> dict[str, list[tuple[str, tuple[str, ...] | None]]]:
    return _group_by_rule(table())


def _group_by_rule(entries) -> dict[str, list[tuple[str, tuple[str, ...] | None]]]:
    out: dict[str, list[tuple[str, tuple[str, ...] | None]]] = {}
    for entry in sorted(entries, key=lambda e: e.id):
        for use in entry.rules:
            known = out.setdefault(use.rule, [])
            if (entry.fmt, use.holes) not in known:
                known.append((entry.fmt, use.holes))
    return out


@functools.lru_cache(maxsize=1)
def derived_sources() -> dict[str, list[tuple[str, tuple[str, ...]]]]:
    """{rule id: [(pattern, the names it defines), ...]} as the committed table holds them:
    what catalog.py builds its derived rules from (read once, no pattern computed at import)."""
    raw = _read(PATTERNS)
    return {rule: [(p, tuple(names)) for p, names in items]
            for rule, items in json.loads(raw)["patterns"].items()}


def rule_patterns(rule_id: str, groups: tuple[str, ...]) -> tuple[str, ...]:
    """The derived patterns of a rule, each defining every name of `groups` (a name its
    format lacks never participates)."""
    return tuple(pattern + "".join(f"(?P<{g}>(?!))?" for g in groups if g not in names)
                 for pattern, names in derived_sources().get(rule_id, ()))
