"""Disk collector: read/write rate, read operations and busy time per block device.

Whole devices only (those under /sys/block), without RAM disks and loop devices, which would
otherwise drown the few devices that matter. The read rate compared with what the device can
do separates a slow mmap crawl from a storage-bound load (field-reports §1.X, group A).
"""

from __future__ import annotations

import os
import time

from sparktriage.collect import procfs
from sparktriage.collect.base import Collector, Skip

SECTOR = 512


def block_devices() -> set[str]:
    try:
        names = os.listdir("/sys/block")
    except OSError:
        return set()
    return {n for n in names if not n.startswith(("ram", "loop"))}


class DiskCollector(Collector):
    name = "disk"
    file = "samples/disk.jsonl"

    def start(self) -> None:
        try:
            stats = procfs.diskstats()
        except OSError as exc:
            raise Skip(f"cannot read /proc/diskstats ({exc.strerror})") from None
        devices = block_devices()
        self._devices = devices or set(stats)
        if not self._devices:
            raise Skip("no block devices")
        self._prev = (stats, time.monotonic())

    def collect(self, now: float) -> list[dict]:
        stats = procfs.diskstats()
        mono = time.monotonic()
        old, t0 = self._prev
        self._prev = (stats, mono)
        dt = max(mono - t0, 1e-6)
        records = []
        for dev in sorted(self._devices):
            if dev not in stats or dev not in old:
                continue
            r0, rs0, ws0, busy0 = old[dev]
            r1, rs1, ws1, busy1 = stats[dev]
            records.append({
                "t": now, "device": dev,
                "read_bps": round((rs1 - rs0) * SECTOR / dt, 1),
                "write_bps": round((ws1 - ws0) * SECTOR / dt, 1),
                "reads_ps": round((r1 - r0) / dt, 2),
                "busy_pct": round(min(100.0, (busy1 - busy0) / 10.0 / dt), 2),
            })
        return records
