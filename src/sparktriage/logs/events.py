"""The record every log parser produces: one logical log line, timed and tagged.

Shared contract between the log parser (logs/), the stall classifier (stalls/), the
reconciliation and the report. Fields may be added; none may change meaning.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class LogEvent:
    """One logical line of a server log (a multi-line record is one event)."""

    t: float | None  # Unix seconds; None when the line carries no usable time
    t_source: str  # "receive" (our line records), "log" (the line's own stamp), "inferred", "none"
    node: str  # node name; "local" or the file's stem when unknown
    stream: str | None  # "stdout" / "stderr" when known
    process: str | None  # vLLM process name, e.g. "APIServer", "EngineCore", "Worker_TP0"
    pid: int | None
    relay: str | None  # Ray relay prefix, e.g. "RayWorkerWrapper pid=263, ip=10.0.16.95"
    level: str | None  # DEBUG / INFO / WARNING / ERROR / CRITICAL, or None (tqdm, print, C++)
    source_file: str | None  # "[gpu_worker.py:123]" → "gpu_worker.py"
    source_line: int | None
    message: str  # the text after the prefix, ANSI codes removed
    raw: str  # the original line as read (decoded, without newline)
    line_no: int  # 1-based line number in its input
    origin: str  # file path, "<stdin>", or the bundle-relative path
    # Set by the log parser; the defaults let an event be built without them.
    kind: str = "text"  # line shape: vllm, uvicorn, tqdm, glog, pylog, json, nccl, pywarn, traceback, text
    truncated: bool = False  # a physical line was longer than the reader keeps (sources.MAX_LINE)
    # Untimed lines belong to the timed one before them; collector prefixes.
    timed_by: int | None = None  # line_no of the timed line whose time an inferred event took
    collector: str | None = None  # the collector prefix the line carried (lineformat/collectors)
