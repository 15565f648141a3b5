"""Follow log files of a server sparktriage did not start (`collect --pid`, `--log FILE`).

Lines already in the file when tailing begins are recorded with `backfill: true` and the time
tailing began (their real times are unknown; a parser may still read the log's own stamps);
later lines get the node's receive time, polled every `poll_s`. A file that is truncated or
replaced (log rotation) is reopened from its start.
"""

from __future__ import annotations

import os
import threading
import time
from typing import Callable

MAX_BACKFILL_BYTES = 64 << 20


def stdout_files(pid: int) -> list[str]:
    """Regular files a process writes its stdout/stderr to (nothing for pipes, ttys, sockets)."""
    found = []
    for fd in (1, 2):
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if target.startswith("/") and not target.startswith("/dev/") and target not in found:
            path = target[:-10] if target.endswith(" (deleted)") else target
            if os.path.isfile(f"/proc/{pid}/fd/{fd}"):
                found.append(path)
    return found


class FileTail:
    """A thread following one file; `emit(line, t, backfill)` receives each line."""

    def __init__(self, path: str, emit: Callable[[str, float, bool], None],
                 poll_s: float = 0.25) -> None:
        self.path = path
        self._emit = emit
        self._poll = poll_s
        self._stop = threading.Event()
        self.error: str | None = None
        self.truncated = False
        self._thread = threading.Thread(target=self._run, daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)

    def _open(self):
        fh = open(self.path, "rb")
        return fh, os.fstat(fh.fileno()).st_ino

    def _run(self) -> None:
        try:
            fh, inode = self._open()
        except OSError as exc:
            self.error = f"cannot open {self.path}: {exc.strerror}"
            return
        began = time.time()
        size = os.fstat(fh.fileno()).st_size
        if size > MAX_BACKFILL_BYTES:
            fh.seek(size - MAX_BACKFILL_BYTES)
            fh.readline()  # drop the cut line
            self.truncated = True
        pending = b""
        backfill = True
        while True:
            chunk = fh.read(1 << 16)
            if chunk:
                pending += chunk
                *lines, pending = pending.split(b"\n")
                now = time.time()
                for raw in lines:
                    self._emit(raw.decode("utf-8", "replace"), began if backfill else now, backfill)
                continue
            backfill = False
            if self._stop.is_set():
                break
            self._stop.wait(self._poll)
            try:
                st = os.stat(self.path)
            except OSError:
                continue
            if st.st_ino != inode or st.st_size < fh.tell():  # rotated or truncated
                fh.close()
                try:
                    fh, inode = self._open()
                except OSError:
                    break
        if pending:
            self._emit(pending.decode("utf-8", "replace"), time.time(), False)
        fh.close()
