"""Prefixes that a log collector writes in front of a server's own line, peeled off and kept.

A vLLM log rarely reaches us as vLLM wrote it. Whatever carried it may have added its own
prefix, often with a time stamp of its own (docs/logs.md, "Collector prefixes"):

* an RFC 3339 stamp: GitHub Actions / Azure runners (``2025-03-04T12:34:56.1234567Z ``),
  ``docker logs --timestamps`` and ``kubectl logs --timestamps`` (nanoseconds, ``Z`` or an
  offset), GitLab's ``<stamp> 00O `` stream tag, a Kubernetes CRI log file
  (``<stamp> stdout F ``), rsyslog / ``journalctl -o short-iso`` (``<stamp> host ident[pid]: ``);
* journald's default form ``Mar 04 12:34:56 host ident[pid]: `` (no year, the host's zone;
  ``-o short-precise`` adds microseconds), and ``-o short-unix`` (``1709555696.123456 host
  ident[pid]: ``, absolute);
* ``kubectl logs --prefix``'s ``[pod/name/container] ``;
* a ``YYYY-MM-DD HH:MM:SS`` stamp (``ts``, other line stampers) directly in front of vLLM's
  own format, a process group, or a traceback's lines;
* ``[rank0]:`` / ``[default0]:`` (torchrun's per-rank prefix); ``0: `` task labels (``srun
  --label``) in front of a worker's line;
* ``YYYY-MM-DD HH:MM:SS.mmm | `` (log viewers' exports), and ``YYYY-MM-DD HH:MM:SS.mmm
  [Info] (Process) `` (a launcher's stamp, level tag and component, lemonade's; its own lines,
  e.g. a health poll, are timed by it too);
* ``docker compose``'s ``service-1  | `` column; Buildkite's ``  | `` column;
* a CI step's bracketed stamp ``[2026-02-24T20:21:58Z] ``, and a launcher script's
  ``[2026-01-26 16:56:13] `` in front of its own lines and the server's.

`peel` removes any number of them from the front of a line (in any order, at most
`MAX_LAYERS`) and returns what they said: the outermost stamp with a date wins (it is the last
collector's clock), a rank, a stream. The parser turns the stamp into a time (parser.py:
a stamp with a year and an offset is absolute and gives vLLM's year-less stamps their year).
Never raises; bounded work per line (anchored regexes on the first few hundred characters).
"""

from __future__ import annotations

import datetime as _dt
import re
from typing import NamedTuple

MAX_LAYERS = 4
MONTHS = {m: i for i, m in enumerate(
    ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"), 1)}

_RFC3339 = re.compile(
    r"(?P<open>\[)?(?P<date>\d{4}-\d\d-\d\d)T(?P<hms>\d\d:\d\d:\d\d)(?:[.,](?P<frac>\d{1,9}))?"
    r"(?P<tz>Z|[+-]\d\d:?\d\d)(?(open)\]) "
    r"(?:(?P<cri>stdout|stderr) [FP] |(?P<gitlab>\d\d)(?P<gstream>[OE])\+? |"
    r"(?P<host>\S{1,253}) (?P<ident>[^\s\[\]:]{1,64})\[(?P<pid>\d{1,10})\]: )?"
)
_JOURNALD = re.compile(
    r"(?P<mon>Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) (?P<day>[ 0-3]?\d) "
    r"(?P<hms>\d\d:\d\d:\d\d)(?:\.(?P<frac>\d{1,9}))? (?P<host>\S{1,253}) "
    r"(?P<ident>[^\s\[\]:]{1,64})(?:\[(?P<pid>\d{1,10})\])?: "
)
# a plain date stamp: with a " | " column after it (log viewers' exports), or where vLLM's own
# header, a process group or a rank prefix follows it
_AFTER = (r"(?=\(|\[rank|(?:DEBUG|INFO|WARNING|ERROR|CRITICAL) \d\d-\d\d \d\d:\d\d:\d\d |"
          r"Traceback \(|\s+File \"|(?:[A-Za-z_][\w.]*\.)?[A-Z]\w*(?:Error|Exception): )")
# a launcher's own level tag and component (lemonade's "[Info] (Process) "), whatever follows
_LEVEL_TAG = (r"\[(?:Trace|Debug|Info|Warn|Warning|Error|Fatal|Critical|TRACE|DEBUG|INFO|WARN|"
              r"WARNING|ERROR|FATAL|CRITICAL)\] (?:\([\w.-]{1,64}\) )?")
_DATED = re.compile(
    r"(?P<date>\d{4}-\d\d-\d\d) (?P<hms>\d\d:\d\d:\d\d)(?:[.,](?P<frac>\d{1,9}))?"
    r"(?: ?(?P<tz>Z|UTC|[+-]\d\d:?\d\d))?(?: \| | " + _LEVEL_TAG + "| " + _AFTER + ")"
)
# a launcher script's bracketed "[YYYY-MM-DD HH:MM:SS] " in front of its own lines and of the
# server's (DGX Spark cluster scripts); whatever follows is the line
_BRACKETED = re.compile(
    r"\[(?P<date>\d{4}-\d\d-\d\d) (?P<hms>\d\d:\d\d:\d\d)(?:[.,](?P<frac>\d{1,9}))?"
    r"(?: ?(?P<tz>Z|UTC|[+-]\d\d:?\d\d))?\] ")
# srun --label / pdsh-like task numbers, only in front of what a vLLM worker writes
_TASK = re.compile(r"\d{1,5}: (?=\(|\[rank|\[[IWEF]\d|Traceback|(?:DEBUG|INFO|WARNING|ERROR|"
                   r"CRITICAL) \d\d-\d\d )")
_KUBECTL = re.compile(r"\[(?:pod|deployment|statefulset|job|daemonset|replicaset)/[^\]\s]{1,253}\] ")
_EPOCH = re.compile(r"(?P<s>\d{10})\.(?P<frac>\d{1,9}) (?P<host>\S{1,253}) "
                    r"(?P<ident>[^\s\[\]:]{1,64})(?:\[(?P<pid>\d{1,10})\])?: ")  # short-unix
_RANK = re.compile(r"\[(?:rank|default)(?P<rank>\d{1,6})\]: ?")
_COLUMN = re.compile(r" {0,8}\| ")  # Buildkite's "  | " column (and other pasted CI logs)
_COMPOSE = re.compile(r"(?P<svc>[a-zA-Z0-9][\w.-]{0,63}[-_]\d{1,4}) +\| ")  # service-1, proj_svc_1


class Collected(NamedTuple):
    """What the collector prefixes of one line said."""

    kind: str  # outermost stamped collector: rfc3339 | cri | gitlab | syslog | journald | dated |
    #            or, with no stamp, rank | compose | column | task | kubectl
    stamp_full: str | None = None  # "YYYY-MM-DD HH:MM:SS"
    stamp: str | None = None  # "MM-DD HH:MM:SS" (journald: no year)
    frac: str | None = None
    utc_offset: str | None = None  # "Z", "+02:00", "+0000"; None: the reader's zone
    stream: str | None = None  # "stdout" / "stderr" (CRI, GitLab)
    rank: int | None = None
    host: str | None = None


def peel(text: str) -> tuple[str, Collected | None]:
    """Strip collector prefixes from the front of `text`; (rest, what they said or None)."""
    found: Collected | None = None
    for _ in range(MAX_LAYERS):
        if not text:
            break
        first = text[0]
        step = None
        if first == "[" and len(text) > 21 and text[5] == "-" and text[11] == "T":
            step = _rfc3339(text)  # "[2026-02-24T20:21:58Z] " (a CI step's stamp)
        elif first == "[" and len(text) > 21 and text[5] == "-" and text[11] == " ":
            m = _BRACKETED.match(text)  # "[2026-01-26 16:56:13] " (a launcher's stamp)
            if m:
                tz = m["tz"]
                step = (m.end(), Collected("dated", f"{m['date']} {m['hms']}", None, m["frac"],
                                           "Z" if tz == "UTC" else tz))
        elif first == "[" and text[1:4] in ("pod", "dep", "sta", "job", "dae", "rep"):
            m = _KUBECTL.match(text)  # kubectl logs --prefix
            if m:
                step = (m.end(), Collected("kubectl"))
        elif first.isdigit() and len(text) > 12 and text[10] == ".":
            step = _epoch(text)
        elif first.isdigit() and len(text) > 20 and text[4] == "-":
            if text[10] == "T":
                step = _rfc3339(text)
            elif text[10] == " ":
                step = _dated(text)
        elif first.isdigit() and ": " in text[:7]:
            m = _TASK.match(text)
            if m:
                step = (m.end(), Collected("task"))
        elif first in "JFMASOND":
            step = _journald(text)
        elif first == "[" and text[1:5] in ("rank", "defa"):
            m = _RANK.match(text)
            if m:
                step = (m.end(), Collected("rank", rank=int(m["rank"])))
        elif (first == " " or first == "|") and text.lstrip(" ")[:2] == "| ":
            m = _COLUMN.match(text)
            if m:
                step = (m.end(), Collected("column"))
        elif first.isalnum() and "| " in text[:80]:
            m = _COMPOSE.match(text)
            if m:
                step = (m.end(), Collected("compose"))
        if step is None:
            break
        end, said = step
        text = text[end:]
        found = said if found is None else _merge(found, said)
    return text, found


def _merge(outer: Collected, inner: Collected) -> Collected:
    """The outer layer's stamp wins (the last collector's clock); a rank or stream from any."""
    if outer.stamp_full is None and outer.stamp is None and (
            inner.stamp_full is not None or inner.stamp is not None):
        outer = inner._replace(rank=outer.rank if outer.rank is not None else inner.rank)
    return outer._replace(rank=outer.rank if outer.rank is not None else inner.rank,
                          stream=outer.stream or inner.stream, host=outer.host or inner.host)


def _rfc3339(text: str) -> tuple[int, Collected] | None:
    m = _RFC3339.match(text)
    if m is None:
        return None
    kind, stream = "rfc3339", None
    if m["cri"]:
        kind, stream = "cri", m["cri"]
    elif m["gitlab"]:
        kind, stream = "gitlab", "stdout" if m["gstream"] == "O" else "stderr"
    elif m["pid"]:
        kind = "syslog"
    return m.end(), Collected(kind, f"{m['date']} {m['hms']}", None, m["frac"], m["tz"],
                              stream, None, m["host"])


def _dated(text: str) -> tuple[int, Collected] | None:
    m = _DATED.match(text)
    if m is None:
        return None
    tz = m["tz"]
    return m.end(), Collected("dated", f"{m['date']} {m['hms']}", None, m["frac"],
                              "Z" if tz == "UTC" else tz)


def _epoch(text: str) -> tuple[int, Collected] | None:
    m = _EPOCH.match(text)
    if m is None:
        return None
    moment = _dt.datetime.fromtimestamp(int(m["s"]), _dt.timezone.utc)
    return m.end(), Collected("journald", moment.strftime("%Y-%m-%d %H:%M:%S"), None, m["frac"],
                              "Z", None, None, m["host"])


def _journald(text: str) -> tuple[int, Collected] | None:
    m = _JOURNALD.match(text)
    if m is None:
        return None
    day = int(m["day"].strip() or 0)
    stamp = f"{MONTHS[m['mon']]:02d}-{day:02d} {m['hms']}"
    return m.end(), Collected("journald", None, stamp, m["frac"], None, None, None, m["host"])


__all__ = ["Collected", "peel", "MAX_LAYERS"]
