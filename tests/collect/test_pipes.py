"""A started process's stdout and stderr come out as lines in write order (collect/pipes.py):
a stderr line never ahead of stdout written before it, even when handling a stdout line is slow
(two reader threads let the stderr line through first, and the startup timeline then skipped
the phases those stdout lines anchor: the red CI of stop 26). Long lines come out in pieces, a
last line without a newline at end of file, bytes that are not UTF-8 replaced."""

from __future__ import annotations

import sys
import threading
import time

from sparktriage.collect.serve import NodeProcess

CHILD = r"""
import sys
for block in range(40):
    for i in range(10):
        sys.stdout.write(f"out {block} {i}\n"); sys.stdout.flush()
    sys.stderr.write(f"err {block}\n"); sys.stderr.flush()
sys.stdout.buffer.write(b"x" * 70000 + b"\n" + b"bad \xff byte\n" + b"no newline")
sys.stdout.flush()
"""


def _run(code: str, slow_stdout_s: float) -> list[tuple[str, str, float]]:
    lines: list[tuple[str, str, float]] = []
    done = threading.Event()

    def emit(stream: str, line: str, t: float) -> None:
        if stream == "stdout" and slow_stdout_s:
            time.sleep(slow_stdout_s)  # a loaded machine: the stdout side falls behind
        lines.append((stream, line, t))

    proc = NodeProcess("child", [sys.executable, "-c", code], {}, None, emit,
                       lambda p: done.set())
    proc.start()
    assert proc.error is None
    assert done.wait(60)
    assert proc.returncode == 0
    return lines


def test_a_stderr_line_never_comes_out_ahead_of_stdout_written_before_it():
    lines = _run(CHILD, slow_stdout_s=0.002)
    order = [(s, l) for s, l, _ in lines]
    for block in range(40):
        err = order.index(("stderr", f"err {block}"))
        last_out = order.index(("stdout", f"out {block} 9"))
        assert last_out < err, (block, order[max(0, err - 3):err + 3])
    outs = [l for s, l in order if s == "stdout" and l.startswith("out ")]
    assert outs == [f"out {b} {i}" for b in range(40) for i in range(10)]
    stamps = [t for _, _, t in lines]
    assert stamps == sorted(stamps)


def test_long_lines_come_in_pieces_and_the_last_line_needs_no_newline():
    lines = [(s, l) for s, l, _ in _run(CHILD, slow_stdout_s=0.0)]
    tail = [l for s, l in lines if s == "stdout"][-4:]
    assert tail == ["x" * 65536, "x" * (70000 - 65536), "bad \ufffd byte", "no newline"]
    assert sum(1 for s, _ in lines if s == "stderr") == 40
