"""Small, allocation-light readers of Linux /proc and /sys files used by the collectors.

Each reader returns plain numbers or dicts and raises OSError when the file is missing or
unreadable (a process that exited, a kernel without PSI); the collectors turn those into
recorded degradations. Units are converted here: ticks to seconds, pages to bytes.
"""

from __future__ import annotations

import os

CLK_TCK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
PAGE_SIZE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096
PROC = "/proc"


def read_text(path: str) -> str:
    with open(path, "rb") as fh:
        return fh.read().decode("utf-8", "replace")


def read_int(path: str) -> int | None:
    try:
        return int(read_text(path).strip())
    except (OSError, ValueError):
        return None


def cpu_times() -> tuple[list[int], int]:
    """Aggregate CPU jiffies from /proc/stat (user nice system idle iowait irq softirq steal)
    and the number of CPUs."""
    total: list[int] = []
    ncpu = 0
    for line in read_text(f"{PROC}/stat").splitlines():
        if line.startswith("cpu "):
            total = [int(x) for x in line.split()[1:9]]
        elif line.startswith("cpu"):
            ncpu += 1
    while len(total) < 8:
        total.append(0)
    return total, max(ncpu, 1)


def meminfo() -> dict[str, int]:
    """/proc/meminfo in bytes, keyed by the kernel's field names."""
    out: dict[str, int] = {}
    for line in read_text(f"{PROC}/meminfo").splitlines():
        name, _, rest = line.partition(":")
        parts = rest.split()
        if parts:
            try:
                value = int(parts[0])
            except ValueError:
                continue
            out[name] = value * 1024 if len(parts) > 1 and parts[1] == "kB" else value
    return out


def vmstat(keys: tuple[str, ...]) -> dict[str, int]:
    out: dict[str, int] = {}
    for line in read_text(f"{PROC}/vmstat").splitlines():
        name, _, value = line.partition(" ")
        if name in keys:
            out[name] = int(value)
    return out


def pressure(resource: str) -> dict[str, float]:
    """PSI avg10 of /proc/pressure/<resource>: {"some": x, "full": y} (full absent for cpu on
    older kernels). Raises OSError without PSI."""
    out: dict[str, float] = {}
    for line in read_text(f"{PROC}/pressure/{resource}").splitlines():
        parts = line.split()
        if not parts:
            continue
        for item in parts[1:]:
            if item.startswith("avg10="):
                out[parts[0]] = float(item[6:])
    return out


def loadavg1() -> float:
    return float(read_text(f"{PROC}/loadavg").split()[0])


def uptime_s() -> float:
    return float(read_text(f"{PROC}/uptime").split()[0])


def diskstats() -> dict[str, tuple[int, int, int, int]]:
    """Per device: (reads completed, sectors read, sectors written, ms doing I/O)."""
    out = {}
    for line in read_text(f"{PROC}/diskstats").splitlines():
        f = line.split()
        if len(f) >= 13:
            out[f[2]] = (int(f[3]), int(f[5]), int(f[9]), int(f[12]))
    return out


def netdev() -> dict[str, tuple[int, int, int, int]]:
    """Per interface: (rx bytes, rx packets, tx bytes, tx packets)."""
    out = {}
    for line in read_text(f"{PROC}/net/dev").splitlines()[2:]:
        name, _, rest = line.partition(":")
        f = rest.split()
        if len(f) >= 10:
            out[name.strip()] = (int(f[0]), int(f[1]), int(f[8]), int(f[9]))
    return out


class ProcStat:
    """Fields of /proc/PID/stat (or /proc/PID/task/TID/stat) that the collectors use."""

    __slots__ = ("comm", "state", "ppid", "pgrp", "minflt", "majflt", "utime", "stime",
                 "num_threads", "starttime", "rss_pages", "blkio_ticks")

    def __init__(self, text: str) -> None:
        # comm may contain spaces and parentheses: it runs from the first "(" to the last ")".
        left = text.index("(")
        right = text.rindex(")")
        self.comm = text[left + 1:right]
        f = text[right + 2:].split()
        self.state = f[0]
        self.ppid = int(f[1])
        self.pgrp = int(f[2])
        self.minflt = int(f[7])
        self.majflt = int(f[9])
        self.utime = int(f[11])
        self.stime = int(f[12])
        self.num_threads = int(f[17])
        self.starttime = int(f[19])
        self.rss_pages = int(f[21])
        self.blkio_ticks = int(f[39]) if len(f) > 39 else 0


def proc_stat(pid: int, tid: int | None = None) -> ProcStat:
    path = f"{PROC}/{pid}/stat" if tid is None else f"{PROC}/{pid}/task/{tid}/stat"
    return ProcStat(read_text(path))


def proc_io(pid: int) -> dict[str, int]:
    """/proc/PID/io (needs ptrace access to the process: same user or root)."""
    out = {}
    for line in read_text(f"{PROC}/{pid}/io").splitlines():
        name, _, value = line.partition(":")
        out[name.strip()] = int(value)
    return out


def proc_ctxt(pid: int) -> tuple[int, int]:
    """(voluntary, involuntary) context switches from /proc/PID/status."""
    vol = invol = 0
    for line in read_text(f"{PROC}/{pid}/status").splitlines():
        if line.startswith("voluntary_ctxt_switches:"):
            vol = int(line.split()[1])
        elif line.startswith("nonvoluntary_ctxt_switches:"):
            invol = int(line.split()[1])
    return vol, invol


def proc_cmdline(pid: int) -> list[str]:
    raw = read_text(f"{PROC}/{pid}/cmdline")
    args = raw.split("\0")
    while args and args[-1] == "":  # setproctitle pads the rewritten title with NULs
        args.pop()
    return args


def proc_environ(pid: int) -> dict[str, str]:
    out = {}
    for item in read_text(f"{PROC}/{pid}/environ").split("\0"):
        name, sep, value = item.partition("=")
        if sep and name:
            out[name] = value
    return out


def children(pid: int) -> list[int]:
    """Direct children of a process (all its threads' `children` files)."""
    kids: list[int] = []
    try:
        tids = os.listdir(f"{PROC}/{pid}/task")
    except OSError:
        return kids
    for tid in tids:
        try:
            kids.extend(int(x) for x in read_text(f"{PROC}/{pid}/task/{tid}/children").split())
        except OSError:
            continue
    return kids


def _children_by_scan() -> dict[int, list[int]]:
    """ppid -> children for every process (kernels without /proc/PID/task/TID/children)."""
    out: dict[int, list[int]] = {}
    for entry in os.listdir(PROC):
        if entry.isdigit():
            try:
                out.setdefault(proc_stat(int(entry)).ppid, []).append(int(entry))
            except (OSError, ValueError):
                continue
    return out


HAS_CHILDREN_FILE = os.path.exists(f"{PROC}/{os.getpid()}/task/{os.getpid()}/children")


def descendants(roots: list[int]) -> list[int]:
    """Roots and all their descendants, parents before children (pids that vanished dropped)."""
    by_scan = None if HAS_CHILDREN_FILE else _children_by_scan()
    seen: list[int] = []
    queue = [pid for pid in roots if os.path.exists(f"{PROC}/{pid}")]
    known = set()
    while queue:
        pid = queue.pop(0)
        if pid in known:
            continue
        known.add(pid)
        seen.append(pid)
        queue.extend(children(pid) if by_scan is None else by_scan.get(pid, []))
    return seen


def threads(pid: int) -> list[int]:
    try:
        return [int(t) for t in os.listdir(f"{PROC}/{pid}/task")]
    except OSError:
        return []


def thread_name(pid: int, tid: int) -> str:
    try:
        return read_text(f"{PROC}/{pid}/task/{tid}/comm").strip()
    except OSError:
        return ""
