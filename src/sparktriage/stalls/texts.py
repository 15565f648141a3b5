"""What the classifier reads in any log line's text, whatever markers the line matched.

Most readers of a node's lines look only at the lines a marker of `rules/_vocabulary.yaml` or a
rule's `log_match` names. These expressions are read on every line (the rank count, the
compile time vLLM states after a silence). They live here, in one place, because a line that
none of them, no marker and no rule matches is a quiet line: `stalls` may fold a stretch of
quiet lines into counts (stalls/lineruns.py, "Thinning"). An expression a reader applies to
every line's text belongs in `ANY_LINE`; tests/stalls/test_thinning.py holds every module of
the classifier to that.
"""

from __future__ import annotations

import re

WORLD = re.compile(r"world_size=(\d+)")
SIZES = {
    "tp": re.compile(r"tensor_parallel_size['\"]?[=:]\s*(\d+)|--tensor-parallel-size[= ](\d+)"
                     r"|(?:^|\s)-tp[= ](\d+)"),
    "pp": re.compile(r"pipeline_parallel_size['\"]?[=:]\s*(\d+)|--pipeline-parallel-size[= ](\d+)"
                     r"|(?:^|\s)-pp[= ](\d+)"),
    "dp": re.compile(r"data_parallel_size['\"]?[=:]\s*(\d+)|--data-parallel-size[= ](\d+)"
                     r"|(?:^|\s)-dp[= ](\d+)"),
}
RANK = re.compile(r"\brank[= ](\d+)\b|\bRank (\d+)\]|\bTP rank (\d+)|\bPP rank (\d+)")
WORKER = re.compile(r"Worker_(?:TP|PP|DP|EP)(\d+)")
RAY_IP = re.compile(r"ip=(\d{1,3}(?:\.\d{1,3}){3})")
SEVERAL_WORKERS = "VllmWorkerProcess"  # V0's second worker: only a multi-worker start logs it
NCCL = re.compile(r"backend=nccl|NCCL INFO|vLLM is using nccl|pynccl|ProcessGroupNCCL|NCCL error"
                  r"|Watchdog caught collective operation timeout")
CPU = re.compile(r"device_config=cpu\b|device=cpu\b|Automatically detected platform cpu"
                 r"|device_type=cpu\b|backend=gloo\b")
COMPILE_TOTAL = re.compile(r"torch\.compile (?:takes|took) (\d+(?:\.\d+)?) s in total")

# every expression above, as readers apply them: to `relay process message` (ranks.py) or to
# the message alone
ANY_LINE: tuple[re.Pattern, ...] = (WORLD, *SIZES.values(), RANK, WORKER, RAY_IP,
                                    re.compile(re.escape(SEVERAL_WORKERS)), NCCL, CPU,
                                    COMPILE_TOTAL)


def line_text(relay: str | None, process: str | None, message: str) -> str:
    """A line as the rank readers see it: its relay prefix, its process and its message."""
    return f"{relay or ''} {process or ''} {message}"


__all__ = ["WORLD", "SIZES", "RANK", "WORKER", "RAY_IP", "SEVERAL_WORKERS", "NCCL", "CPU",
           "COMPILE_TOTAL", "ANY_LINE", "line_text"]
