"""Host collector: CPU shares, memory, swap traffic, major faults, PSI, kswapd CPU.

Rates are differences between two readings, so the first record comes one interval after
start. PSI is null on kernels built or booted without it (the record says so by its absence;
the manifest notes it once). `kswapd_cpu` is the summed CPU of the kswapd threads in % of one
core: high values while loading mean page-cache reclaim (RC-3).
"""

from __future__ import annotations

import os

from sparktriage.collect import procfs
from sparktriage.collect.base import Collector

_VMSTAT = ("pswpin", "pswpout", "pgmajfault")


def _kswapd_pids() -> list[int]:
    pids = []
    for entry in os.listdir(procfs.PROC):
        if entry.isdigit():
            try:
                if procfs.read_text(f"{procfs.PROC}/{entry}/comm").startswith("kswapd"):
                    pids.append(int(entry))
            except OSError:
                continue
    return pids


class HostCollector(Collector):
    name = "host"
    file = "samples/host.jsonl"

    def start(self) -> None:
        self._prev = None
        self._kswapd = _kswapd_pids()
        try:
            procfs.pressure("memory")
            self._psi = True
        except OSError:
            self._psi = False
            self.note = "no PSI (/proc/pressure missing: kernel without CONFIG_PSI or psi=0)"
        self._prev = self._read()

    def _kswapd_ticks(self) -> int:
        total = 0
        for pid in self._kswapd:
            try:
                st = procfs.proc_stat(pid)
                total += st.utime + st.stime
            except (OSError, ValueError):
                continue
        return total

    def _read(self) -> tuple:
        return (procfs.cpu_times(), procfs.vmstat(_VMSTAT), self._kswapd_ticks(),
                os.times().elapsed)

    def _psi_record(self) -> dict | None:
        if not self._psi:
            return None
        out = {}
        for resource in ("cpu", "memory", "io"):
            try:
                values = procfs.pressure(resource)
            except OSError:
                values = {}
            out[f"{resource}_some"] = values.get("some")
            if resource != "cpu":
                out[f"{resource}_full"] = values.get("full")
        return out

    def collect(self, now: float) -> list[dict]:
        cur = self._read()
        (cpu0, _), vm0, ksw0, t0 = self._prev
        (cpu1, ncpu), vm1, ksw1, t1 = cur
        self._prev = cur
        dt = max(t1 - t0, 1e-6)
        d = [b - a for a, b in zip(cpu0, cpu1)]
        total = sum(d) or 1
        user, nice, system, idle, iowait, irq, softirq, steal = d

        def pct(x: int) -> float:
            return round(100.0 * x / total, 2)

        mem = procfs.meminfo()
        page = procfs.PAGE_SIZE
        return [{
            "t": now,
            "cpu": {"user": pct(user + nice), "system": pct(system + irq + softirq),
                    "iowait": pct(iowait), "idle": pct(idle), "steal": pct(steal)},
            "ncpu": ncpu,
            "load1": procfs.loadavg1(),
            "mem": {"total": mem.get("MemTotal", 0), "available": mem.get("MemAvailable", 0),
                    "free": mem.get("MemFree", 0), "cached": mem.get("Cached", 0),
                    "dirty": mem.get("Dirty", 0), "writeback": mem.get("Writeback", 0),
                    "swap_total": mem.get("SwapTotal", 0), "swap_free": mem.get("SwapFree", 0)},
            "swap_in_bps": round((vm1.get("pswpin", 0) - vm0.get("pswpin", 0)) * page / dt, 1),
            "swap_out_bps": round((vm1.get("pswpout", 0) - vm0.get("pswpout", 0)) * page / dt, 1),
            "pgmajfault_ps": round((vm1.get("pgmajfault", 0) - vm0.get("pgmajfault", 0)) / dt, 2),
            "psi": self._psi_record(),
            "kswapd_cpu": (round(100.0 * (ksw1 - ksw0) / procfs.CLK_TCK / dt, 2)
                           if self._kswapd else None),
        }]
