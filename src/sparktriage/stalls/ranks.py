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
from sparktriage.stalls.texts import (CPU, NCCL, RANK, RAY_IP, SEVERAL_WORKERS, SIZES,
                                       WORKER, WORLD, line_text)

# markers that only a start with several ranks logs: the engine's shm broadcast queue to its
# workers, a collective's watchdog; V0's VllmWorkerProcess is a second worker
_SEVERAL = {"shm_broadcast_wait", "nccl_watchdog"}
def _first_int(found: re.Match) -> int:
    return int(next(g for g in found.groups() if g is not None))


def _texts(timelines: dict[str, NodeTimeline]):
    for timeline in timelines.values():
        for mark in timeline.marks:
            event = mark.event
            yield mark, line_text(event.relay, event.process, event.message)


def ranks(timelines: dict[str, NodeTimeline]) -> int | None:
    """The number of ranks the evidence implies: 1 when the log shows no sign of more (a
    single-GPU start logs no world size at all in many versions), None without a log."""
    counts: list[int] = []
    sizes = {"tp": 1, "pp": 1, "dp": 1}
    seen_size = False
    named: set[int] = set()
    ips: set[str] = set()
    for mark, text in _texts(timelines):
        for found in WORLD.finditer(text):
            counts.append(int(found.group(1)))
        for key, rx in SIZES.items():
            found = rx.search(text)
            if found:
                sizes[key] = max(sizes[key], _first_int(found))
                seen_size = True
        for rx in (RANK, WORKER):
            for found in rx.finditer(text):
                named.add(_first_int(found))
        ips.update(RAY_IP.findall(mark.event.relay or ""))
        if _SEVERAL.intersection(mark.markers) or SEVERAL_WORKERS in text:
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
        if NCCL.search(text):
            return True
        cpu = cpu or bool(CPU.search(text))
    return not cpu and (ranks(timelines) or 1) > 1
