"""The seed's three look-alikes share one log byte for byte; host signals tell them apart.

mmap-fault-crawl, cold-storage and uma-memory-pressure fixtures reuse the same log spec
(_lookalike/crawl-log.yaml). Their bundles' line records must be identical, their verdicts
different and decided; the same log alone must leave all three open.
"""

from __future__ import annotations

from pathlib import Path

from sparktriage.stalls import fixtures as fixture_layer
from sparktriage.stalls.analyze import analyze

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "stalls"
TRIO = {
    "cold-storage": FIXTURES / "cold-storage" / "positive" / "throttled-read.yaml",
    "mmap-fault-crawl": FIXTURES / "mmap-fault-crawl" / "positive" / "fault-bound.yaml",
    "uma-memory-pressure": FIXTURES / "uma-memory-pressure" / "positive" / "available-to-zero.yaml",
}
PLAIN = FIXTURES / "cold-storage" / "negative" / "plain-log-undecided.yaml"


def _stall(document: dict) -> dict:
    stalls = [f for f in document["findings"] if f["kind"] == "stall"]
    assert len(stalls) == 1, stalls
    return stalls[0]


def test_identical_logs_different_causes(rules, library, tmp_path):
    logs, verdicts = {}, {}
    for cause, case in TRIO.items():
        bundle = fixture_layer.build(case, tmp_path / cause, library)
        logs[cause] = (bundle / "nodes" / "spark-1" / "logs" / "server.lines.jsonl").read_bytes()
        document, _ = analyze(bundle, rules)
        verdicts[cause] = _stall(document)
    assert len(set(logs.values())) == 1, "the three fixtures must share a byte-identical log"
    for cause, finding in verdicts.items():
        verdict = finding["verdict"]
        assert verdict["id"] == cause
        assert verdict["state"] == "decided" and verdict["confidence"] >= 0.8
        others = {a["id"]: a for a in verdict["alternatives"]}
        for other in set(TRIO) - {cause}:
            assert others[other]["state"] == "excluded"
            assert others[other]["why_not"].startswith("excluded: ")
    # the same stall window, found from the log alone, in all three
    assert len({(f["start"], f["end"], f["phase"]) for f in verdicts.values()}) == 1


def test_what_told_them_apart_is_named(rules, library, tmp_path):
    bundle = fixture_layer.build(TRIO["cold-storage"], tmp_path, library)
    verdict = _stall(analyze(bundle, rules)[0])["verdict"]
    mmap = next(a for a in verdict["alternatives"] if a["id"] == "mmap-fault-crawl")
    assert "told apart by loader_idle" in mmap["why_not"]
    assert "procs.top_thread_cpu" in mmap["why_not"]
    seen = {e["condition"] for e in verdict["evidence"]}
    assert {"reading", "io_wait", "loader_idle", "not memory_collapse"} <= seen


def test_plain_log_leaves_the_three_open(rules, library, tmp_path):
    log = fixture_layer.build(PLAIN, tmp_path, library)
    expected = log.read_text()
    # the plain log is the same lines as the bundles' records
    bundle = fixture_layer.build(TRIO["mmap-fault-crawl"], tmp_path / "b", library)
    records = (bundle / "nodes" / "spark-1" / "logs" / "server.lines.jsonl").read_text()
    assert all(line in records for line in expected.splitlines()[:5])
    finding = _stall(analyze(log, rules)[0])
    verdict = finding["verdict"]
    assert verdict["id"] == "unknown" and verdict["confidence"] == 0.0
    assert set(TRIO) <= set(verdict["open"])
    advice = " ".join(verdict["to_raise_confidence"])
    assert "sparktriage collect" in advice
