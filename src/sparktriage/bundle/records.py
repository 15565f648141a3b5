"""Typed records of an evidence bundle: samples, stacks, kernel lines, log lines, manifest lines.

The on-disk shapes are fixed by docs/formats.md ("Evidence bundle"); these frozen dataclasses
mirror them field for field so that readers (stalls, report) get attribute access and type
checks instead of dict lookups. `from_dict` is tolerant in the direction that keeps old readers
working: fields a newer writer added are ignored, fields an older writer lacked default to None.
Collectors on the nodes write plain dicts (they run without this package's dependencies); a
conformance test checks that every collector writes exactly these fields.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from dataclasses import dataclass
from typing import Any, TypeVar, Union

T = TypeVar("T")


@dataclass(frozen=True)
class LineRecord:
    """One output line of a process sparktriage started or tailed (`logs/<name>.lines.jsonl`)."""

    t: float  # Unix seconds when the line was received on its node
    node: str
    stream: str  # "stdout" / "stderr" / "file"
    line: str
    backfill: bool = False  # True: the line was already in a tailed file when tailing began


@dataclass(frozen=True)
class ManifestEntry:
    """What one collector did on one node during one collection (`manifest.jsonl`)."""

    collector: str
    node: str
    command: list[str] | None
    started: float | None
    ended: float | None
    duration_s: float | None
    rc: int | None
    records: int
    truncated: bool
    skipped: str | None  # why the collector could not run at all
    error: str | None  # one line: the last failure while it ran
    interval_s: float | None = None
    runs: int | None = None  # commands run or samples taken
    failures: int | None = None  # runs that failed (their records say why)


@dataclass(frozen=True)
class CpuShares:
    user: float
    system: float
    iowait: float
    idle: float
    steal: float


@dataclass(frozen=True)
class MemInfo:
    total: int
    available: int
    free: int
    cached: int
    dirty: int
    writeback: int
    swap_total: int
    swap_free: int


@dataclass(frozen=True)
class Pressure:
    cpu_some: float | None
    memory_some: float | None
    memory_full: float | None
    io_some: float | None
    io_full: float | None


@dataclass(frozen=True)
class HostSample:
    t: float
    cpu: CpuShares
    ncpu: int
    load1: float
    mem: MemInfo
    swap_in_bps: float
    swap_out_bps: float
    pgmajfault_ps: float
    psi: Pressure | None
    kswapd_cpu: float | None


@dataclass(frozen=True)
class DiskSample:
    t: float
    device: str
    read_bps: float
    write_bps: float
    reads_ps: float
    busy_pct: float


@dataclass(frozen=True)
class NetSample:
    t: float
    iface: str
    rx_bps: float
    tx_bps: float
    rx_pps: float
    tx_pps: float
    mtu: int | None
    oper_state: str | None
    rdma: dict[str, float] | None


@dataclass(frozen=True)
class ThreadSample:
    tid: int
    name: str
    state: str
    cpu_pct: float


@dataclass(frozen=True)
class ChildRef:
    pid: int
    name: str
    cmdline: str


@dataclass(frozen=True)
class ProcSample:
    t: float
    pid: int
    ppid: int
    name: str
    cmdline: str
    role: str
    state: str
    cpu_user_pct: float
    cpu_system_pct: float
    cpu_iowait_pct: float | None
    rss: int
    read_bps: float | None
    write_bps: float | None
    read_chars_ps: float | None
    majflt_ps: float
    minflt_ps: float
    ctx_vol_ps: float | None
    ctx_invol_ps: float | None
    num_threads: int
    threads: list[ThreadSample]
    children: list[ChildRef]
    rank: str | None = None  # vLLM rank label from the process title, e.g. "TP1"
    read_bytes: int | None = None  # cumulative bytes read from storage (/proc/PID/io)
    starttime: int | None = None  # start time in clock ticks since boot (pid + starttime = id)


@dataclass(frozen=True)
class GpuSample:
    t: float
    index: int
    name: str | None
    util_pct: float | None
    mem_util_pct: float | None
    power_w: float | None
    sm_clock_mhz: float | None
    mem_clock_mhz: float | None
    temp_c: float | None
    mem_used: int | None
    mem_total: int | None
    mem_source: str | None  # "nvml" or "unified-system"
    throttle_reasons: list[str] | None
    power_limit_w: float | None = None
    pstate: int | None = None
    uuid: str | None = None


@dataclass(frozen=True)
class Frame:
    function: str
    file: str
    line: int | None


@dataclass(frozen=True)
class ThreadStack:
    tid: int | None
    name: str | None
    active: bool | None
    gil: bool | None
    frames: list[Frame]  # innermost first


@dataclass(frozen=True)
class StackDump:
    t: float
    pid: int
    role: str | None
    rank: str | None
    threads: list[ThreadStack]
    error: str | None = None
    name: str | None = None  # process name (comm) at dump time
    duration_s: float | None = None  # how long py-spy took


@dataclass(frozen=True)
class DmesgLine:
    t: float  # Unix seconds (converted from kernel_t when the line predates collection)
    line: str
    level: str | None  # emerg / alert / crit / err / warning / notice / info / debug
    kernel_t: float | None  # seconds since boot, as the kernel stamped it


@dataclass(frozen=True)
class ClockInfo:
    offset_s: float  # node clock minus collecting machine's clock
    rtt_s: float | None
    method: str


SAMPLE_TYPES: dict[str, type] = {
    "host": HostSample,
    "disk": DiskSample,
    "net": NetSample,
    "procs": ProcSample,
    "gpu": GpuSample,
}


def _convert(tp: Any, value: Any) -> Any:
    if value is None:
        return None
    origin = typing.get_origin(tp)
    if origin in (Union, types.UnionType):
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        return _convert(args[0], value) if len(args) == 1 else value
    if dataclasses.is_dataclass(tp) and isinstance(value, dict):
        return from_dict(tp, value)
    if origin is list and isinstance(value, list):
        (item,) = typing.get_args(tp)
        return [_convert(item, v) for v in value]
    if tp is float and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    return value


_HINTS: dict[type, dict[str, Any]] = {}


def from_dict(cls: type[T], data: dict) -> T:
    """Build record `cls` from a JSON object: unknown keys ignored, missing keys become None."""
    hints = _HINTS.get(cls)
    if hints is None:
        hints = _HINTS[cls] = typing.get_type_hints(cls)
    kwargs = {}
    for f in dataclasses.fields(cls):
        if f.name in data:
            kwargs[f.name] = _convert(hints[f.name], data[f.name])
        elif f.default is not dataclasses.MISSING:
            kwargs[f.name] = f.default
        elif f.default_factory is not dataclasses.MISSING:  # type: ignore[misc]
            kwargs[f.name] = f.default_factory()  # type: ignore[misc]
        else:
            kwargs[f.name] = None
    return cls(**kwargs)


def field_names(cls: type) -> set[str]:
    """The JSON keys a record of `cls` has on disk."""
    return {f.name for f in dataclasses.fields(cls)}


__all__ = [
    "LineRecord", "ManifestEntry", "CpuShares", "MemInfo", "Pressure", "HostSample", "DiskSample",
    "NetSample", "ThreadSample", "ChildRef", "ProcSample", "GpuSample", "Frame", "ThreadStack",
    "StackDump", "DmesgLine", "ClockInfo", "SAMPLE_TYPES", "from_dict", "field_names",
]
