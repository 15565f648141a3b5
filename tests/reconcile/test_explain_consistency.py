"""Every explanation sentence of a reconciliation checked against the counts it cites (issue 14).

The checker below is independent of reconcile/explain.py: for each sentence it finds every cited
number in the words, recomputes the cited counts from the document's own delivered / metrics /
window counts, checks the claim the sentence makes, and checks that no two sentences contradict
each other. It runs over several reconciliation inputs: consistent, a log that over-counts, a log
that over-counts while /metrics matches (the issue's contradiction), idle windows with hidden
stats lines, speculative decoding, concurrency, no metrics (404 scrapes) and no log.
"""

from __future__ import annotations

import json
import statistics

import pytest

from sparktriage.logs.series import StatsWindow
from sparktriage.reconcile.windows import delivered_from_records, reconcile
from tests.reconcile.test_reconcile import T0, record, steady_run, windows_from

TOLERANCE = 0.15


def _variants(value) -> set[str]:
    if isinstance(value, bool) or value is None:
        return set()
    if isinstance(value, str):
        return {value}
    out = {f"{value:.0f}", f"{value:.1f}", f"{value:.2f}", f"{value:.3f}", f"{value:.0%}"}
    if float(value).is_integer():
        out.add(str(int(value)))
    return out


def _judged(log: dict) -> list[dict]:
    full = [r for r in log["windows"] if r["inside_protocol_fraction"] >= 0.9]
    return full or log["windows"]


def _peak_row(log: dict) -> dict:
    return max(log["windows"], key=lambda r: r["logged_tok_s"])


def check(doc: dict) -> list[str]:
    """Every problem found with the document's sentences (empty: all consistent)."""
    problems: list[str] = []
    codes = [r["code"] for r in doc["reasons"]]

    def expect(ok: bool, what: str) -> None:
        if not ok:
            problems.append(what)

    for r in doc["reasons"]:
        try:
            _check_one(r, doc, expect)
        except KeyError as missing:
            problems.append(f"{r['code']}: cites no {missing}")
    _check_together(doc, codes, expect)
    return problems


def _check_one(r: dict, doc: dict, expect) -> None:
    """One sentence: its cited numbers are in its words and equal the document's counts."""
    d, m, log = doc["delivered"], doc.get("metrics") or {}, doc.get("log") or {}
    code, c, text = r["code"], r.get("cites"), r["text"]
    expect(isinstance(c, dict), f"{code}: no cites")
    c = c or {}
    for name, value in c.items():
        if _variants(value):
            expect(any(v in text for v in _variants(value)), f"{code}: {name}={value} not in {text!r}")
    if code == "metrics_match":
        expect(c["generated"] == m["generation_tokens"] == c["delivered"] == m["delivered_tokens"],
               f"{code}: counts {c} vs metrics {m.get('generation_tokens')}/{m.get('delivered_tokens')}")
    elif code == "client_received_fewer":
        expect(c["generated"] - c["delivered"] == c["difference"] > 0
               and c["generated"] == m["generation_tokens"], f"{code}: {c}")
    elif code == "client_counted_more":
        expect(c["delivered"] > c["generated"] == m["generation_tokens"], f"{code}: {c}")
    elif code == "metrics_failed":
        expect(c["windows"] == len(m["windows"]) and all(w.get("error") for w in m["windows"]),
               f"{code}: {c}")
    elif code == "log_counts_undelivered":
        over = [w for w in _judged(log) if w["verdict"] == "log_counts_undelivered"]
        expect(c["over"] == len(over) > 0 and c["judged"] == len(_judged(log))
               and c["difference"] == pytest.approx(sum(w["difference_tokens"] for w in over), abs=0.2),
               f"{code}: {c}")
    elif code == "log_windows":
        expect(c["consistent"] == sum(w["verdict"] == "consistent" for w in _judged(log))
               and c["judged"] == len(_judged(log)), f"{code}: {c}")
    elif code == "idle_in_log_windows":
        mean = statistics.fmean(w["logged_tok_s"] for w in _judged(log))
        expect(c["logged_mean"] == pytest.approx(mean) and c["mean"] == d["decode_tok_s_mean"]
               and c["logged_mean"] < c["mean"], f"{code}: {c}")
    elif code == "multi_token_chunks":
        expect(c["tokens"] == d["tokens"] and c["chunks"] == d["chunks"]
               and c["per_chunk"] == pytest.approx(d["tokens"] / d["chunks"]), f"{code}: {c}")
    elif code == "chunks_counted":
        expect("chunks" in d["token_sources"] and c["chunks"] == d["chunks"], f"{code}: {c}")
    elif code == "peak_ratio":
        rates = [w["logged_tok_s"] for w in log["windows"]]
        expect(c["peak"] == max(rates) == log["peak_tok_s"] and c["windows"] == len(rates)
               and c["mean"] == d["decode_tok_s_mean"] and c["requests"] == d["decode_requests"]
               and c["workload"] == d["decode_workload"]
               and c["mean"] == pytest.approx(max(d["decode_tok_s_by_workload"].values()), abs=1e-3)
               and c["ratio"] == pytest.approx(c["peak"] / c["mean"], abs=1e-3)
               and c["ratio"] == doc["ratio_log_peak_to_delivered_mean"], f"{code}: {c}")
        expect("maximum" in text and "mean over" in text, f"{code}: does not say max vs mean")
    elif code == "peak_agrees":
        expect(abs(doc["ratio_log_peak_to_delivered_mean"] - 1) <= TOLERANCE, f"{code}: {c}")
    elif code in ("peak_window_undelivered", "peak_window_boundary", "peak_window_delivered",
                  "peak_window_log_disagrees"):
        row = _peak_row(log)
        expect(c["logged"] == row["logged_tokens"] and c["arrived"] == row["delivered_tokens"]
               and c["seconds"] == row["seconds"], f"{code}: {c} vs {row}")
        gap = row["logged_tokens"] - row["delivered_tokens"]
        if code == "peak_window_delivered":
            expect(abs(gap) <= row["tolerance_tokens"], f"{code}: gap {gap}")
        else:
            expect(gap > row["tolerance_tokens"], f"{code}: gap {gap}")
        judged = _judged(log)
        excess = sum(w["logged_tokens"] - w["delivered_tokens"] for w in judged)
        room = sum(w["tolerance_tokens"] for w in judged)
        if code in ("peak_window_boundary", "peak_window_log_disagrees"):
            expect(m.get("difference_tokens") == 0 and c["total"] == m["generation_tokens"],
                   f"{code}: /metrics does not match")
        if code == "peak_window_boundary":  # the difference is only shifted between windows
            expect(abs(excess) <= room, f"{code}: {excess} tokens more over all windows")
        if code == "peak_window_log_disagrees":
            expect(c["excess"] == pytest.approx(excess, abs=0.2) and abs(excess) > room
                   and c["judged"] == len(judged), f"{code}: {c}")
    elif code == "peak_concurrent":
        expect(c["running"] == _peak_row(log)["running"] > 1, f"{code}: {c}")
    elif code == "peak_estimated_start":
        expect(_peak_row(log)["start_estimated"] is True, f"{code}")
    elif code == "peak_outside_requests":
        row = _peak_row(log)
        expect(c["outside"] == pytest.approx(1 - row["inside_protocol_fraction"], abs=1e-3)
               and row["inside_protocol_fraction"] < 0.9, f"{code}: {c}")
    elif code == "peak_idle":
        expect(c["in_flight"] == _peak_row(log)["in_flight_fraction"]
               and doc["ratio_log_peak_to_delivered_mean"] < 1 - TOLERANCE, f"{code}: {c}")
    elif code == "spec_accepted":
        expect(c["accepted"] == m["spec_decode"]["accepted_tokens"]
               and c["generated"] == m["generation_tokens"]
               and c["accepted"] <= c["generated"], f"{code}: {c}")
    elif code == "bursty_delivery":
        expect(c["mean"] == d["decode_tok_s_mean"] and c["mean"] > 1.5 * c["ceiling"]
               and c["factor"] == pytest.approx(c["mean"] / c["ceiling"], abs=1e-3), f"{code}: {c}")
    elif code == "not_measured":
        expect(doc["verdict"] == "not_measured" and text.startswith("not measured"), f"{code}")
        expect(c["failed"] == sum(1 for w in m.get("windows", []) if w.get("error")), f"{code}: {c}")
    elif code == "no_overlap":
        expect(not log.get("windows"), code)
    else:
        expect(False, f"{code}: no consistency rule for this sentence")


def _check_together(doc: dict, codes: list[str], expect) -> None:
    """No two sentences contradict each other."""
    expect(len(codes) == len(set(codes)), f"a sentence repeated: {codes}")
    if "metrics_match" in codes:
        for bad in ("client_received_fewer", "client_counted_more", "peak_window_undelivered"):
            expect(bad not in codes, f"metrics_match beside {bad}")
    if doc["verdict"] == "not_measured":
        words = json.dumps([r["text"] for r in doc["reasons"]])
        expect("consistent" not in words and "agree" not in words, "a verdict word without evidence")
    if "metrics_match" in codes and "log_counts_undelivered" in codes:
        expect("peak_ratio" not in codes or any(code in codes for code in
               ("peak_window_boundary", "peak_window_log_disagrees", "peak_concurrent")),
               "the log over-counts beside a matching counter, and nothing says which to believe")
    if any(code.startswith("peak_window") for code in codes):
        expect(sum(code.startswith("peak_window") for code in codes) == 1, "two peak-window stories")


def _metrics(generated: float, delivered: int, **extra) -> list[dict]:
    return [{"workload": "w", "start": T0 - 1, "end": T0 + 600, "generation_tokens": generated,
             "delivered_tokens": delivered, "requests_finished": {"length": 10.0}, **extra}]


def _hidden_idle(records: list[dict]) -> list[StatsWindow]:
    """Idle gaps whose stats lines were hidden at INFO: the next window's start is estimated."""
    out = []
    for w in windows_from(records, 10.0):
        if w.generation == 0:
            continue
        hidden = bool(out) and out[-1].t < w.start
        out.append(StatsWindow(w.t, "0", 0.0, w.generation, "INFO", "n", start=w.start,
                               parts={"running": 1}, start_estimated=hidden))
    return out


def _concurrent(records: list[dict]) -> list[StatsWindow]:
    return [StatsWindow(w.t, "0", 0.0, w.generation * 2, "INFO", "n", start=w.start,
                        parts={"running": 2}) for w in windows_from(records, 10.0)]


def _404() -> list[dict]:
    return [{"workload": k, "start": None, "end": None, "generation_tokens": None,
             "error": "GET /metrics: HTTP 404 Not Found"} for k in ("code", "prose")]


def _spec_records() -> list[dict]:
    out, t = [], T0
    for i in range(6):
        r = record(t, [3] * 40, gap=0.1, warmup=(i == 0))
        out.append(r)
        t += r["t_end"]
    return out


def _two_workloads() -> list[dict]:
    """code at 20 tok/s, then prose at 10 tok/s: the delivered mean is code's, named."""
    out, t = [], T0
    for name, gap in (("code", 0.05), ("prose", 0.1)):
        for i in range(5):
            r = record(t, [1] * 60, gap, warmup=(i == 0))
            r["workload"] = name
            out.append(r)
            t += r["t_end"]
    return out


STEADY = steady_run()
TWO = _two_workloads()
IDLE = steady_run(n=6, per_request=40, pause=25.0)
SPEC = _spec_records()
SPEC_METRICS = _metrics(720.0, 720, spec_decode={"drafts": 240, "draft_tokens": 720,
                                                 "accepted_tokens": 480})

CASES = {
    "consistent": (STEADY, _metrics(1000.0, 1000), windows_from(STEADY, 10.0), "consistent"),
    "log over-counts": (STEADY, None, windows_from(STEADY, 10.0, factor=1.46), "log_counts_undelivered"),
    "log over-counts, /metrics matches": (STEADY, _metrics(1000.0, 1000),
                                          windows_from(STEADY, 10.0, factor=1.46),
                                          "log_counts_undelivered"),
    "idle windows hidden at INFO": (IDLE, None, _hidden_idle(IDLE), None),
    "speculative, three tokens a chunk": (SPEC, SPEC_METRICS, windows_from(SPEC, 10.0), "consistent"),
    "concurrent requests in the log": (STEADY, _metrics(1000.0, 1000), _concurrent(STEADY), None),
    "server lost tokens": (STEADY, _metrics(1040.0, 1000), None, "client_received_fewer"),
    "no metrics (404), no log": (STEADY, _404(), None, "not_measured"),
    "no metrics (404), a log": (STEADY, _404(), windows_from(STEADY, 10.0), "consistent"),
    "metrics, no log": (STEADY, _metrics(1000.0, 1000), None, "consistent"),
    "two workloads": (TWO, _metrics(600.0, 600), windows_from(TWO, 10.0), None),
}


@pytest.mark.parametrize("name", list(CASES))
def test_every_sentence_agrees_with_the_counts_it_cites(name):
    records, metrics, windows, verdict = CASES[name]
    doc = reconcile(delivered_from_records(records), metrics, windows, log_edge_s=0.25)
    if verdict is not None:
        assert doc["verdict"] == verdict
    assert check(doc) == []
    assert doc["reasons"], "no explanation at all"


def test_the_issue_contradiction_is_reconciled_not_repeated():
    """Log over-counts per window while /metrics matches the delivered total: one story."""
    records, metrics, windows, _ = CASES["log over-counts, /metrics matches"]
    doc = reconcile(delivered_from_records(records), metrics, windows, log_edge_s=0.25)
    codes = [r["code"] for r in doc["reasons"]]
    assert "metrics_match" in codes and "peak_window_log_disagrees" in codes
    assert "peak_window_undelivered" not in codes
    text = next(r["text"] for r in doc["reasons"] if r["code"] == "peak_window_log_disagrees")
    assert "believe the counter" in text and "exactly the 1000 tokens delivered" in text
    assert "did not receive" not in json.dumps(doc["reasons"])


def test_a_window_edge_shift_is_named_as_one():
    """Tokens the log puts in one window and the client received in the next: not lost."""
    windows = windows_from(STEADY, 10.0)
    peak = max(range(len(windows)), key=lambda i: windows[i].generation)
    moved = 4.0  # tok/s moved from the next window into the peak window (40 tokens)
    windows[peak] = StatsWindow(windows[peak].t, "0", 0.0, windows[peak].generation + moved,
                                "INFO", "n", start=windows[peak].start, parts={"running": 1})
    after = windows[peak + 1]
    windows[peak + 1] = StatsWindow(after.t, "0", 0.0, after.generation - moved, "INFO", "n",
                                    start=after.start, parts={"running": 1})
    doc = reconcile(delivered_from_records(STEADY), _metrics(1000.0, 1000), windows,
                    log_edge_s=0.25)
    assert check(doc) == []
    codes = [r["code"] for r in doc["reasons"]]
    assert "peak_window_boundary" in codes, codes
    assert "not lost" in next(r["text"] for r in doc["reasons"] if r["code"] == "peak_window_boundary")


def test_the_checker_catches_a_contradiction_and_a_wrong_count():
    """The checker is not vacuous: a doctored document fails it."""
    records, metrics, windows, _ = CASES["log over-counts, /metrics matches"]
    doc = reconcile(delivered_from_records(records), metrics, windows, log_edge_s=0.25)
    bad = json.loads(json.dumps(doc))
    bad["reasons"].append({"code": "peak_window_undelivered", "text": "x", "cites": {}})
    assert any("metrics_match beside" in p for p in check(bad))
    wrong = json.loads(json.dumps(doc))
    match = next(r for r in wrong["reasons"] if r["code"] == "metrics_match")
    match["cites"]["generated"] = 999.0
    assert check(wrong)


def test_idle_and_estimated_windows_are_explained():
    records, metrics, windows, _ = CASES["idle windows hidden at INFO"]
    doc = reconcile(delivered_from_records(records), metrics, windows, log_edge_s=0.25)
    assert any(w["start_estimated"] for w in doc["log"]["windows"])
    spec = reconcile(delivered_from_records(SPEC), SPEC_METRICS, windows_from(SPEC, 10.0),
                     log_edge_s=0.25)
    accepted = next(r for r in spec["reasons"] if r["code"] == "spec_accepted")
    assert accepted["cites"] == {"accepted": 480, "generated": 720.0}
    assert any(r["code"] == "multi_token_chunks" for r in spec["reasons"])


def test_the_delivered_mean_is_one_named_workload():
    doc = reconcile(delivered_from_records(TWO), _metrics(600.0, 600), windows_from(TWO, 10.0),
                    log_edge_s=0.25)
    d = doc["delivered"]
    assert d["decode_workload"] == "code" and d["decode_requests"] == 4
    assert d["decode_tok_s_by_workload"]["code"] == pytest.approx(20.0, rel=1e-6)
    assert d["decode_tok_s_by_workload"]["prose"] == pytest.approx(10.0, rel=1e-6)
    assert d["decode_tok_s_mean"] == pytest.approx(20.0, rel=1e-6)  # not 15, an average of two
    peak = next(r for r in doc["reasons"] if r["code"] == "peak_ratio")
    assert "the mean over 4 measured code requests" in peak["text"]


def test_the_report_table_shows_the_ratio_its_sentences_cite(tmp_path):
    """The report's delivered-vs-logged row and the reconciliation's sentences give one ratio,
    one peak and one named delivered mean (a real reconciliation of the run's own records)."""
    from sparktriage.report import markdown
    from sparktriage.report.format import number
    from sparktriage.report.inputs import load_run
    from sparktriage.report.model import Context, build_document
    from sparktriage.store.documents import read_records
    from sparktriage.testbed.synthetic_run import SyntheticSpec, make_run

    run = make_run(tmp_path / "run", SyntheticSpec(nodes=1, requests=4, max_tokens=32))
    folder = run / "launches" / "L001"
    records = list(read_records(folder / "requests.jsonl"))
    delivered = delivered_from_records(records)
    start = min(r["sent_unix"] for r in records)
    doc = reconcile(delivered, None, windows_from(records, 10.0, factor=1.3, start=start),
                    log_edge_s=0.25)
    (folder / "reconcile.json").write_text(json.dumps({"schema_version": 1, **doc}))
    assert check(doc) == []
    report = build_document(load_run(run), Context(generated_at="2026-01-02T00:00:00Z"))
    row, = report["sections"]["reconciliation"]["launches"]
    assert row["peak_over_delivered"] == pytest.approx(doc["ratio_log_peak_to_delivered_mean"], abs=1e-3)
    assert row["delivered_workload"] == doc["delivered"]["decode_workload"]
    assert row["peak_source"].startswith("reconcile.json")
    ratio = next(r for r in row["explanation"] if r["code"] == "peak_ratio")
    assert ratio["cites"]["ratio"] == doc["ratio_log_peak_to_delivered_mean"]
    md = markdown.render(report)
    assert f"| {number(row['peak_over_delivered'], 2)} |" in md
    assert f"{ratio['cites']['ratio']:.2f}x the mean" in md
