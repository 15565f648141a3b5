"""Every variant of the tiny trained MoE model, as real vLLM serves it; the probe must get it right.

Controls (the trained checkpoint, correct NVFP4 and MXFP4 round trips) are never called
garbage or suspect; every gross dispatch bug is called garbage, with or without a baseline;
every subtle bug is at least suspect against the baseline of its format (the fingerprint of the
correct round trip: a known-good launch of the same FP4 checkpoint).

Two tiers (docs/testbed.md, "Recordings"):

* **Replay** (every variant): the probe runs against the variant's committed recording
  (provision/garbage/recordings, made by provision/garbage/record.py from real vLLM CPU 0.32
  serving that variant), served back byte for byte by a loopback replay server. Each replay
  must ask exactly the recorded requests, no more (a miss is a loud HTTP 500, and the test of
  that variant fails) and none fewer. The verdict assertions run on these probes.
* **Live** (`LIVE`: the trained checkpoint, the NVFP4 round trip, one gross and one subtle
  bug): real vLLM serves the variant behind the recording proxy, the same probes run, and what
  the server answered must equal the committed recording after canonicalizing only the
  per-request `id`/`created` fields, the per-start `system_fingerprint`, the model card's served path and the date headers; the live
  verdict must be the expected one and its row the replayed row. This is what proves the
  recordings faithful to today's vLLM and model; when it fails, rerun the recording script.

Live servers start with the engine core in-process, two at a time (each its own port and run
directory): a start is mostly single-threaded imports and loading, so two share CI's two cores.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from sparktriage.testbed.garbage.bugs import CATALOGUE, by_name
from sparktriage.testbed.garbage.harness import ConfusionRecorder, expectation_met
from sparktriage.testbed.garbage.scenario import (SEED, VariantRun, model_sha256, record_variant, recording_path,
                                                  replay_variant, stages)
from sparktriage.testbed.replay import exchanges
from sparktriage.testbed.replay.server import RERUN

pytestmark = [pytest.mark.slow]
BUGS = [v for v in CATALOGUE if v.severity != "control"]
CONTROLS = [v.name for v in CATALOGUE if v.severity == "control"]
LIVE = ("bf16", "nvfp4", "nvfp4-scale-as-e5m2", "nvfp4-swizzle-last-layer")
AT_ONCE = 2  # live servers at a time (see the module doc)


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
def replayed(tmp_path_factory, recorder) -> dict[str, VariantRun | Exception]:
    """Every variant probed against its recording, controls first (their fingerprints are the
    bugs' baselines): name -> its run, or the exception that stopped it."""
    work = tmp_path_factory.mktemp("garbage-replay")
    baselines: dict[str, Path] = {}
    runs: dict[str, VariantRun | Exception] = {}
    for stage in stages():
        for variant in stage:
            try:
                run = replay_variant(exchanges.load(recording_path(variant.name)), variant, SEED, baselines, work)
            except Exception as exc:  # noqa: BLE001 - re-raised by that variant's tests
                runs[variant.name] = exc
                continue
            runs[variant.name] = run
            if run.fingerprint is not None:
                baselines[variant.fmt or "bf16"] = run.fingerprint
    for name in CONTROLS:
        if isinstance(runs[name], VariantRun):
            recorder.add(runs[name].row)
    return runs


def _run(runs: dict, name: str) -> VariantRun:
    run = runs[name]
    if isinstance(run, Exception):
        raise run
    return run


@pytest.mark.parametrize("variant", CATALOGUE, ids=lambda v: v.name)
def test_recording_is_of_this_model_and_seed(variant):
    meta = exchanges.load(recording_path(variant.name)).meta
    assert (meta["variant"], meta["seed"]) == (variant.name, SEED), f"{meta}; {RERUN}"
    assert meta["model_sha256"] == model_sha256(), f"the trained model changed since the recording; {RERUN}"


@pytest.mark.parametrize("variant", CATALOGUE, ids=lambda v: v.name)
def test_replay_asks_exactly_what_was_recorded(replayed, variant):
    run = _run(replayed, variant.name)
    assert run.misses == [], f"the probe asked what the recording does not hold; {RERUN}"
    assert run.unused == [], f"the probe no longer asks what was recorded; {RERUN}"


@pytest.mark.parametrize("name", CONTROLS)
def test_controls_are_healthy(replayed, name):
    run = _run(replayed, name)
    r = run.row
    assert expectation_met(r), r
    assert r["verdict"] == "healthy", r
    assert run.document["tokens_spent"] < 10_000
    assert all(status == "ok" for status in r["families"].values()), r["families"]


def test_first_probe_without_baseline_is_not_garbage(replayed):
    """Without a baseline the tiny model fails some absolute guards a capable model passes
    (docs/garbage.md); it must still never be called garbage."""
    first = _run(replayed, "bf16").first
    assert first["verdict"] != "garbage" and first["baseline"] is None
    assert {f["name"]: f["status"] for f in first["families"]}["sanity"] == "ok"
    fingerprints = [_run(replayed, name).fingerprint for name in CONTROLS]
    assert all(fp is not None and fp.exists() for fp in fingerprints)
    out = os.environ.get("SPARKTRIAGE_FINGERPRINT_OUT")
    if out:  # the committed fingerprint of the healthy model (provision/garbage/confusion.py)
        Path(out).write_text(fingerprints[0].read_text())


@pytest.mark.parametrize("variant", BUGS, ids=lambda v: v.name)
def test_bug_variant(replayed, recorder, variant):
    run = _run(replayed, variant.name)
    recorder.add(run.row)
    assert expectation_met(run.row), run.row
    assert run.document["pattern"] is not None and run.document["advice"]


@pytest.fixture(scope="module")
def live(testbed, replayed, tmp_path_factory):
    """The LIVE variants served by real vLLM behind the recording proxy, AT_ONCE at a time,
    against the replayed controls' fingerprints: name -> future of (run, fresh recording)."""
    baselines = {v.fmt or "bf16": _run(replayed, v.name).fingerprint for v in CATALOGUE if v.severity == "control"}
    work = tmp_path_factory.mktemp("garbage-live")
    with ThreadPoolExecutor(AT_ONCE) as pool:
        runs = {name: pool.submit(record_variant, testbed, by_name(name), SEED, baselines, work) for name in LIVE}
        for run in runs.values():  # every server is stopped before the tests read the runs
            run.exception()
    return runs


@pytest.mark.vllm
@pytest.mark.parametrize("name", LIVE)
def test_live_server_answers_what_is_recorded(live, name):
    _, fresh = live[name].result()  # re-raises that variant's own failure
    committed = exchanges.load(recording_path(name))
    found = exchanges.differences(fresh.exchanges, committed.exchanges)
    assert not found, (f"recordings stale: rerun provision/garbage/record.py ({len(found)} of "
                       f"{len(committed.exchanges)} exchanges differ):\n{exchanges.summary(found)}")
    assert fresh.meta["server_version"] == committed.meta["server_version"]


@pytest.mark.vllm
@pytest.mark.parametrize("name", LIVE)
def test_live_verdict_is_expected_and_equals_the_replay(live, replayed, name):
    run, _ = live[name].result()
    assert expectation_met(run.row), run.row
    if run.variant.severity != "control":
        assert run.document["pattern"] is not None and run.document["advice"]
    if run.first is not None:
        assert run.first["verdict"] != "garbage"
    without_wall = lambda r: {k: v for k, v in r.items() if k != "wall_s"}  # noqa: E731
    assert without_wall(run.row) == without_wall(_run(replayed, name).row)
