"""How many ranks a start has, and whether they talk through a collective backend (NCCL).

A log rarely says `backend=nccl` outright (an excerpt, a Ray worker, a build that logs it at
DEBUG), yet a TP=2 or four-node start runs collectives all the same. So the rank count is the
largest of what the evidence implies: `world_size=`, tensor x pipeline (x data) parallel sizes
from the engine config, argument dump or command line, the ranks named in lines (`rank=3`,
`[Rank 3]`, `Worker_TP1`, `TP rank 1`), the distinct Ray worker addresses, the nodes of a
bundle, and lines only several ranks write (vLLM's shared-memory broadcast waits: only a
multi-worker executor has that queue; a collective's watchdog; V0's extra worker processes). The ranks use a collective backend when a line names NCCL, or when there are several
ranks on a device that is not the CPU (a CPU build uses gloo, which cannot hang in NCCL).
"""

from __future__ import annotations

import re

from sparktriage.stalls.markers import NodeTimeline

_WORLD = re.compile(r"world_size=(\d+)")
_SIZES = {
    "tp": re.compile(r"tensor_parallel_size['\"]?[=:]\s*(\d+)|--tensor-parallel-size[= ](\d+)"
                     r"|(?:^|\s)-tp[= ](\d+)"),
    "pp": re.compile(r"pipeline_parallel_size['\"]?[=:]\s*(\d+)|--pipeline-parallel-size[= ](\d+)"
                     r"|(?:^|\s)-pp[= ](\d+)"),
    "dp": re.compile(r"data_parallel_size['\"]?[=:]\s*(\d+)|--data-parallel-size[= ](\d+)"
                     r"|(?:^|\s)-dp[= ](\d+)"),
}
_RANK = re.compile(r"\brank[= ](\d+)\b|\bRank (\d+)\]|\bTP rank (\d+)|\bPP rank (\d+)")
_WORKER = re.compile(r"Worker_(?:TP|PP|DP|EP)(\d+)")
_RAY_IP = re.compile(r"ip=(\d{1,3}(?:\.\d{1,3}){3})")
# markers that only a start with several ranks logs: the engine's shm broadcast queue to its
# workers, a collective's watchdog; V0's VllmWorkerProcess is a second worker
_SEVERAL = {"shm_broadcast_wait", "nccl_watchdog"}
_NCCL = re.compile(r"backend=nccl|NCCL INFO|vLLM is using nccl|pynccl|ProcessGroupNCCL|NCCL error"
                   r"|Watchdog caught collective operation timeout")
_CPU = re.compile(r"device_config=cpu\b|device=cpu\b|Automatically detected platform cpu"
                  r"|device_type=cpu\b|backend=gloo\b")


def _first_int(found: re.Match) -> int:
    return int(next(g for g in found.groups() if g is not None))


def _texts(timelines: dict[str, NodeTimeline]):
    for timeline in timelines.values():
        for mark in timeline.marks:
            event = mark.event
            yield mark, f"{event.relay or ''} {event.process or ''} {event.message}"


def ranks(timelines: dict[str, NodeTimeline]) -> int | None:
    """The number of ranks the evidence implies: 1 when the log shows no sign of more (a
    single-GPU start logs no world size at all in many versions), None without a log."""
    counts: list[int] = []
    sizes = {"tp": 1, "pp": 1, "dp": 1}
    seen_size = False
    named: set[int] = set()
    ips: set[str] = set()
    for mark, text in _texts(timelines):
        for found in _WORLD.finditer(text):
            counts.append(int(found.group(1)))
        for key, rx in _SIZES.items():
            found = rx.search(text)
            if found:
                sizes[key] = max(sizes[key], _first_int(found))
                seen_size = True
        for rx in (_RANK, _WORKER):
            for found in rx.finditer(text):
                named.add(_first_int(found))
        ips.update(_RAY_IP.findall(mark.event.relay or ""))
        if _SEVERAL.intersection(mark.markers) or "VllmWorkerProcess" in text:
            counts.append(2)  # only a multi-worker executor or a collective says these
    if seen_size:
        counts.append(sizes["tp"] * sizes["pp"] * sizes["dp"])
    if named:
        counts.append(max(named) + 1)
    if len(ips) > 1:
        counts.append(len(ips))
    if len(timelines) > 1:
        counts.append(len(timelines))
    if not counts:
        return 1 if any(t.marks for t in timelines.values()) else None
    return max(counts)


def collective(timelines: dict[str, NodeTimeline]) -> bool:
    """The ranks talk through NCCL: a line says so, or several ranks on a non-CPU device."""
    cpu = False
    for _mark, text in _texts(timelines):
        if _NCCL.search(text):
            return True
        cpu = cpu or bool(_CPU.search(text))
    return not cpu and (ranks(timelines) or 1) > 1
