"""Real faults for the test bed: memory and I/O limits (cgroup v1), a slow loop-device volume.

Used by the stall reproductions (tests/stalls/test_reproductions.py, docs/stalls.md). Each is a
context manager that creates uniquely named kernel objects and removes them on exit, also when
the body fails: cgroups under the caller's own cgroup (so nothing outside this session is
touched), loop devices it attached itself. Processes join a cgroup through `wrap(argv)`: a tiny
interpreter writes its own pid into the cgroup and then execs the real command, so the whole
process tree it starts is limited from its first instruction.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

from sparktriage.errors import LaunchError

CGROUP_ROOT = Path("/sys/fs/cgroup")
_JOIN = ("import os, sys\n"
         "for path in sys.argv[1].split(','):\n"
         "    with open(path, 'w') as fh: fh.write(str(os.getpid()))\n"
         "os.execvp(sys.argv[2], sys.argv[2:])\n")


def _own_cgroup(controller: str) -> Path:
    """The caller's cgroup directory of a v1 controller (e.g. memory, blkio)."""
    for line in Path("/proc/self/cgroup").read_text().splitlines():
        _, controllers, path = line.split(":", 2)
        if controller in controllers.split(","):
            return CGROUP_ROOT / controller / path.lstrip("/")
    raise LaunchError(f"no cgroup v1 {controller} controller mounted")


def join_argv(procs_files: list[Path], argv: list[str]) -> list[str]:
    """argv that joins the given cgroups (their cgroup.procs files) and execs `argv`."""
    return [sys.executable, "-c", _JOIN, ",".join(str(p) for p in procs_files), *argv]


class _Cgroup:
    controller = ""

    def __init__(self) -> None:
        self.path = _own_cgroup(self.controller) / f"sparktriage-{uuid.uuid4().hex[:10]}"

    @property
    def procs(self) -> Path:
        return self.path / "cgroup.procs"

    def wrap(self, argv: list[str]) -> list[str]:
        return join_argv([self.procs], argv)

    def __enter__(self):
        self.path.mkdir()
        try:
            self.configure()
        except BaseException:
            self._remove()
            raise
        return self

    def configure(self) -> None:
        raise NotImplementedError

    def _remove(self) -> None:
        for attempt in range(50):
            try:
                pids = [int(p) for p in self.procs.read_text().split()]
            except OSError:
                return
            for pid in pids:  # only processes we put here ourselves
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            try:
                self.path.rmdir()
                return
            except OSError:
                time.sleep(0.1)
        raise LaunchError(f"could not remove cgroup {self.path}")

    def __exit__(self, *exc) -> None:
        self._remove()


class MemoryLimit(_Cgroup):
    """A memory cgroup: `limit_bytes` of RAM (page cache included), no swap."""

    controller = "memory"

    def __init__(self, limit_bytes: int) -> None:
        super().__init__()
        self.limit_bytes = limit_bytes

    def configure(self) -> None:
        (self.path / "memory.limit_in_bytes").write_text(str(self.limit_bytes))
        swappiness = self.path / "memory.swappiness"
        if swappiness.exists():
            swappiness.write_text("0")

    def failcnt(self) -> int:
        return int((self.path / "memory.failcnt").read_text())


class ReadThrottle(_Cgroup):
    """A blkio cgroup that caps reads from one block device at `bps` bytes per second."""

    controller = "blkio"

    def __init__(self, device: str, bps: int) -> None:
        super().__init__()
        self.device, self.bps = device, bps

    def configure(self) -> None:
        st = os.stat(self.device)
        rule = f"{os.major(st.st_rdev)}:{os.minor(st.st_rdev)} {self.bps}"
        (self.path / "blkio.throttle.read_bps_device").write_text(rule)


def _run(argv: list[str]) -> str:
    result = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    if result.returncode != 0:
        raise LaunchError(f"{argv[0]} failed: {(result.stderr or result.stdout).strip()[:200]}")
    return result.stdout.strip()


class LoopVolume:
    """An ext4 file system on a loop device of its own, mounted under `root`."""

    def __init__(self, root: Path, size_mb: int) -> None:
        self.image = root / "volume.img"
        self.mount = root / "volume"
        self.size_mb = size_mb
        self.device: str | None = None
        self.mounted = False

    def __enter__(self) -> "LoopVolume":
        try:
            with open(self.image, "wb") as fh:
                fh.truncate(self.size_mb * 2 ** 20)
            _run(["mkfs.ext4", "-q", "-F", str(self.image)])
            self.device = _run(["losetup", "--find", "--show", str(self.image)])
            self.mount.mkdir(exist_ok=True)
            self._mount()
        except BaseException:
            self.__exit__()
            raise
        return self

    def _mount(self) -> None:
        _run(["mount", "-t", "ext4", self.device, str(self.mount)])
        self.mounted = True

    def make_cold(self) -> None:
        """Unmount and mount again: the file system's pages leave the page cache."""
        os.sync()
        _run(["umount", str(self.mount)])
        self.mounted = False
        self._mount()

    def __exit__(self, *exc) -> None:
        if self.mounted:
            subprocess.run(["umount", "-l", str(self.mount)], capture_output=True, timeout=60)
            self.mounted = False
        if self.device:
            subprocess.run(["losetup", "-d", self.device], capture_output=True, timeout=60)
            self.device = None
        if self.image.exists():
            self.image.unlink()
