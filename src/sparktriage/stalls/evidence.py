"""What the stall classifier reads: per node, log events, samples, stacks and dmesg lines.

`load(path)` accepts an evidence bundle (a folder or its `.tar.gz`, docs/formats.md), a single
line-records file, or a plain vLLM log. A plain log gives a node with the `log` source only;
the classifier then says which signals were missing rather than guessing them. Every node's
records are shifted by its `clock.json` offset onto the collecting machine's clock.
"""

from __future__ import annotations

import bisect
import json
import tarfile
import tempfile
from dataclasses import dataclass, field, replace
from pathlib import Path

from sparktriage.errors import InputError
from sparktriage.evidence.events import LogEvent
from sparktriage.stalls import logview

SAMPLE_SOURCES = ("host", "disk", "net", "procs", "gpu")
SOURCES = ("log",) + SAMPLE_SOURCES + ("stacks", "dmesg")
BUNDLE_SCHEMA = 1

try:  # orjson parses sample lines 3-5x faster; the standard library is the fallback
    import orjson as _fastjson

    def _loads(raw: bytes):
        return _fastjson.loads(raw)
except ImportError:  # pragma: no cover - exercised only where orjson is absent
    def _loads(raw: bytes):
        return json.loads(raw)


@dataclass
class Series:
    """Time-ordered records of one source on one node."""

    records: list[dict] = field(default_factory=list)
    times: list[float] = field(default_factory=list)

    def window(self, start: float, end: float) -> list[dict]:
        """Records with start <= t <= end."""
        lo = bisect.bisect_left(self.times, start)
        hi = bisect.bisect_right(self.times, end)
        return self.records[lo:hi]

    def __len__(self) -> int:
        return len(self.records)


@dataclass
class NodeEvidence:
    """Everything recorded on one node."""

    name: str
    events: list[LogEvent] = field(default_factory=list)
    series: dict[str, Series] = field(default_factory=dict)  # host/disk/net/procs/gpu/stacks/dmesg
    skipped: dict[str, str] = field(default_factory=dict)  # source -> why it was not recorded

    def has(self, source: str) -> bool:
        if source == "log":
            return bool(self.events)
        return len(self.series.get(source, ())) > 0

    def get(self, source: str) -> Series:
        return self.series.get(source) or Series()

    def span(self) -> tuple[float, float] | None:
        times = [e.t for e in self.events if e.t is not None]
        for series in self.series.values():
            if series.times:
                times += [series.times[0], series.times[-1]]
        return (min(times), max(times)) if times else None


@dataclass
class Evidence:
    """A whole startup: one or more nodes, and how it was recorded."""

    origin: str  # the path given
    form: str  # "bundle", "line-records" or "log"
    nodes: dict[str, NodeEvidence]
    started: float | None = None
    ended: float | None = None
    outcome: str | None = None

    def span(self) -> tuple[float, float] | None:
        spans = [s for s in (n.span() for n in self.nodes.values()) if s]
        if not spans:
            return None
        start = min(s[0] for s in spans)
        end = max(s[1] for s in spans)
        if self.started is not None:
            start = min(start, self.started)
        if self.ended is not None:
            end = max(end, self.ended)
        return start, end

    def sources(self) -> set[str]:
        return {s for n in self.nodes.values() for s in SOURCES if n.has(s)}


def load(path: Path) -> Evidence:
    """Read a bundle folder, a bundle `.tar.gz`, a line-records file or a plain log."""
    if not path.exists():
        raise InputError(f"{path}: no such file or folder")
    if path.is_dir():
        return load_bundle(path)
    if path.name.endswith((".tar.gz", ".tgz")):
        return _load_archive(path)
    if logview.is_line_records(path):
        events = logview.sort_events(logview.read_line_records(path, path.name, "local"))
        return _from_events(path, "line-records", events)
    return _from_events(path, "log", logview.sort_events(logview.read_plain_log(path)))


def _from_events(path: Path, form: str, events: list[LogEvent]) -> Evidence:
    if not any(e.t is not None for e in events):
        raise InputError(f"{path}: no timed log lines (is this a vLLM log?)")
    nodes: dict[str, NodeEvidence] = {}
    for event in events:
        nodes.setdefault(event.node, NodeEvidence(event.node)).events.append(event)
    return Evidence(origin=str(path), form=form, nodes=nodes)


def _load_archive(path: Path) -> Evidence:
    with tempfile.TemporaryDirectory(prefix="sparktriage-bundle-") as tmp:
        try:
            with tarfile.open(path, "r:gz") as archive:
                archive.extractall(tmp, filter="data")  # refuses absolute paths, links out, ..
        except (tarfile.TarError, OSError, EOFError) as exc:
            raise InputError(f"{path}: not a readable bundle archive ({exc})") from exc
        roots = [p for p in Path(tmp).iterdir() if p.is_dir()]
        if len(roots) != 1:
            raise InputError(f"{path}: a bundle archive holds exactly one top-level folder")
        evidence = load_bundle(roots[0])
        evidence.origin = str(path)
        return evidence


def _read_json(path: Path) -> dict:
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise InputError(f"{path}: not a readable JSON document ({exc})") from exc
    if not isinstance(value, dict):
        raise InputError(f"{path}: expected a JSON object")
    return value


def load_bundle(root: Path) -> Evidence:
    """Read an evidence bundle folder (docs/formats.md, schema_version 1)."""
    meta_path = root / "bundle.json"
    if not meta_path.exists():
        raise InputError(f"{root}: not an evidence bundle (no bundle.json)")
    meta = _read_json(meta_path)
    version = meta.get("schema_version")
    if version != BUNDLE_SCHEMA:
        raise InputError(f"{meta_path}: bundle schema_version {version!r} is not supported "
                         f"(this sparktriage reads {BUNDLE_SCHEMA})")
    names = [str(n) for n in meta.get("nodes") or []]
    node_root = root / "nodes"
    if node_root.is_dir():
        names += sorted(p.name for p in node_root.iterdir() if p.is_dir() and p.name not in names)
    skipped = _manifest_skips(root / "manifest.jsonl")
    nodes = {name: _load_node(root, name, skipped.get(name, {})) for name in names}
    return Evidence(origin=str(root), form="bundle", nodes=nodes,
                    started=_num(meta.get("started")), ended=_num(meta.get("ended")),
                    outcome=meta.get("outcome") if isinstance(meta.get("outcome"), str) else None)


def _num(value) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


_COLLECTOR_SOURCE = (("stack", "stacks"), ("py-spy", "stacks"), ("pyspy", "stacks"),
                     ("dmesg", "dmesg"), ("proc", "procs"), ("gpu", "gpu"), ("nvml", "gpu"),
                     ("disk", "disk"), ("net", "net"), ("host", "host"), ("log", "log"))


def source_of_collector(name: str) -> str | None:
    """Which evidence source a manifest collector name feeds."""
    lowered = name.lower()
    for needle, source in _COLLECTOR_SOURCE:
        if needle in lowered:
            return source
    return None


def _manifest_skips(path: Path) -> dict[str, dict[str, str]]:
    out: dict[str, dict[str, str]] = {}
    if not path.exists():
        return out
    for record in _iter_records(path):
        reason = record.get("skipped") or record.get("error")
        source = source_of_collector(str(record.get("collector") or ""))
        if reason and source:
            out.setdefault(str(record.get("node") or ""), {})[source] = str(reason)
    return out


def _iter_records(path: Path):
    try:
        with open(path, "rb") as fh:
            for raw in fh:
                try:
                    value = _loads(raw)
                except ValueError:
                    continue  # a torn last line of a crashed collector
                if isinstance(value, dict):
                    yield value
    except OSError as exc:
        raise InputError(f"{path}: cannot read ({exc.strerror or exc})") from exc


def _load_series(path: Path, offset: float) -> Series:
    series = Series()
    if not path.exists():
        return series
    pairs = []
    for record in _iter_records(path):
        t = _num(record.get("t"))
        if t is None:
            continue
        if offset:
            t += offset
            record["t"] = t
        pairs.append((t, record))
    if any(pairs[i][0] > pairs[i + 1][0] for i in range(len(pairs) - 1)):
        pairs.sort(key=lambda p: p[0])
    series.times = [p[0] for p in pairs]
    series.records = [p[1] for p in pairs]
    return series


def _load_node(root: Path, name: str, skipped: dict[str, str]) -> NodeEvidence:
    base = root / "nodes" / name
    offset = 0.0
    if (base / "clock.json").exists():
        offset = _num(_read_json(base / "clock.json").get("offset_s")) or 0.0
    node = NodeEvidence(name, skipped=dict(skipped))
    events: list[LogEvent] = []
    logs = base / "logs"
    if logs.is_dir():
        for log in sorted(logs.glob("*.lines.jsonl")):
            rel = str(log.relative_to(root))
            events += logview.read_line_records(log, rel, name)
    # the folder names the node; the clock offset moves every time onto the collector's clock
    events = [replace(e, node=name, t=e.t + offset if e.t is not None else None) for e in events]
    node.events = logview.sort_events(events)
    for source in SAMPLE_SOURCES:
        node.series[source] = _load_series(base / "samples" / f"{source}.jsonl", offset)
    node.series["stacks"] = _load_series(base / "stacks.jsonl", offset)
    node.series["dmesg"] = _load_series(base / "dmesg.jsonl", offset)
    return node
