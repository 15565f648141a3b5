"""Untimed excerpts (issue 36): a log without one stamp is read as far as it goes.

The pastes are in tests/stalls/untimed/ (README there). Every path (full, pure-Python fast,
compiled) gives the same document for them (`_same`, as for every other log).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from sparktriage.documents.logs import LogsDocument
from sparktriage.errors import InputError
from sparktriage.logs.scan import analyze_inputs
from sparktriage.logs.sources import BytesSource
from sparktriage.logs.untimed import NOT_A_LOG, require_log
from sparktriage.store.typed import check

from test_scan import _same

PASTES = Path(__file__).parents[1] / "stalls" / "untimed"


def _doc(blob: bytes) -> dict:
    doc = analyze_inputs([BytesSource("<paste>", "n", False, data=blob)])
    check(LogsDocument, {"schema_version": 1, **doc})
    return doc


def _paste(name: str) -> bytes:
    return (PASTES / name).read_bytes()


def _failures(doc: dict) -> list[dict]:
    return [f for f in doc["findings"] if f["code"] in ("startup-failed", "engine-died")]


def test_a_bare_traceback_of_an_engine_dead_at_start_is_one_failure_without_times():
    doc = _doc(_paste("engine-free-memory-traceback.txt"))
    require_log("<paste>", doc)  # not refused
    assert doc["time_basis"]["timed"] is False
    assert doc["time_basis"]["first"] is None and doc["time_basis"]["last"] is None
    assert doc["counts"]["recognised_untimed"] == 2  # the traceback and the RuntimeError line
    # logs counts both errors; the start failed once, of its engine death
    assert doc["errors_total"] == 2
    assert [(e["kind"], e["engine_death"], e["time"]) for e in doc["errors"]] == [
        ("traceback", False, None), ("exception", True, None)]
    assert doc["errors"][0]["text"].startswith("ValueError: Free memory on device (31.44/47.38")
    failures = _failures(doc)
    assert len(failures) == 1 and failures[0]["severity"] == "error"
    assert "Engine core initialization failed" in failures[0]["text"]
    st = doc["startup"]
    assert st["failed"] is True and st["complete"] is False
    assert st["startup_s"] is None and st["seen_s"] is None and st["failure_time"] is None
    # untimed stated, and what that rules out
    assert doc["excerpt"] is True
    codes = {r["code"] for r in doc["excerpt_detail"]["reasons"]}
    assert codes == {"untimed", "no-start"}
    assert doc["excerpt_detail"]["cannot_tell"][0].startswith("the excerpt has no time stamps")
    # no durations or rates invented
    assert doc["phases"] == [] and doc["silences"] == [] and doc["gaps"] == []
    assert doc["throughput"]["windows"] == []
    assert doc["throughput"]["generation"] == {"windows": 0, "mean": None, "mean_active": None,
                                               "peak": None}


def test_the_phase_of_an_untimed_failure_is_the_one_the_lines_before_it_name():
    doc = _doc(_paste("load-oom-traceback.txt"))
    assert [(e["kind"], e["phase"]) for e in doc["errors"]] == [("traceback", "weight_read")]
    failures = _failures(doc)
    assert len(failures) == 1
    assert failures[0]["text"].startswith("startup failed during weight_read: torch.OutOfMemory")


def test_an_untimed_hf_download_lock_wait_is_read_with_no_failure():
    doc = _doc(_paste("hf-download-lock-wait.txt"))
    require_log("<paste>", doc)
    # the hub's "Fetching 42 files" bar and the three lock waits (catalog: resolve.lock); the
    # shell command line is not one
    assert doc["counts"]["recognised_untimed"] == 4
    assert doc["errors_total"] == 0 and _failures(doc) == []
    assert not any(f["severity"] == "error" for f in doc["findings"])  # exit 0
    assert "untimed" in {r["code"] for r in doc["excerpt_detail"]["reasons"]}
    assert doc["startup"]["failed"] is False and doc["startup"]["startup_s"] is None


def test_an_untimed_nccl_error_paste_is_one_failure():
    doc = _doc(_paste("nccl-connect-error.txt"))
    assert doc["counts"]["kinds"].get("nccl") == 4  # NCCL INFO lines read as NCCL's
    assert doc["errors_total"] == 1
    assert doc["errors"][0]["text"].startswith("torch.distributed.DistBackendError: NCCL error")
    failures = _failures(doc)
    assert len(failures) == 1 and "DistBackendError" in failures[0]["text"]
    assert doc["excerpt"] is True


@pytest.mark.parametrize("blob", [
    b"The quick brown fox jumps over the lazy dog.\nNothing here but prose about pasta.\n",
    b"",
    bytes(range(256)) * 40,
    b"shopping list\nmilk\neggs\nINFO is a word too\n",
])
def test_text_that_is_no_serving_stack_log_is_still_refused(blob):
    doc = _doc(blob)
    assert doc["counts"]["recognised_untimed"] == 0
    with pytest.raises(InputError) as info:
        require_log("<paste>", doc)
    assert str(info.value) == f"<paste>: {NOT_A_LOG}" and "\n" not in str(info.value)


def test_a_timed_log_is_unchanged_by_the_untimed_reading():
    blob = b"INFO 06-22 02:54:36 [backends.py:193] Compiling a graph for general shape takes 1 s\n"
    doc = _doc(blob)
    assert doc["time_basis"]["timed"] is True and doc["counts"]["recognised_untimed"] == 0
    assert "untimed" not in {r["code"] for r in doc["excerpt_detail"]["reasons"]}


@pytest.mark.parametrize("name", sorted(p.name for p in PASTES.glob("*.txt")))
@pytest.mark.parametrize("block_size", [64, 1 << 16])
def test_every_path_reads_an_untimed_paste_alike(name, block_size):
    _same(_paste(name), block_size)
