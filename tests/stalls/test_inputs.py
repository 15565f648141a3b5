"""Loading evidence: indexed sample files, subsampled long windows, clock offsets, archives."""

from __future__ import annotations

import json
import tarfile

from sparktriage.bundle.indexed import IndexedRecords
from sparktriage.stalls.inputs import load


def _write(path, records):
    path.write_text("".join(json.dumps(r) + "\n" for r in records))


def test_window_reads_only_its_records_and_subsamples_long_ones(tmp_path):
    path = tmp_path / "procs.jsonl"
    # 1000 rounds of 3 processes, one round per second, one torn line in the middle
    lines = [json.dumps({"pid": p, "cpu_user_pct": float(s), "t": 1000.0 + s})
             for s in range(1000) for p in (1, 2, 3)]
    lines.insert(1500, '{"t": 1500.0, "pid": 9, "torn')
    path.write_text("\n".join(lines) + "\n")
    series = IndexedRecords.scan(path)
    assert len(series) == 3001  # the torn line is indexed, then skipped when read
    short = series.window(1010.0, 1019.0)
    assert len(short) == 30 and {r["pid"] for r in short} == {1, 2, 3}
    full = series.window(0, 5000, max_rounds=50)
    times = sorted({r["t"] for r in full})
    assert len(times) == 50 and times[0] == 1000.0 and times[-1] == 1999.0
    assert all(sum(1 for r in full if r["t"] == t) == 3 for t in times)  # whole rounds


def test_clock_offset_moves_records_onto_the_collectors_clock(tmp_path):
    path = tmp_path / "host.jsonl"
    _write(path, [{"t": 100.0}, {"t": 101.0}])
    series = IndexedRecords.scan(path, clock_offset=2.5)  # node clock runs 2.5 s ahead
    assert list(series.times) == [97.5, 98.5]
    assert [r["t"] for r in series.window(97, 99)] == [97.5, 98.5]


def test_bundle_archive_is_read_like_the_folder(classify, tmp_path):
    spec = {"nodes": {"n1": {"log": [{"segment": "api_start", "at": 0},
                                     {"segment": "ready", "at": 30}],
                             "samples": {"host": [{"from": 0, "to": 31, "profile": "host_calm"}]}}}}
    document, classification = classify(spec)
    folder = classification.evidence.origin
    archive = tmp_path / "b.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(folder, arcname="bundle")
    again = load(archive)
    assert again.form == "bundle" and set(again.nodes) == {"n1"}
    assert again.nodes["n1"].has("host") and len(again.nodes["n1"].events) == len(
        classification.evidence.nodes["n1"].events)
