"""Stacks collector: py-spy dumps of every Python process of the server (every rank).

Runs `py-spy dump --json --pid PID` per process, at its interval and on demand (the agent's
`stacks` command, e.g. when the supervisor sees the log go silent). Each dump is one record;
a dump that fails (permission, process gone, timeout) is still a record, with `error` set.
Comparing ranks is what exposes a rank stuck in `ncclAllReduce` or `_load_w2` while the
others wait (field-reports L-36, L-43).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time

from sparktriage.collect import roles
from sparktriage.collect.base import Collector, Skip, is_root

SKIP_ROLES = frozenset({"resource-tracker", "compiler", "container-cli"})


def find_pyspy(configured: str | None) -> str | None:
    """The py-spy executable: as configured, on PATH, or beside the agent's interpreter."""
    if configured:
        return configured if os.access(configured, os.X_OK) else None
    found = shutil.which("py-spy")
    if found:
        return found
    beside = os.path.join(os.path.dirname(sys.executable), "py-spy")
    return beside if os.access(beside, os.X_OK) else None


def parse_dump(text: str) -> list[dict]:
    """py-spy's JSON dump as `threads` records (innermost frame first)."""
    threads = []
    for thread in json.loads(text):
        threads.append({
            "tid": thread.get("os_thread_id") or thread.get("thread_id"),
            "name": thread.get("thread_name"),
            "active": thread.get("active"),
            "gil": thread.get("owns_gil"),
            "frames": [{"function": f.get("name"), "file": f.get("short_filename") or
                        f.get("filename"), "line": f.get("line")}
                       for f in thread.get("frames") or []],
        })
    return threads


class StacksCollector(Collector):
    name = "stacks"
    file = "stacks.jsonl"

    def start(self) -> None:
        self._pyspy = find_pyspy(self.options.get("pyspy"))
        if self._pyspy is None:
            where = self.options.get("pyspy") or "PATH"
            raise Skip(f"py-spy not installed on the node (looked in {where})")
        # --nonblocking: py-spy reads the target's memory without stopping it (a blocking dump
        # paused the engine core for 60-500 ms here, stalling every stream it serves); a hung
        # process, the case stacks are for, reads the same either way. docs/benchmarks.md.
        self._flags = ["--nonblocking"] if self.options.get("nonblocking", True) else []
        self.command = [self._pyspy, "dump", "--json", *self._flags, "--pid", "{pid}"]
        if not is_root():
            self.note = "not root: py-spy needs ptrace permission (CAP_SYS_PTRACE) on other users"

    def dump(self, pid: int, role: str | None, rank: str | None, comm: str) -> dict:
        started = time.monotonic()
        record = {"t": time.time(), "pid": pid, "role": role, "rank": rank, "threads": [],
                  "error": None, "name": comm, "duration_s": None}
        try:
            done = subprocess.run([self._pyspy, "dump", "--json", *self._flags, "--pid", str(pid)],
                                  stdin=subprocess.DEVNULL, capture_output=True,
                                  timeout=self.spec.timeout_s)
            self.rc = done.returncode
            if done.returncode == 0:
                record["threads"] = parse_dump(done.stdout.decode("utf-8", "replace"))
            else:
                message = done.stderr.decode("utf-8", "replace").strip().splitlines()
                record["error"] = (message[-1] if message else f"py-spy exited {done.returncode}")[:300]
        except subprocess.TimeoutExpired:
            record["error"] = f"py-spy did not answer within {self.spec.timeout_s:g} s"
        except (OSError, ValueError) as exc:
            record["error"] = f"{type(exc).__name__}: {exc}"[:300]
        record["duration_s"] = round(time.monotonic() - started, 3)
        if record["error"]:
            self.last_error = f"pid {pid}: {record['error']}"
        return record

    def collect(self, now: float) -> list[dict]:
        records = []
        for p in self.ctx.tree():
            if p.role in SKIP_ROLES or not roles.is_python(p.comm, p.cmdline, p.role):
                continue
            records.append(self.dump(p.pid, p.role, p.rank, p.comm))
        return records
