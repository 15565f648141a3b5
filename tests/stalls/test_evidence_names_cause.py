"""A cause is named only from evidence for it: a compiler in the stacks or the process tree,
a compile line, a log line that states the cause. A silence (nothing read, idle processes), a
gate or the phase narrows the candidates but names none: without evidence the finding's cause
stays `unknown`, with its candidates listed as open."""

from __future__ import annotations

import copy
import shutil
from pathlib import Path

from sparktriage.stalls.analyze import analyze, load_rules
from sparktriage.stalls.render import render
from sparktriage.stalls.schema import Condition, is_evidence
from sparktriage.stalls.loader import load_directory
from sparktriage.stalls.synth import write_bundle
from sparktriage.stalls.validators import validate

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "tests" / "fixtures" / "stalls"

# a single-rank start whose weight read goes silent for 105 s: the collector samples the
# worker (no child process, nothing read), py-spy was not run
SILENT_READ = {"nodes": {"spark-1": {
    "log": [{"segment": "api_start", "at": 0}, {"segment": "worker_single", "at": 40},
            {"segment": "load_begin", "at": 41},
            [146, "Loading safetensors checkpoint shards: 100% Completed | 20/20 "
                  "[01:45<00:00,  5.2s/it]"],
            {"segment": "load_end", "at": 146}, {"segment": "compile_warm", "at": 148},
            {"segment": "kv_and_graphs", "at": 155}, {"segment": "ready", "at": 166}],
    "samples": {"procs": [{"from": 40, "to": 170, "profile": "worker"}]}}}}

# the same start, silent for 110 s while the KV cache is profiled after a warm compile
SILENT_KV = {"nodes": {"spark-1": {
    "log": [{"segment": "api_start", "at": 0}, {"segment": "worker_single", "at": 40},
            {"segment": "load_begin", "at": 41},
            [56, "Loading safetensors checkpoint shards: 100% Completed | 20/20 "
                 "[00:15<00:00,  0.75s/it]"],
            {"segment": "load_end", "at": 56}, {"segment": "compile_warm", "at": 58},
            [64, "Worker", "Profiling CUDA graph memory: PIECEWISE=51 (largest=512), "
                           "FULL=35 (largest=256)"],
            {"segment": "kv_and_graphs", "at": 174}, {"segment": "ready", "at": 185}],
    "samples": {"procs": [{"from": 40, "to": 190, "profile": "worker"}]}}}}

COMPILER = {"pid": 9100, "name": "cc1plus",
            "cmdline": "/usr/lib/gcc/aarch64-linux-gnu/13/cc1plus -O3 "
                       "/tmp/torchinductor_root/k.cpp"}


def _stalls(tmp_path: Path, spec: dict, library, rules) -> tuple[list[dict], str]:
    folder = tmp_path / f"case{len(list(tmp_path.iterdir()))}"
    document, _ = analyze(write_bundle(spec, folder / "bundle", FIXTURES, library), rules, None)
    return [f for f in document["findings"] if f["kind"] == "stall"], \
        render(document).text()


def _longest(findings: list[dict]) -> dict:
    assert findings, "the silence is a stall"
    return max(findings, key=lambda f: f["duration_s"])


def test_a_silent_weight_read_without_a_compiler_leaves_the_cause_open(tmp_path, library, rules):
    found, text = _stalls(tmp_path, SILENT_READ, library, rules)
    stall = _longest(found)
    assert stall["phase"] == "weight_read" and stall["duration_s"] >= 100
    verdict = stall["verdict"]
    assert verdict["id"] == "unknown" and verdict["confidence"] == 0.0
    assert "compile-jit" in verdict["open"]
    assert "cause: unknown" in text and "still open" in text and "compile-jit" in text
    # no_reads held and is still shown, but as a silence it named nothing
    compile_jit = next(a for a in verdict["alternatives"] if a["id"] == "compile-jit")
    assert compile_jit["state"] == "open" and compile_jit["support"] > 0


def test_a_silent_kv_profiling_without_a_compiler_leaves_the_cause_open(tmp_path, library, rules):
    stall = _longest(_stalls(tmp_path, SILENT_KV, library, rules)[0])
    assert stall["phase"] == "kv_profiling" and stall["duration_s"] >= 100
    assert stall["verdict"]["id"] == "unknown" and stall["verdict"]["confidence"] == 0.0
    assert "compile-jit" in stall["verdict"]["open"]


def test_a_compiler_under_the_worker_names_compile_jit_in_the_same_silence(tmp_path, library,
                                                                           rules):
    spec = copy.deepcopy(SILENT_READ)
    spec["nodes"]["spark-1"]["samples"]["procs"] = [
        {"from": 40, "to": 45, "profile": "worker"},
        {"from": 46, "to": 145, "profile": "worker", "record": {"children": [COMPILER]}},
        {"from": 146, "to": 170, "profile": "worker"}]
    verdict = _longest(_stalls(tmp_path, spec, library, rules)[0])["verdict"]
    assert verdict["id"] == "compile-jit" and verdict["state"] == "decided"
    assert verdict["confidence"] >= 0.6


# a rule written the wrong way, under a taxonomy id: decides on the phase and a silence only
GUESS_RULE = """title: a cause guessed from a quiet weight read
id: loader-backend
status: experimental
description: decides on the phase and a silence only (a rule written the wrong way)
references: ["field-reports RC-10 (L-51)"]
kinds: [stall]
phases: [weight_read]
evidence: [procs, log]
conditions:
  reading_weights:
    phase: [weight_read]
  idle:
    use: no_reads
decision: reading_weights and idle
fix:
  summary: none
"""


def test_a_decision_on_phase_and_silence_alone_is_open_not_decided(tmp_path, library):
    folder = tmp_path / "rules"
    shutil.copytree(REPO / "rules", folder)
    (folder / "loader-backend.yaml").write_text(GUESS_RULE)
    rules = load_rules(folder)
    verdict = _longest(_stalls(tmp_path, SILENT_READ, library, rules)[0])["verdict"]
    assert verdict["id"] == "unknown"
    guess = next(a for a in verdict["alternatives"] if a["id"] == "loader-backend")
    assert guess["state"] == "open" and "only on gates, the phase or a silence" in guess["why_not"]
    assert {"loader-backend", "compile-jit"} <= set(verdict["open"])


def test_which_conditions_are_evidence():
    shared = {"quiet": Condition(signal="procs.read_bps", below=1e5, silence=True),
              "frames": Condition(frames=["torch/_inductor"])}
    line = Condition(log="compile_start")
    assert is_evidence(line, shared)
    assert is_evidence(Condition(use="frames"), shared)
    assert not is_evidence(Condition(use="quiet"), shared)
    assert not is_evidence(Condition(use="absent"), shared)
    assert not is_evidence(Condition(phase=["weight_read"]), shared)
    assert not is_evidence(Condition(signal="log.ranks", above=1, gate=True), shared)
    # all: one evidential part is enough; any: the part that held is unknown, so all must be
    assert is_evidence(Condition(all=[line, Condition(phase=["compile"])]), shared)
    assert not is_evidence(Condition(any=[line, Condition(phase=["compile"])]), shared)
    assert is_evidence(Condition(any=[line, Condition(use="frames")]), shared)


def test_rules_check_warns_of_a_rule_that_can_never_name_its_cause(tmp_path):
    folder = tmp_path / "rules"
    shutil.copytree(REPO / "rules", folder)
    assert not [p for p in validate(load_directory(folder)[0]) if p.check == "grounded"]
    (folder / "loader-backend.yaml").write_text(GUESS_RULE)
    problems = [p for p in validate(load_directory(folder)[0]) if p.check == "grounded"]
    assert len(problems) == 1 and problems[0].severity == "warning"
    assert problems[0].location.path.endswith("loader-backend.yaml")
    assert "never name it" in problems[0].message


def test_the_live_watcher_reports_the_silence_as_open_with_its_candidates(tmp_path, library):
    from sparktriage.session.live import LiveState, StallWatcher
    bundle = write_bundle(SILENT_READ, tmp_path / "bundle", FIXTURES, library)
    watcher = StallWatcher(bundle, tmp_path / "live-stalls.jsonl", lambda *a, **k: None)
    records = [r for r in watcher.check() if r["kind"] == "stall" and r["phase"] == "weight_read"]
    assert [(r["cause"], r["confidence"]) for r in records] == [("unknown", 0.0)]
    assert "compile-jit" in records[0]["open"]
    state = LiveState()
    state.apply("live-stall", records[0])
    shown = state.nodes["spark-1"].cause
    assert shown.startswith("unknown (open: ") and "compile-jit" in shown and "weight_read" in shown
