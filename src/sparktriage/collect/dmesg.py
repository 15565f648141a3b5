"""Kernel log collector: follows /dev/kmsg (NVRM errors, oom-kills, hung tasks).

On start it records the lines of the last `backlog_s` seconds (at most `max_backlog_lines`,
the manifest says when it cut), then every line the kernel adds. `t` is the node's wall clock
at the kernel's own timestamp (boot time + `kernel_t`). Reading the kernel log needs root or
CAP_SYSLOG when `kernel.dmesg_restrict` is set; otherwise the collector is skipped with that
reason.
"""

from __future__ import annotations

import errno
import os
import time

from sparktriage.collect import procfs
from sparktriage.collect.base import Collector, Skip

LEVELS = ("emerg", "alert", "crit", "err", "warning", "notice", "info", "debug")
KMSG = "/dev/kmsg"


def parse_kmsg(raw: str) -> tuple[str, float, str] | None:
    """(level, kernel_t, message) of one /dev/kmsg record, or None when malformed."""
    header, sep, body = raw.partition(";")
    if not sep:
        return None
    fields = header.split(",")
    try:
        prio = int(fields[0])
        usec = int(fields[2])
    except (ValueError, IndexError):
        return None
    message = body.split("\n", 1)[0]  # continuation lines (" KEY=value") are dictionary data
    return LEVELS[prio & 7], usec / 1e6, message


class DmesgCollector(Collector):
    name = "dmesg"
    file = "dmesg.jsonl"

    def start(self) -> None:
        try:
            self._fd = os.open(KMSG, os.O_RDONLY | os.O_NONBLOCK)
        except PermissionError:
            restrict = procfs.read_int("/proc/sys/kernel/dmesg_restrict")
            raise Skip("no permission to read the kernel log"
                       + (" (kernel.dmesg_restrict=1: run as root or grant CAP_SYSLOG)"
                          if restrict == 1 else "")) from None
        except OSError as exc:
            raise Skip(f"cannot open {KMSG} ({exc.strerror})") from None
        self._boot = time.time() - procfs.uptime_s()
        backlog_s = float(self.options.get("backlog_s", 600.0))
        limit = int(self.options.get("max_backlog_lines", 2000))
        since = procfs.uptime_s() - backlog_s
        lines = [r for r in self._read_all() if r["kernel_t"] >= since]
        if len(lines) > limit:
            self.truncated = True
            lines = lines[-limit:]
        self._pending = lines

    def _read_all(self) -> list[dict]:
        out = []
        while True:
            try:
                raw = os.read(self._fd, 8192)
            except BlockingIOError:
                break
            except OSError as exc:
                if exc.errno == errno.EPIPE:  # overwritten before we read it: skip ahead
                    continue
                raise
            if not raw:
                break
            parsed = parse_kmsg(raw.decode("utf-8", "replace"))
            if parsed:
                level, kernel_t, message = parsed
                out.append({"t": round(self._boot + kernel_t, 6), "line": message,
                            "level": level, "kernel_t": kernel_t})
        return out

    def collect(self, now: float) -> list[dict]:
        records, self._pending = self._pending + self._read_all(), []
        return records

    def stop(self) -> list[dict]:
        try:
            return self.collect(time.time())
        finally:
            os.close(self._fd)
