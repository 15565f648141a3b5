"""Processes the node agent starts and stops: the server (or `ray start`), with its output.

Each process gets its own session (so its process group is its own), stdin from /dev/null and
its stdout/stderr read line by line, in write order as far as two pipes tell (collect/pipes.py),
into line records stamped with the node's receive time.
The argv and environment arrive as JSON and go to `subprocess.Popen` as a list: no shell ever
sees them. Teardown signals the whole group (SIGTERM, then SIGKILL after the grace period),
then kills by pid every descendant ever observed that left the group, and reports whatever
survived (matched by pid and start time, so a reused pid is never killed).
"""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from typing import Callable

from sparktriage.collect import pipes, procfs

MAX_LINE = 65536


def alive(pid: int, starttime: int | None) -> bool:
    """Whether the process `pid` (with that start time, when given) still exists (not a zombie)."""
    try:
        st = procfs.proc_stat(pid)
    except (OSError, ValueError, IndexError):
        return False
    return st.state not in ("Z", "X") and (starttime is None or st.starttime == starttime)


def group_members(pgid: int) -> list[tuple[int, int]]:
    out = []
    for entry in os.listdir(procfs.PROC):
        if entry.isdigit():
            try:
                st = procfs.proc_stat(int(entry))
            except (OSError, ValueError, IndexError):
                continue
            if st.pgrp == pgid and st.state not in ("Z", "X"):
                out.append((int(entry), st.starttime))
    return out


def _signal(pid: int, sig: int, group: bool) -> None:
    try:
        (os.killpg if group else os.kill)(pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def kill_all(known: list[tuple[int, int]], pgids: list[int], grace_s: float) -> list[dict]:
    """SIGTERM groups, wait, SIGKILL groups and known pids; return survivors [{pid, name}]."""
    for pgid in pgids:
        _signal(pgid, signal.SIGTERM, True)
    deadline = time.monotonic() + grace_s
    while time.monotonic() < deadline:
        if not any(alive(p, s) for p, s in known) and not any(group_members(g) for g in pgids):
            break
        time.sleep(0.1)
    for pgid in pgids:
        _signal(pgid, signal.SIGKILL, True)
    for pid, start in known:
        if alive(pid, start):
            _signal(pid, signal.SIGKILL, False)
    deadline = time.monotonic() + 5.0
    survivors: list[tuple[int, int]] = []
    while time.monotonic() < deadline:
        survivors = [(p, s) for p, s in known if alive(p, s)]
        for pgid in pgids:
            survivors += [m for m in group_members(pgid) if m not in survivors]
        if not survivors:
            break
        time.sleep(0.1)
    out = []
    for pid, _ in survivors:
        try:
            out.append({"pid": pid, "name": procfs.proc_stat(pid).comm})
        except (OSError, ValueError, IndexError):
            continue
    return out


class NodeProcess:
    """One process started by the agent."""

    def __init__(self, name: str, argv: list, env: dict, cwd: str | None,
                 emit_line: Callable[[str, str, float], None],
                 on_exit: Callable[["NodeProcess"], None]) -> None:
        self.name = name
        self.argv = [str(a) for a in argv]
        self.env = env
        self.cwd = cwd
        self._emit_line = emit_line
        self._on_exit = on_exit
        self.popen: subprocess.Popen | None = None
        self.starttime: int | None = None
        self.returncode: int | None = None
        self.error: str | None = None
        self._pumps: list[threading.Thread] = []

    @property
    def pid(self) -> int | None:
        return self.popen.pid if self.popen else None

    def start(self) -> None:
        """Start the process; on failure (no such file, not executable) set `error` and return."""
        try:
            self.popen = subprocess.Popen(
                self.argv, env=self.env, cwd=self.cwd or None, stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True,
            )
        except (OSError, ValueError) as exc:
            self.error = f"{type(exc).__name__}: {exc}"[:300]
            return
        try:
            self.starttime = procfs.proc_stat(self.popen.pid).starttime
        except (OSError, ValueError, IndexError):
            self.starttime = None
        streams = (("stdout", self.popen.stdout), ("stderr", self.popen.stderr))
        thread = threading.Thread(target=pipes.pump, args=(streams, self._emit_line, MAX_LINE),
                                  daemon=True)
        thread.start()
        self._pumps.append(thread)
        threading.Thread(target=self._watch, daemon=True).start()

    def _watch(self) -> None:
        assert self.popen is not None
        self.returncode = self.popen.wait()
        for thread in self._pumps:
            thread.join(timeout=10)
        self._on_exit(self)

    def running(self) -> bool:
        return self.popen is not None and self.returncode is None and self.popen.poll() is None
