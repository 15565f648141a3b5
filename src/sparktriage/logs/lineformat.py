"""Split one physical log line into its prefix fields and its message (no timing, no joining).

Recognised line shapes (docs/logs.md lists them with examples):

* vLLM's logging format, 0.11-0.33: ``LEVEL MM-DD HH:MM:SS [file.py:123] message``, preceded by
  any number of parenthesised ``(Name pid=N)`` groups: the process prefix (decorated stdout before
  0.31, the logging format from 0.31), Ray's relay prefix ``(RayWorkerWrapper pid=N, ip=A)``,
  and any custom ``VLLM_LOGGING_PREFIX`` or container prefix before them;
* uvicorn's ``INFO:     text`` lines; tqdm bars (``\\r``-separated updates, no prefix from 0.31);
* torch's C++ glog lines ``[W1129 20:54:04.553711373 utils.cpp:68] ...`` (``[W304 ...`` in March) and
  ``W1129 21:23:28.947000 31225 torch/x.py:53] ...``;
* Python ``logging`` lines with a full date (FlashInfer, Ray): ``2026-03-08 16:44:29,692 - INFO - ...``;
* the JSON formatter of vLLM 0.32+ (one JSON object per line);
* NCCL's ``host:pid:tid [rank] NCCL INFO ...``; Python warnings ``file.py:12: FutureWarning: ...``;
* vLLM 0.6-0.8's format without brackets around the file: ``INFO 03-04 12:34:56 llm_engine.py:234] ...``;
* any collector prefix in front of all that (collectors.py: CI runners, journald, ``docker logs -t``,
  ``kubectl --timestamps``, CRI files, ``[rank0]:``, ``docker compose`` columns): peeled off, its
  stamp kept in the ``collector_*`` fields.

ANSI colour codes are removed everywhere, and so are their remnants in pasted logs (``[36m``
without its ESC byte, in the first 200 characters). torch's older C++ lines ``[E
ProcessGroupNCCL.cpp:475] ...`` (no stamp) are read as ``glog`` too. A line that ends in ``\\r`` is flagged `cont`: vLLM's
NewLineFormatter writes a multi-line message as ``\\r\\n`` + the full prefix, so the next line with
the same prefix continues the same record (the assembler in parser.py joins them).
"""

from __future__ import annotations

import json
import re
from typing import NamedTuple

from sparktriage.logs.collectors import Collected, peel

_ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b[@-Z\\-_]")
_PAREN = re.compile(
    r"\((?:(?P<name>[A-Za-z_][\w.:\-]*) )?(?:rank=(?P<rank>\d{1,6}) )?pid=(?P<pid>\d{1,10})"
    r"(?:, ip=(?P<ip>[^)\s]*))?\) ?"  # 0.8-0.10: "(VllmWorker rank=0 pid=N)"
)
_VLLM = re.compile(
    r"(?P<level>DEBUG|INFO|WARNING|ERROR|CRITICAL|WARN|TRACE) "
    r"(?P<stamp>\d\d-\d\d \d\d:\d\d:\d\d)(?:[.,](?P<frac>\d{1,9}))? "
    r"\[?(?P<file>[^\]\s]+?):(?P<line>\d{1,9})(?:\]|\[\]) ?"  # 0.6-0.8: no "["; "[]": a
    # paste whose markdown rendering turned the "]" into "[]"
)
# a launcher that writes its own "[MM-DD HH:MM:SS] [file.py:N] " header (level optional, before
# the file tag or in front of the stamp) around what vLLM's loggers say
_LAUNCHER = re.compile(
    r"\[(?P<stamp>\d\d-\d\d \d\d:\d\d:\d\d)(?:[.,](?P<frac>\d{1,9}))?\] "
    r"(?:(?P<level>DEBUG|INFO|WARNING|ERROR|CRITICAL|WARN|TRACE) )?"
    r"\[(?P<file>[^\]\s]+?\.py):(?P<line>\d{1,9})\] ?"
)
_STAMP_HINT = re.compile(r"\d\d-\d\d \d\d:\d\d:\d\d")
_UVICORN = re.compile(r"(?P<level>DEBUG|INFO|WARNING|ERROR|CRITICAL|TRACE):\s+")
_GLOG = re.compile(
    r"\[?(?P<level>[IWEF])(?P<mm>\d\d?)(?P<dd>\d\d) (?P<hms>\d\d:\d\d:\d\d)(?:\.(?P<frac>\d{1,9}))?"
    r"(?: +\d+)? (?P<file>[^\s\]:]+):(?P<line>\d{1,9})\] ?"
)
_GLOG_OLD = re.compile(r"\[(?P<level>[IWEF]) (?P<file>[^\s\]:]+):(?P<line>\d{1,9})\] ?")  # torch < 2.4
_REMNANT = re.compile(r"\s*\[(?:\d{1,3};)*\d{1,3}m")  # ANSI colours whose ESC was lost in a paste
_REMNANT_HINT = re.compile(r"\[(?:\d{1,3};)*\d{1,3}m")
_PYLOG = re.compile(
    r"(?P<date>\d{4}-\d\d-\d\d)[ T](?P<hms>\d\d:\d\d:\d\d)(?:[.,](?P<frac>\d{1,9}))?"
    r"(?:\s*-\s*|\s+)(?P<level>DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL)(?:\s*-\s*|\s+)"
    r"(?:(?P<file>[\w./-]+\.py):(?P<line>\d+)(?:\s*-\s*|\s+))?"
)
_NCCL = re.compile(r"\S+:\d+:\d+ \[\d+\] NCCL (?P<level>INFO|WARN|ERROR|TRACE) ")
_PYWARN = re.compile(r"(?P<file>\S+?\.py):(?P<line>\d+): (?P<cat>[A-Z]\w*Warning): ")

_LEVELS = {"WARN": "WARNING", "I": "INFO", "W": "WARNING", "E": "ERROR", "F": "CRITICAL",
           "TRACE": "DEBUG"}


class LineFields(NamedTuple):
    """What one physical line says about itself, before records are joined and timed."""

    message: str
    level: str | None = None
    process: str | None = None
    pid: int | None = None
    relay: str | None = None
    source_file: str | None = None
    source_line: int | None = None
    stamp: str | None = None  # "MM-DD HH:MM:SS" (year-less; clock.py adds the year)
    stamp_full: str | None = None  # "YYYY-MM-DD HH:MM:SS" (full-date formats)
    frac: str | None = None  # sub-second digits when the format has them
    utc_offset: str | None = None  # for stamp_full from RFC 3339 ("Z", "+02:00")
    receive_stamp: bool = False  # (kept for old callers: always False; see collector_*)
    cont: bool = False  # ended in "\r": vLLM continues this record on the next line
    kind: str = "text"  # vllm | uvicorn | glog | pylog | json | nccl | pywarn | tqdm | text
    collector: str | None = None  # the collector prefix peeled off (collectors.Collected.kind)
    collector_full: str | None = None  # its "YYYY-MM-DD HH:MM:SS" stamp (RFC 3339 and dated forms)
    collector_stamp: str | None = None  # its "MM-DD HH:MM:SS" stamp (journald: no year)
    collector_frac: str | None = None
    collector_offset: str | None = None  # "Z", "+02:00"; None: the reader's zone
    rank: int | None = None  # "[rank0]:"
    stream: str | None = None  # "stdout"/"stderr" where the collector says (CRI, GitLab)


def has_time(fields: LineFields) -> bool:
    """Does the line carry a time stamp of its own or of its collector?"""
    return (fields.stamp is not None or fields.stamp_full is not None
            or fields.collector_full is not None or fields.collector_stamp is not None)


def strip_ansi(text: str) -> str:
    """Remove ANSI escape sequences (colours, cursor moves)."""
    return _ANSI.sub("", text) if "\x1b" in text else text


def _take_parens(text: str) -> tuple[list[re.Match], str]:
    groups = []
    while text.startswith("("):
        m = _PAREN.match(text)
        if m is None:
            break
        groups.append(m)
        text = text[m.end():]
    return groups, text


def _prefix_owner(groups: list[re.Match]) -> tuple[str | None, int | None, str | None]:
    """(process, pid, relay) from the parenthesised groups in front of a line."""
    if not groups:
        return None, None, None
    outer = groups[0]
    relay_like = outer["ip"] is not None or outer["name"] is None or (
        outer["name"] or "").startswith("Ray")
    if len(groups) == 1:
        if relay_like:
            return None, None, outer.group(0).strip()[1:-1]
        return _name(outer), int(outer["pid"]), None
    inner = groups[-1]
    return _name(inner), int(inner["pid"]), outer.group(0).strip()[1:-1]


def _name(group: re.Match) -> str | None:
    """The process name; 0.8-0.10 workers name their rank apart: "VllmWorker rank=1"."""
    if group["rank"] is not None and group["name"]:
        return f"{group['name']} rank={group['rank']}"
    return group["name"]


def _overwrite(text: str) -> str:
    """Terminal semantics of an inner carriage return: the last non-empty segment is shown."""
    if "\r" not in text:
        return text
    parts = [p for p in text.split("\r") if p.strip()]
    return parts[-1] if parts else ""


FAST_PREFIX = (  # the common case, "(Proc pid=N) LEVEL MM-DD HH:MM:SS [file:line] ", ASCII only
    r"\((?P<name>[A-Za-z_][A-Za-z0-9_.:\-]*) pid=(?P<pid>[0-9]{1,10})\) "
    r"(?P<level>DEBUG|INFO|WARNING|ERROR|CRITICAL) (?P<stamp>[0-9]{2}-[0-9]{2} [0-9]{2}:[0-9]{2}:[0-9]{2}) "
    r"\[(?P<file>[^\]\s]+?):(?P<line>[0-9]{1,9})\] ?"
)
_FAST = re.compile(FAST_PREFIX, re.ASCII)


def parse_line(text: str) -> LineFields:
    """Parse one physical line (decoded, without its newline). Never raises."""
    if text[:1] == "(" and "\x1b" not in text:
        m = _FAST.match(text)  # the common case: one regex for prefix and header
        if m is not None:
            cont = text.endswith("\r")
            message = text[m.end():-1] if cont else text[m.end():]
            if "\r" in message:
                message = _overwrite(message)
            file = m["file"]
            return LineFields(message, m["level"], m["name"], int(m["pid"]), None,
                              file.rsplit("/", 1)[-1] if "/" in file else file, int(m["line"]),
                              m["stamp"], None, None, None, False, cont, "vllm")
    text = strip_ansi(text)
    if "[" in text and "m" in text and _REMNANT_HINT.search(text, 0, 200) is not None:
        text = _REMNANT.sub("", text)
    cont = text.endswith("\r")
    if cont:
        text = text.rstrip("\r")
    collected = None
    first = text[:1]
    if first in _COLLECTOR_FIRST or (first in _MONTH_FIRST and text[3:4] == " ") or (
            first in " |" and text.lstrip(" ")[:2] == "| ") or (
            first.isalnum() and "| " in text[:80]):
        text, collected = peel(text)
    lead = text.lstrip("\r")
    groups, rest = _take_parens(lead)
    process, pid, relay = _prefix_owner(groups)
    rest = rest.lstrip("\r")
    fields = _parse_body(rest, process, pid, relay, cont)
    if fields is None and _STAMP_HINT.search(rest, 0, 400):
        # A custom VLLM_LOGGING_PREFIX or a container prefix in front of vLLM's format.
        m = _VLLM.search(rest, 0, 400)
        if m:
            groups = groups + list(_PAREN.finditer(rest, 0, m.start()))
            process, pid, relay = _prefix_owner(groups)
            fields = _vllm_fields(m, rest[m.end():], process, pid, relay, cont)
    if fields is None:
        message = _overwrite(rest)
        kind = "tqdm" if ("\r" in text or _looks_like_bar(message)) else "text"
        fields = LineFields(message=message, process=process, pid=pid, relay=relay,
                            cont=cont, kind=kind)
    if collected is not None:
        fields = _with_collector(fields, collected)
    if fields.message.endswith(_RAY_REPEAT_END):
        fields = fields._replace(message=_RAY_REPEAT.sub("", fields.message))
    return fields


_COLLECTOR_FIRST = frozenset("0123456789[")  # stamps, [rank0]:; then months, columns, compose
_MONTH_FIRST = frozenset("JFMASOND")
_RAY_REPEAT_END = "across cluster]"
_RAY_REPEAT = re.compile(r"\s*\[repeated \d+x across cluster\]$")


def _with_collector(fields: LineFields, c: Collected) -> LineFields:
    return fields._replace(collector=c.kind, collector_full=c.stamp_full,
                           collector_stamp=c.stamp, collector_frac=c.frac,
                           collector_offset=c.utc_offset, rank=c.rank, stream=c.stream)


def _looks_like_bar(message: str) -> bool:
    return "% Completed |" in message or ("%|" in message and "it/s" in message) or (
        "%|" in message and "s/it" in message)


def _vllm_fields(m: re.Match, message: str, process, pid, relay, cont) -> LineFields:
    level = m["level"]
    return LineFields(
        message=_overwrite(message), level=_LEVELS.get(level, level), process=process, pid=pid,
        relay=relay, source_file=m["file"].rsplit("/", 1)[-1], source_line=int(m["line"]),
        stamp=m["stamp"], frac=m["frac"], cont=cont, kind="vllm",
    )


def _parse_body(rest: str, process, pid, relay, cont) -> LineFields | None:
    """Formats recognised at the start of the text after the parenthesised prefixes."""
    if not rest:
        return LineFields(message="", process=process, pid=pid, relay=relay, cont=cont)
    first = rest[0]
    if first in "DIWECT":
        m = _VLLM.match(rest)
        if m:
            return _vllm_fields(m, rest[m.end():], process, pid, relay, cont)
        m = _UVICORN.match(rest)
        if m:
            return LineFields(message=rest[m.end():], level=_LEVELS.get(m["level"], m["level"]),
                              process=process, pid=pid, relay=relay, cont=cont, kind="uvicorn")
    if first == "[" and rest[3:4] == "-" and rest[6:7] == " ":
        m = _LAUNCHER.match(rest)
        if m:
            level = m["level"]
            return LineFields(
                message=_overwrite(rest[m.end():]),
                level=_LEVELS.get(level, level) if level else None,
                process=process, pid=pid, relay=relay,
                source_file=m["file"].rsplit("/", 1)[-1], source_line=int(m["line"]),
                stamp=m["stamp"], frac=m["frac"], cont=cont, kind="vllm")
    if first == "[" and rest[2:3] == " ":
        m = _GLOG_OLD.match(rest)
        if m:
            return LineFields(
                message=rest[m.end():], level=_LEVELS[m["level"]], process=process, pid=pid,
                relay=relay, source_file=m["file"].rsplit("/", 1)[-1],
                source_line=int(m["line"]), cont=cont, kind="glog")
    if first == "[" or (first in "IWEF" and len(rest) > 5 and rest[1:4].isdigit()):
        m = _GLOG.match(rest)
        if m:
            level = _LEVELS[m["level"]]
            return LineFields(
                message=rest[m.end():], level=level, process=process, pid=pid, relay=relay,
                source_file=m["file"].rsplit("/", 1)[-1], source_line=int(m["line"]),
                stamp=f"{int(m['mm']):02d}-{m['dd']} {m['hms']}", frac=m["frac"], cont=cont,
                kind="glog",
            )
    if first.isdigit() and len(rest) > 19 and rest[4] == "-":
        m = _PYLOG.match(rest)
        if m:
            file = m["file"]
            return LineFields(
                message=rest[m.end():], level=_LEVELS.get(m["level"], m["level"]),
                process=process, pid=pid, relay=relay,
                source_file=file.rsplit("/", 1)[-1] if file else None,
                source_line=int(m["line"]) if m["line"] else None,
                stamp_full=f"{m['date']} {m['hms']}", frac=m["frac"], cont=cont, kind="pylog",
            )
    if first == "{" and rest.rstrip().endswith("}"):
        fields = _json_fields(rest, cont)
        if fields is not None:
            return fields
    if "NCCL" in rest:
        m = _NCCL.match(rest)
        if m:
            return LineFields(message=rest[m.end():], level=_LEVELS.get(m["level"], m["level"]),
                              process=process, pid=pid, relay=relay, cont=cont, kind="nccl")
    if "Warning: " in rest:
        m = _PYWARN.match(rest)
        if m:
            return LineFields(
                message=rest, level="WARNING", process=process, pid=pid, relay=relay,
                source_file=m["file"].rsplit("/", 1)[-1], source_line=int(m["line"]),
                cont=cont, kind="pywarn",
            )
    return None


_JSON_TIME = re.compile(
    r"(?:(?P<year>\d{4})-)?(?P<mm>\d\d)-(?P<dd>\d\d)[ T](?P<hms>\d\d:\d\d:\d\d)"
    r"(?:[.,](?P<frac>\d{1,9}))?(?P<tz>Z|[+-]\d\d:?\d\d)?"
)


def _json_fields(text: str, cont: bool) -> LineFields | None:
    """vLLM 0.32+ `--logging-config.formatter json` (python-json-logger) records."""
    if len(text) > 1_000_000:
        return None
    try:
        doc = json.loads(text)
    except (ValueError, RecursionError):
        return None
    if not isinstance(doc, dict):
        return None
    message = doc.get("message", doc.get("msg"))
    if not isinstance(message, str):
        return None
    level = doc.get("levelname", doc.get("level"))
    level = str(level).upper() if level is not None else None
    level = _LEVELS.get(level, level) if level else None
    pid = doc.get("process")
    proc = doc.get("vllm_process_name") or doc.get("processName")
    file = doc.get("filename") or doc.get("fileinfo")
    line = doc.get("lineno")
    stamp = stamp_full = frac = tz = None
    when = doc.get("asctime", doc.get("timestamp", doc.get("time")))
    if isinstance(when, str):
        m = _JSON_TIME.search(when)
        if m:
            frac, tz = m["frac"], m["tz"]
            if m["year"]:
                stamp_full = f"{m['year']}-{m['mm']}-{m['dd']} {m['hms']}"
            else:
                stamp = f"{m['mm']}-{m['dd']} {m['hms']}"
    return LineFields(
        message=message.replace("\r\n", "\n"), level=level if level in _KNOWN_LEVELS else None,
        process=str(proc) if proc is not None else None,
        pid=pid if isinstance(pid, int) and not isinstance(pid, bool) else None,
        source_file=str(file).rsplit("/", 1)[-1] if file else None,
        source_line=line if isinstance(line, int) and not isinstance(line, bool) else None,
        stamp=stamp, stamp_full=stamp_full, frac=frac, utc_offset=tz, cont=cont, kind="json",
    )


_KNOWN_LEVELS = {"DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"}
