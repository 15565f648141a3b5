"""Log lines as LogEvents for the stall classifier.

The stall classifier reads logs through this one module: a plain vLLM log, or our own line
records (receive time per line). It keeps only what stall detection needs (time, node,
process, level, message) and leaves the full parse (phases, series, kernels) to the log
parser of `evidence/`. Lines without a usable time inherit the previous line's time
(`t_source="inferred"`).
"""

from __future__ import annotations

import json
import re
from dataclasses import replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Iterable, Iterator

from sparktriage.errors import InputError
from sparktriage.evidence.events import LogEvent

_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]")
# (APIServer pid=12) / (RayWorkerWrapper pid=263, ip=10.0.16.95) / (Worker_TP0 pid=9)
_PREFIX = re.compile(r"^\((?P<name>[A-Za-z_][\w.-]*) pid=(?P<pid>\d+)(?:, ip=(?P<ip>[^)]*))?\)\s?")
_HEAD = re.compile(
    r"^(?P<level>DEBUG|INFO|WARNING|ERROR|CRITICAL) (?P<md>\d\d-\d\d) (?P<hms>\d\d:\d\d:\d\d)"
    r"(?:\.\d+)? \[(?P<file>[^\]:]+):(?P<line>\d+)\] ?(?P<msg>.*)$"
)


def _clean(raw: str) -> str:
    text = _ANSI.sub("", raw)
    if "\r" in text:  # tqdm: keep what a terminal would show last
        parts = [p for p in text.split("\r") if p.strip()]
        text = parts[-1] if parts else ""
    return text.rstrip("\n")


def _stamp(md: str, hms: str, year: int) -> float | None:
    try:
        moment = datetime.strptime(f"{year}-{md} {hms}", "%Y-%m-%d %H:%M:%S")
    except ValueError:
        return None
    return moment.replace(tzinfo=timezone.utc).timestamp()


def parse_line(raw: str, *, line_no: int, origin: str, node: str, t: float | None = None,
               stream: str | None = None, year: int = 1970) -> LogEvent:
    """One line as a LogEvent; `t` (a receive time) wins over the line's own stamp."""
    text = _clean(raw)
    process = pid = relay = None
    while True:  # a Ray relay prefix may precede the vLLM one
        match = _PREFIX.match(text)
        if not match:
            break
        if match.group("ip") is not None or process is not None:
            relay = relay or match.group(0).strip()[1:-1]
        process, pid = match.group("name"), int(match.group("pid"))
        text = text[match.end():]
    level = source_file = None
    source_line = None
    t_source = "receive" if t is not None else "none"
    head = _HEAD.match(text)
    if head:
        level, source_file = head.group("level"), head.group("file")
        source_line = int(head.group("line"))
        message = head.group("msg")
        if t is None:
            t = _stamp(head.group("md"), head.group("hms"), year)
            t_source = "log" if t is not None else "none"
    else:
        message = text.strip()
    return LogEvent(t=t, t_source=t_source, node=node, stream=stream, process=process, pid=pid,
                    relay=relay, level=level, source_file=source_file, source_line=source_line,
                    message=message, raw=raw, line_no=line_no, origin=origin)


def _fill_times(events: list[LogEvent]) -> list[LogEvent]:
    """Give untimed lines the time of the nearest earlier timed line (or the next one)."""
    out: list[LogEvent] = []
    last: float | None = None
    pending: list[LogEvent] = []
    for event in events:
        if event.t is None:
            if last is None:
                pending.append(event)
                continue
            event = _retime(event, last)
        else:
            last = event.t
            for early in pending:
                out.append(_retime(early, event.t))
            pending = []
        out.append(event)
    out.extend(pending)
    return out


def _retime(event: LogEvent, t: float) -> LogEvent:
    return replace(event, t=t, t_source="inferred")


def read_plain_log(path: Path, node: str | None = None) -> list[LogEvent]:
    """Events of a plain vLLM log file (times from the lines' own stamps)."""
    node = node or "local"
    try:
        with open(path, "r", encoding="utf-8", errors="replace", newline="\n") as fh:
            lines = fh.read().split("\n")
    except OSError as exc:
        raise InputError(f"{path}: cannot read ({exc.strerror or exc})") from exc
    if lines and lines[-1] == "":
        lines.pop()
    year = datetime.now(timezone.utc).year
    events = [parse_line(raw, line_no=i, origin=str(path), node=node, year=year)
              for i, raw in enumerate(lines, 1)]
    return _fill_times(events)


def read_line_records(path: Path, origin: str, default_node: str) -> list[LogEvent]:
    """Events of a `*.lines.jsonl` file (docs/formats.md, line records); bad lines are skipped."""
    events: list[LogEvent] = []
    for i, record in enumerate(_records(path), 1):
        if record is None or not isinstance(record.get("line"), str):
            continue
        t = record.get("t")
        t = float(t) if isinstance(t, (int, float)) and not isinstance(t, bool) else None
        events.append(parse_line(record["line"], line_no=i, origin=origin, t=t,
                                 node=str(record.get("node") or default_node),
                                 stream=record.get("stream")))
    return _fill_times(events)


def _records(path: Path) -> Iterator[dict | None]:
    try:
        with open(path, "rb") as fh:
            for raw in fh:
                try:
                    value = json.loads(raw)
                except ValueError:
                    yield None
                    continue
                yield value if isinstance(value, dict) else None
    except OSError as exc:
        raise InputError(f"{path}: cannot read ({exc.strerror or exc})") from exc


def is_line_records(path: Path) -> bool:
    """True when the file looks like our line records rather than a plain log."""
    if path.name.endswith(".lines.jsonl"):
        return True
    try:
        with open(path, "rb") as fh:
            head = fh.readline(4096)
    except OSError:
        return False
    try:
        value = json.loads(head)
    except ValueError:
        return False
    return isinstance(value, dict) and "line" in value and "t" in value


def sort_events(events: Iterable[LogEvent]) -> list[LogEvent]:
    """Events in time order (stable: lines of equal time keep their file order)."""
    return sorted(events, key=lambda e: (e.t if e.t is not None else float("-inf")))
