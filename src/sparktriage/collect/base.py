"""What every collector is, and the context they share on a node (target process tree, clock).

A collector declares the file it writes, is started once (`start` raises `Skip` with the
reason when its signal does not exist here: no GPU, no permission, no py-spy), is asked for
records at its interval (`collect`), and is stopped once (`stop`). It never writes files
itself: the runner hands its records to the agent, which streams them to the collecting
machine.
"""

from __future__ import annotations

import os
import threading
import time
from typing import Callable

from sparktriage.collect import procfs, roles
from sparktriage.redact.capture import Redactor


class Skip(Exception):
    """The collector cannot run on this node; the message is the recorded reason."""


class ProcInfo:
    """One process of the observed tree at the last look."""

    __slots__ = ("pid", "ppid", "comm", "cmdline", "role", "rank", "starttime", "root")

    def __init__(self, pid: int, ppid: int, comm: str, cmdline: list, starttime: int,
                 root: bool) -> None:
        self.pid = pid
        self.ppid = ppid
        self.comm = comm
        self.cmdline = cmdline
        self.starttime = starttime
        self.root = root
        self.role, self.rank = roles.classify(comm, cmdline, root)


class Context:
    """Shared, thread-safe view of the node: which processes are observed, how to redact."""

    def __init__(self, node: str, roots: Callable[[], list], redactor: Redactor,
                 tree_ttl_s: float = 0.25) -> None:
        self.node = node
        self._roots = roots
        self.redactor = redactor
        self._ttl = tree_ttl_s
        self._lock = threading.Lock()
        self._tree: list[ProcInfo] = []
        self._tree_at = -1.0
        self._info_cache: dict[tuple[int, int], ProcInfo] = {}
        self.seen: dict[tuple[int, int], ProcInfo] = {}  # every process ever observed
        self.stopping = threading.Event()  # set when collection ends: waits must give up

    def roots(self) -> list[int]:
        return [pid for pid in self._roots() if pid]

    def tree(self) -> list[ProcInfo]:
        """The observed processes (roots and descendants), refreshed at most every ttl."""
        with self._lock:
            now = time.monotonic()
            if now - self._tree_at < self._ttl:
                return list(self._tree)
            roots = set(self.roots())
            tree = []
            for pid in procfs.descendants(sorted(roots)):
                try:
                    stat = procfs.proc_stat(pid)
                    cmdline = procfs.proc_cmdline(pid)
                except (OSError, ValueError, IndexError):
                    continue
                key = (pid, stat.starttime)
                info = self._info_cache.get(key)
                if info is None or info.comm != stat.comm or info.cmdline != cmdline:
                    info = ProcInfo(pid, stat.ppid, stat.comm, cmdline, stat.starttime,
                                    pid in roots)
                    self._info_cache[key] = info
                self.seen[key] = info
                tree.append(info)
            live = {(p.pid, p.starttime) for p in tree}
            for key in [k for k in self._info_cache if k not in live]:
                del self._info_cache[key]
            self._tree = tree
            self._tree_at = now
            return list(tree)

    def joined_cmdline(self, args: list) -> str:
        """A process command line for a record: redacted, joined with spaces, at most 2000
        characters."""
        text = " ".join(self.redactor.args(list(args)))
        return text if len(text) <= 2000 else text[:1997] + "..."


class Collector:
    """Base class: subclasses set `name` and `file` and override `collect` (and maybe the rest)."""

    name = ""
    file = ""

    def __init__(self, spec, ctx: Context) -> None:
        self.spec = spec
        self.ctx = ctx
        self.options = dict(spec.options or {})
        self.command: list[str] | None = None  # the argv this collector runs, for the manifest
        self.truncated = False
        self.rc: int | None = None
        self.note: str | None = None  # a partial degradation worth a line in the manifest
        self.last_error: str | None = None  # a failure inside a run that still gave records

    def start(self) -> None:
        """Check that the signal exists here; raise Skip(reason) when it does not."""

    def collect(self, now: float) -> list[dict]:
        raise NotImplementedError

    def stop(self) -> list[dict]:
        """Last records, if any (a final stack dump, a flushed kernel line)."""
        return []


def is_root() -> bool:
    return hasattr(os, "geteuid") and os.geteuid() == 0
