"""What the report shows is what the run holds (issue 14, items 3-4): the delivered-vs-logged
plot gets the log's windows from the logs document's window list, the environment appears as
what matters, once, and labels say what a number is an average of."""

from __future__ import annotations

import json
from pathlib import Path


def _json(path: Path):
    return json.loads(path.read_text(encoding="utf-8"))


def test_delivered_vs_logged_series_has_every_log_window(report_run: Path, report_built: Path):
    report = _json(report_built / "report.json")
    series = {s["label"]: s for s in report["sections"]["reconciliation"]["series"]}
    assert set(series) == {"L001", "L002", "L003", "L004"}
    for label, item in series.items():
        logs = _json(report_run / "launches" / label / "logs.json")
        windows = logs["throughput"]["windows"]
        assert logs["throughput"]["generation"]["windows"] == len(windows)  # a count, not a list
        assert [w["tok_s"] for w in item["logged"]] == [w["generation"] for w in windows]
        first = item["delivered"][0]["t"]
        assert all(w["t"] > first for w in item["logged"])  # on the delivered time axis


def _section(md: str, title: str) -> str:
    return md.split(f"## {title}\n", 1)[1].split("\n## ", 1)[0]


def test_environment_shows_what_matters_once(report_built: Path):
    md = (report_built / "report.md").read_text(encoding="utf-8")
    env = _section(md, "Environment")
    # four launches with one environment: one table, not one per launch
    assert env.count("### Launches L001, L002, L003, L004: 2 node(s)") == 1
    rows = {line.split("|")[1].strip(): [c.strip() for c in line.split("|")[2:-1]]
            for line in env.splitlines() if line.startswith("| ") and "---" not in line}
    assert rows["python version"] == ["3.12.3", "3.12.3"]
    assert rows["torch version"] == ["2.9.0+cu130", "2.9.0+cu130"]
    assert rows["vllm version"] == ["0.32.0", "0.32.0"]
    assert rows["nccl version"] == ["2.27.7", "2.26.2"]  # the cross-node difference, side by side
    assert rows["NVIDIA driver"] == ["580.95.05", "580.95.05"]
    assert rows["GPU"] == ["1 x NVIDIA GB10", "1 x NVIDIA GB10"]
    assert rows["interconnect"] == ["enp1s0f0np0 (MTU 9000)"] * 2
    assert rows["env NCCL_SOCKET_IFNAME"] == ["enp1s0f0np0"] * 2
    assert "synthetic-pkg" not in md  # the 200 packages stay in data/
    assert "packages." not in md and "nics." not in md
    report = json.loads((report_built / "report.json").read_text())
    full = report["sections"]["environment"]["launches"][0]["full_capture"]
    for rel in full:  # the full capture is in the report's data folder
        assert "synthetic-pkg-199" in (report_built / rel).read_text(encoding="utf-8")


def test_delivered_mean_is_labelled_with_its_workload(report_built: Path):
    report = json.loads((report_built / "report.json").read_text())
    md = (report_built / "report.md").read_text(encoding="utf-8")
    for row in report["sections"]["reconciliation"]["launches"]:
        means = row["delivered_by_workload"]
        assert set(means) == {"code", "prose"}
        assert row["delivered_workload"] == max(means, key=means.get)
        assert row["delivered_mean"] == means[row["delivered_workload"]]  # never an average of two
    section = _section(md, "Delivered vs logged")
    assert "delivered mean (workload)" in section
    assert section.count(" tok/s (code) |") + section.count(" tok/s (prose) |") == 4
    peak = next(h for h in report["summary"]["headline"] if h["label"] == "Server log peak vs delivered")
    assert peak["detail"].endswith(" tok/s (code)") or peak["detail"].endswith(" tok/s (prose)")


def test_provisional_sweep_decision_says_so(report_run: Path, report_build, tmp_path: Path):
    import shutil

    run = tmp_path / "run"
    shutil.copytree(report_run, run)
    sweep = json.loads((run / "sweep.json").read_text())
    sweep["decision"].update(state="insufficient", provisional=True)  # the sweep's own pair
    (run / "sweep.json").write_text(json.dumps(sweep))
    out = tmp_path / "report"
    report_build(run, out, formats="md")
    depth = sweep["decision"]["depth"]
    md = (out / "report.md").read_text(encoding="utf-8")
    assert f"**Decision: depth {depth} (provisional)" in md
    assert "insufficient)" not in md  # one word for the state, everywhere
    report = json.loads((out / "report.json").read_text())
    row = next(v for v in report["summary"]["verdicts"] if v["topic"] == "Speculative depth")
    assert row["verdict"] == f"depth {depth} (provisional)"
    head = next(h for h in report["summary"]["headline"] if h["label"] == "Speculative depth chosen")
    assert head["value"].startswith(f"depth {depth} (provisional)")


FILE_SUFFIXES = ("json", "jsonl", "md", "png", "pdf", "yaml", "sig", "html", "txt")


def _texts(report: Path) -> dict[str, str]:
    import subprocess

    pdf = subprocess.run(["pdftotext", str(report / "report.pdf"), "-"], capture_output=True,
                         text=True, check=True, timeout=60).stdout
    return {"report.md": (report / "report.md").read_text(encoding="utf-8"), "report.pdf": pdf}


def test_no_scientific_notation_and_no_flattened_keys(report_built: Path):
    import re

    for name, body in _texts(report_built).items():
        assert not re.findall(r"\d(?:\.\d+)?e[+-]\d+", body), name
        dotted = {m for m in re.findall(r"(?<![@\w.])[a-z][a-z_0-9]*(?:\.[a-z_][a-z_0-9]*)+\b", body)
                  if m.rsplit(".", 1)[1] not in FILE_SUFFIXES}
        assert not dotted, (name, sorted(dotted))
    md = _texts(report_built)["report.md"]
    assert "| model / active_params | 32000000000 |" in md  # 3.2e+10 in deployment.yaml
    assert "| nodes 1 / role | head |" in md and "| nodes 2 / role | worker |" in md
