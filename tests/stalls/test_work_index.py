"""Finding the stated work that covers a silence reads only the work lines that can reach it
(stalls/stated.py `WorkIndex`), and chooses what a scan of every work line chose."""

from __future__ import annotations

import datetime as dt
import random
from pathlib import Path

from sparktriage.stalls import stated
from sparktriage.stalls.analyze import analyze

REPO = Path(__file__).resolve().parents[2]
STARTUP = REPO / "tests" / "fixtures" / "logs" / "vllm-cpu-startup.log"


def _scan(spans, start, end):
    """Every span read in line order, the later of equal overlaps kept: the lookup as it was."""
    best, best_overlap = None, 0.5 * (end - start)
    for lo, hi, kind, mark in spans:
        if kind == "weights":
            continue
        overlap = min(hi, end) - max(lo, start)
        if overlap >= best_overlap:
            best, best_overlap = (kind, mark), overlap
    return best


def test_the_index_chooses_what_the_scan_chose():
    rng = random.Random(41)
    spans = []
    for n in range(400):  # ends in order, some equal; lengths from 0 to 2500 s, some equal
        end = 1.7e9 + n * rng.choice((0, 1, 30))
        took = rng.choice((0.0, 5.0, 35.5, 90.0, 400.0, 2500.0))
        spans.append((end - took, end, rng.choice(("compile", "warmup", "weights")), f"line {n}"))
    spans.sort(key=lambda s: s[1])
    index = stated.WorkIndex(spans)
    for _ in range(2000):
        start = 1.7e9 + rng.uniform(-3000, 15000)
        end = start + rng.choice((0.0, 10.0, 45.0, 300.0, 5000.0))
        assert index.during(start, end) == _scan(spans, start, end)


def _work_log(path: Path, cycles: int) -> Path:
    """A real CPU start up to its warmup, then `cycles` lines 1 s to 130 s apart, two in five
    stating a graph compile of 5 s to 2500 s (so many silences, many covered, many work lines)."""
    rng = random.Random(7)
    t = dt.datetime(2026, 11, 29, 20, 55, 0)
    lines = STARTUP.read_text().splitlines(keepends=True)[:45]
    for n in range(cycles):
        t += dt.timedelta(seconds=rng.choice((1, 2, 40, 75, 130)))
        stamp = t.strftime("%m-%d %H:%M:%S")
        if rng.random() < 0.4:
            took = rng.choice((5.0, 35.5, 90.0, 400.0, 2500.0)) + n / 1000
            lines.append(f"(Worker pid=19124) INFO {stamp} [backends.py:1] Compiling a graph for "
                         f"dynamic shape takes {took:.2f} s\n")
        else:
            lines.append(f"(Worker pid=19124) INFO {stamp} [worker.py:1] step {n}\n")
    path.write_text("".join(lines))
    return path


def test_many_silences_and_work_lines_give_the_document_of_the_scan(tmp_path, rules,
                                                                     monkeypatch):
    log = _work_log(tmp_path / "work.log", 1500)
    built, lookups = [], []
    make, during = stated.WorkIndex.__init__, stated.WorkIndex.during

    def record_make(self, spans):
        make(self, spans)
        built.append(self)

    def record_during(self, start, end):
        lookups.append(len(self.spans))
        return during(self, start, end)

    monkeypatch.setattr(stated.WorkIndex, "__init__", record_make)
    monkeypatch.setattr(stated.WorkIndex, "during", record_during)
    indexed, _ = analyze(log, rules)
    work_lines = max(len(index.spans) for index in built)
    assert work_lines > 500 and len(lookups) > 500  # many silences, many work lines
    examined = sum(index.examined for index in built)
    # a scan read every work line per silence; the index reads those within reach
    assert examined * 10 < sum(lookups)
    assert indexed["findings"] and indexed["summary"]["causes"] == ["compile-jit"]

    monkeypatch.setattr(stated.WorkIndex, "during", lambda self, s, e: _scan(self.spans, s, e))
    scanned, _ = analyze(log, rules)
    assert indexed == scanned
