"""Real vLLM serves every variant of the tiny trained MoE model; the probe must get it right.

Controls (the trained checkpoint, correct NVFP4 and MXFP4 round trips) are never called
garbage or suspect; every gross dispatch bug is called garbage, with or without a baseline;
every subtle bug is at least suspect against the baseline of its format (the fingerprint of the
correct round trip: a known-good launch of the same FP4 checkpoint). One server start per
variant, with the engine core in-process to start faster; two variants are served at a time
(each its own server, port and run directory): a start is mostly single-threaded imports and
loading, so two of them share the two cores of CI in about the time of one and a half, and the
probe's verdict does not depend on its speed.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from sparktriage.probe import baseline as baseline_io
from sparktriage.testbed.garbage.bugs import CATALOGUE, by_name
from sparktriage.testbed.garbage.harness import (ConfusionRecorder, expectation_met, probe, row, run_variant,
                                                 serve_spec)
from sparktriage.testbed.garbage.variants import build_variant
from sparktriage.testbed.server import served

pytestmark = [pytest.mark.vllm, pytest.mark.slow]
SEED = 11
BUGS = [v for v in CATALOGUE if v.severity != "control"]
AT_ONCE = 2  # servers at a time (see the module doc)


@pytest.fixture(scope="module")
def recorder():
    """Rows of every run; written as the confusion table when SPARKTRIAGE_CONFUSION_OUT is set
    (provision/garbage/confusion.py)."""
    rec = ConfusionRecorder(SEED)
    yield rec
    out = os.environ.get("SPARKTRIAGE_CONFUSION_OUT")
    if out and rec.rows:
        doc = os.environ.get("SPARKTRIAGE_CONFUSION_DOC")
        rec.write(Path(out), Path(doc) if doc else None)


@pytest.fixture(scope="module")
def controls(testbed, tmp_path_factory, recorder):
    """Launch the three controls once; keep their rows and the baselines they provide.

    The trained checkpoint is probed twice in one launch (without, then with its own
    fingerprint); the FP4 round trips are compared with the trained checkpoint (different
    numerics, same model) and their fingerprints become the baselines of their bugs.
    """
    work = tmp_path_factory.mktemp("garbage-controls")
    fps = {fmt: work / f"{fmt}.fingerprint.json" for fmt in ("bf16", "nvfp4", "mxfp4")}
    bf16 = by_name("bf16")
    with served(testbed, serve_spec(build_variant(bf16, work / "bf16" / "model")),
                work / "bf16" / "serve") as server:
        first = probe(server.base_url, SEED)
        baseline_io.save(first.fingerprint, fps["bf16"], server.base_url, first.server_version)
        second = probe(server.base_url, SEED + 1, fps["bf16"])
    rows = {"bf16": (row(bf16, second.document), second.document), "bf16-first": (None, first.document)}
    with ThreadPoolExecutor(AT_ONCE) as pool:
        runs = {fmt: pool.submit(run_variant, testbed, by_name(fmt), work, SEED,
                                 baseline=fps["bf16"], save_baseline=fps[fmt])
                for fmt in ("nvfp4", "mxfp4")}
        rows.update({fmt: run.result() for fmt, run in runs.items()})
    for name in ("bf16", "nvfp4", "mxfp4"):
        recorder.add(rows[name][0])
    return {"rows": rows, "fingerprints": fps}


@pytest.mark.parametrize("name", ["bf16", "nvfp4", "mxfp4"])
def test_controls_are_healthy(controls, name):
    r, doc = controls["rows"][name]
    assert expectation_met(r), r
    assert r["verdict"] == "healthy", r
    assert doc["tokens_spent"] < 10_000
    assert all(status == "ok" for status in r["families"].values()), r["families"]


def test_first_probe_without_baseline_is_not_garbage(controls):
    """Without a baseline the tiny model fails some absolute guards a capable model passes
    (docs/garbage.md); it must still never be called garbage."""
    _, first = controls["rows"]["bf16-first"]
    assert first["verdict"] != "garbage" and first["baseline"] is None
    assert {f["name"]: f["status"] for f in first["families"]}["sanity"] == "ok"
    assert all(fp.exists() for fp in controls["fingerprints"].values())
    out = os.environ.get("SPARKTRIAGE_FINGERPRINT_OUT")
    if out:  # the committed fingerprint of the healthy model (provision/garbage/confusion.py)
        Path(out).write_text(controls["fingerprints"]["bf16"].read_text())


@pytest.fixture(scope="module")
def bug_runs(testbed, controls, tmp_path_factory):
    """Every bug variant served and probed, AT_ONCE at a time: name -> future of (row, doc)."""
    work = tmp_path_factory.mktemp("garbage-bugs")
    with ThreadPoolExecutor(AT_ONCE) as pool:
        runs = {v.name: pool.submit(run_variant, testbed, v, work, SEED,
                                    baseline=controls["fingerprints"][v.fmt]) for v in BUGS}
        for run in runs.values():  # every server is stopped before the tests read the rows
            run.exception()
    return runs


@pytest.mark.parametrize("variant", BUGS, ids=lambda v: v.name)
def test_bug_variant(bug_runs, recorder, variant):
    r, doc = bug_runs[variant.name].result()  # re-raises that variant's own failure
    recorder.add(r)
    assert expectation_met(r), r
    assert doc["pattern"] is not None and doc["advice"]
