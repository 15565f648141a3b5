"""Build evidence bundles (or plain logs) from readable specs: fixtures and benchmarks.

A spec (YAML, see docs/rules.md "Fixtures") describes per node the log lines at times
relative to t0, sample ranges (a record repeated every `every` seconds, with fields ramped
linearly), py-spy dumps and dmesg lines. `write_bundle` turns it into the bundle layout of
docs/formats.md, byte for byte what the collectors write; `write_log` into a plain vLLM log.
Nothing here runs anything: specs are data.
"""

from __future__ import annotations

import copy
import json
import time as _time
import zlib
from pathlib import Path
from typing import Any

import yaml

from sparktriage import yamlsafe
from sparktriage.errors import InputError

T0 = 1_790_000_000.0  # a fixed epoch so that generated bundles are reproducible
_SAMPLE_SOURCES = ("host", "disk", "net", "procs", "gpu")
_COLLECTORS = {"host": "host", "disk": "disk", "net": "net", "procs": "procs", "gpu": "gpu",
               "stacks": "py-spy", "dmesg": "dmesg", "log": "log"}


def _pid(process: str) -> int:
    return 1000 + zlib.crc32(process.encode()) % 50000


def format_line(t: float, process: str | None, level: str, message: str) -> str:
    """A vLLM 0.31+ log line: `(Proc pid=N) LEVEL MM-DD HH:MM:SS [file.py:1] message`."""
    stamp = _time.strftime("%m-%d %H:%M:%S", _time.gmtime(t))
    head = f"{level} {stamp} [synth.py:1] {message}"
    return f"({process} pid={_pid(process)}) {head}" if process else head


def _line(item: Any, t0: float, segments: dict, offset: float = 0.0
          ) -> list[tuple[float, str, str]]:
    """(t, stream, text) lines of one log item of a spec; `offset` shifts a segment."""
    if isinstance(item, dict) and "segment" in item:
        name = item["segment"]
        if name not in segments:
            raise InputError(f"unknown log segment {name!r}")
        at = offset + float(item.get("at", 0))
        return [x for entry in segments[name] for x in _line(entry, t0, segments, at)]
    if not isinstance(item, list) or len(item) < 2:
        raise InputError(f"a log item is [t, text], [t, process, message] or "
                         f"[t, process, level, message]; got {item!r}")
    t = float(item[0]) + offset
    if len(item) == 2:
        text = str(item[1])
        return [(t, "stderr" if text.startswith(("Loading ", "Capturing ")) else "stdout", text)]
    process = item[1]
    level, message = ("INFO", item[2]) if len(item) == 3 else (item[2], item[3])
    return [(t, "stdout", format_line(t0 + t, process, level, str(message)))]


def node_lines(node: dict, t0: float, base: Path, library: dict) -> list[tuple[float, str, str]]:
    """(t, stream, text) of a node's log, spec times relative to t0 (library: segments)."""
    segments = library.get("segments", {})
    items = list(node.get("log") or [])
    if node.get("log_ref"):
        ref = base / node["log_ref"]
        items = _read_yaml(ref).get("log", []) + items
    lines = [x for item in items for x in _line(item, t0, segments)]
    return sorted(lines, key=lambda x: x[0])


def _set(record: dict, path: str, value: Any) -> None:
    keys = path.split(".")
    for key in keys[:-1]:
        record = record.setdefault(key, {})
    record[keys[-1]] = value


def _merge(base: dict, over: dict) -> dict:
    out = copy.deepcopy(base)
    for key, value in (over or {}).items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def expand_ranges(ranges: list[dict], t0: float, profiles: dict | None = None) -> list[dict]:
    """Records of a sample source: each range repeats `record` from..to every `every` s.

    `profile: NAME` starts the record from a named profile of the library; `record` (or
    `records`, one per process) overrides it; `ramp: {field.path: [first, last]}` varies a
    field linearly over the range."""
    out = []
    profiles = profiles or {}
    for spec in ranges or []:
        start, end = float(spec["from"]), float(spec["to"])
        every = float(spec.get("every", 1.0))
        steps = int(round((end - start) / every))
        base = profiles.get(spec["profile"]) if spec.get("profile") else {}
        if spec.get("profile") and base is None:
            raise InputError(f"unknown sample profile {spec['profile']!r}")
        templates = [_merge(base, r) for r in (spec.get("records") or [spec.get("record") or {}])]
        for i in range(steps + 1):
            t = start + i * every
            frac = i / steps if steps else 0.0
            for template in templates:
                record = copy.deepcopy(template)
                for path, (a, b) in (spec.get("ramp") or {}).items():
                    _set(record, path, a + (b - a) * frac)
                record["t"] = round(t0 + t, 3)
                out.append(record)
    return sorted(out, key=lambda r: r["t"])


def _frames(frames: list) -> list[dict]:
    out = []
    for frame in frames:
        if isinstance(frame, dict):
            out.append(frame)
            continue
        text = str(frame)
        function, _, rest = text.partition(" (")
        file, _, line = rest.rstrip(")").rpartition(":")
        if not file:
            file, line = rest.rstrip(")"), ""
        out.append({"function": function, "file": file,
                    "line": int(line) if line.isdigit() else None})
    return out


def expand_stacks(ranges: list[dict], t0: float) -> list[dict]:
    out = []
    for spec in ranges or []:
        start, end = float(spec["from"]), float(spec["to"])
        every = float(spec.get("every", 10.0))
        t = start
        while t <= end + 1e-9:
            for dump in spec["dumps"]:
                record = {"t": round(t0 + t, 3), "pid": dump.get("pid", 0),
                          "role": dump.get("role"), "rank": dump.get("rank"),
                          "threads": [{"tid": th.get("tid", i + 1),
                                       "name": th.get("name", "MainThread"),
                                       "active": th.get("active", True),
                                       "gil": th.get("gil", False),
                                       "frames": _frames(th.get("frames", []))}
                                      for i, th in enumerate(dump.get("threads", []))],
                          "error": None}
                out.append(record)
            t += every
    return sorted(out, key=lambda r: r["t"])


def _read_yaml(path: Path) -> dict:
    try:
        data, _ = yamlsafe.load_file(path, "spec")
    except yaml.YAMLError as exc:
        raise InputError(f"{path}: cannot read spec ({exc})") from exc
    if not isinstance(data, dict):
        raise InputError(f"{path}: a spec is a YAML mapping")
    return data


def load_spec(path: Path) -> dict:
    return _read_yaml(path)


def _dumps(record: dict) -> str:
    return json.dumps(record, separators=(",", ":"), ensure_ascii=False)


def _write_jsonl(path: Path, records: list[dict]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8") as fh:
        for record in records:
            fh.write(_dumps(record) + "\n")


def write_bundle(spec: dict, out: Path, base: Path, segments: dict | None = None,
                 t0: float = T0) -> Path:
    """Write the bundle a spec describes into `out`; return `out`."""
    segments = segments or {}
    nodes = spec.get("nodes") or {}
    if not nodes:
        raise InputError("a spec needs at least one node")
    if out.exists() and any(out.iterdir()):
        raise InputError(f"{out}: exists and is not empty (a bundle is written into a new folder)")
    out.mkdir(parents=True, exist_ok=True)
    manifest, ends = [], []
    for name, node in nodes.items():
        node = node or {}
        root = out / "nodes" / name
        lines = node_lines(node, t0, base, segments)
        records = [{"t": round(t0 + t, 3), "node": name, "stream": stream, "line": text}
                   for t, stream, text in lines]
        _write_jsonl(root / "logs" / "server.lines.jsonl", records)
        ends += [r["t"] for r in records]
        (root / "clock.json").write_text(_dumps({"offset_s": 0.0, "rtt_s": 0.0,
                                                 "method": "local"}) + "\n")
        (root / "environment.json").write_text(_dumps(node.get("environment") or {}) + "\n")
        samples = node.get("samples") or {}
        skipped = node.get("skipped") or {}
        for source in _SAMPLE_SOURCES:
            recs = expand_ranges(samples.get(source), t0, segments.get("profiles"))
            if recs:
                _write_jsonl(root / "samples" / f"{source}.jsonl", recs)
                ends.append(recs[-1]["t"])
            manifest.append(_manifest(name, source, len(recs), skipped.get(source)
                                      or (None if recs else "not recorded in this spec")))
        stacks = expand_stacks(node.get("stacks"), t0)
        if stacks:
            _write_jsonl(root / "stacks.jsonl", stacks)
        manifest.append(_manifest(name, "stacks", len(stacks), skipped.get("stacks")
                                  or (None if stacks else "not recorded in this spec")))
        dmesg = [{"t": round(t0 + float(t), 3), "line": str(text), "level": None,
                  "kernel_t": None} for t, text in node.get("dmesg") or []]
        if dmesg or "dmesg" in node:
            _write_jsonl(root / "dmesg.jsonl", dmesg)
        manifest.append(_manifest(name, "dmesg", len(dmesg), skipped.get("dmesg")
                                  or (None if "dmesg" in node else "not recorded in this spec")))
    meta = {"schema_version": 1, "kind": "sparktriage-bundle", "created": "synthetic",
            "tool_version": "synth", "origin": "collect", "target": {"cmd": ["vllm", "serve"]},
            "nodes": list(nodes), "interval_s": 1.0, "started": t0,
            "ended": max(ends) if ends else t0, "outcome": spec.get("outcome", "unknown")}
    (out / "bundle.json").write_text(json.dumps(meta, indent=2) + "\n")
    _write_jsonl(out / "manifest.jsonl", manifest)
    return out


def _manifest(node: str, source: str, records: int, skipped: str | None) -> dict:
    return {"collector": _COLLECTORS[source], "node": node, "command": None, "started": T0,
            "ended": T0, "duration_s": 0.0, "rc": 0 if skipped is None else None,
            "records": records, "truncated": False, "skipped": skipped, "error": None}


def write_log(spec: dict, out: Path, base: Path, segments: dict | None = None,
              t0: float = T0, node: str | None = None) -> Path:
    """Write one node's lines as a plain vLLM log file."""
    nodes = spec.get("nodes") or {}
    name = node or next(iter(nodes))
    lines = node_lines(nodes[name] or {}, t0, base, segments or {})
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("".join(text + "\n" for _, _, text in lines), encoding="utf-8")
    return out
