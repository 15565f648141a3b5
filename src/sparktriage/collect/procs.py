"""Process-tree collector: every process of the server, its busiest threads and its children.

Per process and interval: CPU split into user and system (% of one core), storage and
character I/O rates (/proc/PID/io), major and minor faults, voluntary and involuntary context
switches, state, RSS, and per-thread CPU and state for the busiest threads. These are the
probes that separate the look-alike stalls (field-reports Appendix B): one thread at 100 %
system time with climbing major faults (mmap crawl), a thread in D with zero reads (DMA wedge),
a spinning core with no context switches (collective hang), compiler children (JIT).

A process seen for the first time gets rates averaged since it started, so that a compiler
that lives for half a second still shows up with what it did.
"""

from __future__ import annotations

import time

from sparktriage.collect import procfs
from sparktriage.collect.base import Collector, Skip


def _delayacct_enabled() -> bool:
    return procfs.read_int("/proc/sys/kernel/task_delayacct") == 1


class ProcsCollector(Collector):
    name = "procs"
    file = "samples/procs.jsonl"

    def start(self) -> None:
        try:
            procfs.uptime_s()
        except OSError as exc:
            raise Skip(f"no /proc ({exc.strerror})") from None
        self._prev: dict[tuple[int, int], tuple] = {}
        self._thread_prev: dict[tuple[int, int], int] = {}
        self._delayacct = _delayacct_enabled()
        self._max_threads = int(self.options.get("max_threads", 16))
        self._io_denied = False

    def _threads(self, pid: int, dt: float, first: bool, elapsed: float) -> list[dict]:
        rows = []
        seen = set()
        for tid in procfs.threads(pid):
            try:
                st = procfs.proc_stat(pid, tid)
            except (OSError, ValueError, IndexError):
                continue
            ticks = st.utime + st.stime
            key = (pid, tid)
            seen.add(key)
            before = self._thread_prev.get(key)
            self._thread_prev[key] = ticks
            if before is None:
                span = elapsed if first else dt
                cpu = 100.0 * ticks / procfs.CLK_TCK / max(span, 1e-6) if first else 0.0
            else:
                cpu = 100.0 * (ticks - before) / procfs.CLK_TCK / dt
            rows.append({"tid": tid, "name": st.comm, "state": st.state, "cpu_pct": round(cpu, 1)})
        rows.sort(key=lambda r: (r["state"] not in "RD", -r["cpu_pct"], r["tid"]))
        return rows[: self._max_threads]

    def collect(self, now: float) -> list[dict]:
        mono = time.monotonic()
        uptime = procfs.uptime_s()
        tree = self.ctx.tree()
        kids: dict[int, list] = {}
        for p in tree:
            kids.setdefault(p.ppid, []).append(p)
        records = []
        live = set()
        for p in tree:
            try:
                st = procfs.proc_stat(p.pid)
            except (OSError, ValueError, IndexError):
                continue
            key = (p.pid, st.starttime)
            live.add(key)
            try:
                io = procfs.proc_io(p.pid)
            except OSError:
                io = None
                self._io_denied = True
            try:
                vol, invol = procfs.proc_ctxt(p.pid)
            except (OSError, ValueError):
                vol = invol = None
            counters = (st.utime, st.stime, st.majflt, st.minflt, st.blkio_ticks,
                        io.get("read_bytes") if io else None, io.get("write_bytes") if io else None,
                        io.get("rchar") if io else None, vol, invol, mono)
            before = self._prev.get(key)
            self._prev[key] = counters
            first = before is None
            elapsed = max(uptime - st.starttime / procfs.CLK_TCK, 1e-3)
            if first:  # averages since the process started
                before = (0, 0, 0, 0, 0, 0 if io else None, 0 if io else None, 0 if io else None,
                          0 if vol is not None else None, 0 if invol is not None else None,
                          mono - elapsed)
            dt = max(mono - before[10], 1e-6)

            def rate(i: int, scale: float = 1.0, nd: int = 1):
                if counters[i] is None or before[i] is None:
                    return None
                return round((counters[i] - before[i]) * scale / dt, nd)

            tick_pct = 100.0 / procfs.CLK_TCK
            records.append({
                "t": now, "pid": p.pid, "ppid": st.ppid, "name": st.comm,
                "cmdline": self.ctx.joined_cmdline(p.cmdline), "role": p.role, "state": st.state,
                "cpu_user_pct": rate(0, tick_pct), "cpu_system_pct": rate(1, tick_pct),
                "cpu_iowait_pct": rate(4, tick_pct) if self._delayacct else None,
                "rss": st.rss_pages * procfs.PAGE_SIZE,
                "read_bps": rate(5), "write_bps": rate(6), "read_chars_ps": rate(7),
                "majflt_ps": rate(2, 1.0, 2), "minflt_ps": rate(3, 1.0, 2),
                "ctx_vol_ps": rate(8, 1.0, 2), "ctx_invol_ps": rate(9, 1.0, 2),
                "num_threads": st.num_threads,
                "threads": self._threads(p.pid, dt, first, elapsed),
                "children": [{"pid": c.pid, "name": c.comm,
                              "cmdline": self.ctx.joined_cmdline(c.cmdline)}
                             for c in kids.get(p.pid, [])],
                "rank": p.rank,
                "read_bytes": io.get("read_bytes") if io else None,
                "starttime": st.starttime,
            })
        for key in [k for k in self._prev if k not in live]:
            del self._prev[key]
        live_pids = {k[0] for k in live}
        for key in [k for k in self._thread_prev if k[0] not in live_pids]:
            del self._thread_prev[key]
        if self._io_denied:
            self.note = "no permission to read /proc/PID/io of some processes (I/O rates null)"
        return records
