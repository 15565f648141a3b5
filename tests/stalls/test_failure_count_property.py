"""`logs` and `stalls` count the same failures on random mixes of real line shapes.

The lines come from the field corpus (tests/stalls/field: real pastes from public threads) and
the real CPU server's logs in shared research; each mix draws a few runs of consecutive lines
from several files (so tracebacks, waits and serving lines keep their shape) and joins them in
a random order. Both cores read the mix the way the CLI does; the number of failures `logs`
reports (startup-failed, engine-died) must equal the number of `stalls` failure findings. The
two-node mixes deal the runs to two nodes as line records (receive times), as a two-node
launch records them, and compare the counts node by node.
"""

from __future__ import annotations

import json
import random
from collections import Counter
from functools import lru_cache
from pathlib import Path

import pytest

from sparktriage.errors import SparktriageError
from sparktriage.logs.scan import analyze_inputs
from sparktriage.logs.untimed import require_log
from sparktriage.stalls.analyze import analyze, load_rules

FIELD = Path(__file__).resolve().parent / "field"
MIXES = 300
SEED = 45


@lru_cache(maxsize=1)
def _sources() -> list[list[str]]:
    return [p.read_text(encoding="utf-8").splitlines() for p in sorted(FIELD.glob("*.log"))]


def _mix(rng: random.Random) -> str:
    sources = _sources()
    pieces = []
    for lines in rng.sample(sources, rng.randint(1, 4)):
        start = rng.randrange(len(lines))
        pieces.append(lines[start:start + rng.randint(1, 25)])
    rng.shuffle(pieces)
    return "\n".join(line for piece in pieces for line in piece) + "\n"


def _counts(path: Path, rules) -> tuple[int | None, int | None]:
    try:
        document, _ = analyze(path, rules, None)
        stalls = sum(1 for f in document["findings"] if f["kind"] == "failure")
    except SparktriageError:
        stalls = None
    try:
        logs_doc = analyze_inputs([str(path)])
        require_log(str(path), logs_doc)
        logs = sum(1 for f in logs_doc["findings"]
                   if f["code"] in ("startup-failed", "engine-died"))
    except SparktriageError:
        logs = None
    return stalls, logs


# Both commands read one failure decision (logs/decision.py). Before it, 33 to 35 of these 300
# mixes differed (most a start that logged errors in a paste whose stamps jump back, so the
# errors fell outside the attempt's time window in `logs` and inside a failing episode in
# `stalls`); with it, none.
@pytest.mark.parametrize("block", range(6))
def test_logs_and_stalls_count_the_same_failures_on_random_mixes(tmp_path, block):
    rules = load_rules(None)
    rng = random.Random(SEED * 1000 + block)
    differ = {}
    failing = 0
    for i in range(MIXES // 6):
        path = tmp_path / f"mix-{i}.log"
        path.write_text(_mix(rng), encoding="utf-8")
        stalls, logs = _counts(path, rules)
        if stalls != logs:
            differ[i] = (stalls, logs, path.read_text()[:400])
        failing += bool(stalls)
    assert not differ, f"(stalls, logs) differ on {len(differ)} mixes: " + \
        repr(next(iter(differ.values())))
    assert failing > 0  # the mixes do hold failures, else the test proves nothing


def _two_nodes(rng: random.Random) -> str:
    rows, t = [], 1_780_000_000.0
    for lines in rng.sample(_sources(), rng.randint(2, 4)):
        node, start = rng.choice(("st-node1", "st-node2")), rng.randrange(len(lines))
        for line in lines[start:start + rng.randint(1, 25)]:
            t += rng.choice((0.0, 0.5, 1.0, 30.0, 200.0))  # bursts, waits and silences
            rows.append({"t": t, "node": node, "stream": "stdout", "line": line})
    return "".join(json.dumps(row) + "\n" for row in rows)


def _per_node(path: Path, rules) -> tuple[Counter | None, Counter | None]:
    try:
        document, _ = analyze(path, rules, None)
        stalls = Counter(f["node"] for f in document["findings"] if f["kind"] == "failure")
    except SparktriageError:
        stalls = None
    try:
        logs_doc = analyze_inputs([str(path)])
        require_log(str(path), logs_doc)
        logs = Counter(f["node"] for f in logs_doc["findings"]
                       if f["code"] in ("startup-failed", "engine-died"))
    except SparktriageError:
        logs = None
    return stalls, logs


@pytest.mark.parametrize("block", range(3))
def test_logs_and_stalls_count_the_same_failures_per_node_on_two_node_mixes(tmp_path, block):
    rules = load_rules(None)
    rng = random.Random(SEED * 2000 + block)
    differ, nodes_failing = {}, set()
    for i in range(MIXES // 3):
        path = tmp_path / f"mix-{i}.lines.jsonl"
        path.write_text(_two_nodes(rng), encoding="utf-8")
        stalls, logs = _per_node(path, rules)
        if stalls != logs:
            differ[i] = (stalls, logs)
        nodes_failing |= set(stalls or ())
    assert not differ, f"(stalls, logs) differ per node on {len(differ)} mixes: {differ}"
    assert nodes_failing == {"st-node1", "st-node2"}  # failures on both nodes were drawn
