"""Issue 35: no trap fires on a setting the input does not have (absent is not unknown), and
the unified-memory fraction trap keeps one threshold that agrees with its advice."""

from __future__ import annotations

import re
from pathlib import Path

from sparktriage.reproduce.check.traps import check, load_traps

from reproduce_helpers import gb10_lab, run


def _ids(facts: dict) -> dict[str, str]:
    return {h.id: h.status for h in check(facts)}


def test_no_speculation_no_speculative_trap() -> None:
    facts = {"serve.max_num_seqs": 64, "unified_memory": True, "multi_node": False}
    hits = _ids(facts)
    assert "spec-at-concurrency" not in hits and "spec-default-max-num-seqs" not in hits
    assert "ngram-structured-output" not in hits
    # hardware unknown: still no speculative trap, not even "possible"
    assert not {"spec-at-concurrency", "spec-default-max-num-seqs"} & set(
        _ids({"serve.max_num_seqs": 64}))
    # with speculation the traps are there
    hits = _ids({**facts, "speculative.method": "eagle3"})
    assert hits["spec-at-concurrency"] == "fires"


def test_uma_threshold_agrees_with_its_fix() -> None:
    trap = next(t for t in load_traps() if t.id == "uma-gmu-fraction")
    advised = [float(x) for x in re.findall(r"0\.\d+", trap.fix)]
    assert advised and max(advised) <= 0.80
    for value, fires in ((0.75, False), (0.80, False), (0.70, False), (0.85, True),
                         (0.9, True)):
        hits = _ids({"unified_memory": True, "serve.gpu_memory_utilization": value})
        assert ("uma-gmu-fraction" in hits) is fires, value
    # what the fix advises never fires the trap
    for value in advised:
        assert "uma-gmu-fraction" not in _ids({"unified_memory": True,
                                               "serve.gpu_memory_utilization": value})
    # GPU unknown at a high fraction: possible, naming the fact that decides it
    hit = next(h for h in check({"serve.gpu_memory_utilization": 0.9})
               if h.id == "uma-gmu-fraction")
    assert hit.status == "possible" and hit.unknown_facts == ["unified_memory"]


def test_speculation_kept_as_json_still_counts(tmp_path: Path) -> None:
    """A nested speculative config stays JSON in serve.flags; its method still reaches the
    traps."""
    (tmp_path / "s.sh").write_text(
        "vllm serve /m --speculative-config '{\"method\": \"eagle3\", "
        "\"num_speculative_tokens\": 3, \"draft_model_config\": {\"a\": 1}}'\n")
    r = run([tmp_path / "s.sh"], tmp_path, gb10_lab(tmp_path, 1))
    assert "speculative-config" in r.deployment["serve"]["flags"]
    ids = {t.id: t.status for t in r.traps}
    assert ids.get("spec-at-concurrency") == "fires"
    assert ids.get("spec-default-max-num-seqs") == "fires"


def test_plain_gb10_serve_line_fires_nothing_it_does_not_have(tmp_path: Path) -> None:
    (tmp_path / "s.sh").write_text("vllm serve /m --max-num-seqs 64 "
                                   "--gpu-memory-utilization 0.75\n")
    r = run([tmp_path / "s.sh"], tmp_path, gb10_lab(tmp_path, 1))
    assert [t.id for t in r.traps] == []
