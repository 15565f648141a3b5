"""`selfcheck` beside a peer's live-endpoint doctor on the same fault matrix (docs/benchmarks.md).

Each case serves one simulated model (sparktriage.sim, one fault at a time, the cases of
tests/session/test_selfcheck_faults.py) from a thread of this process. On it run:

- sparktriage's check (the core of `selfcheck --quick --no-probe --workload code`): its exit
  decision (0, 1, or 3 when the endpoint refuses us) and the ids of its findings;
- the peer (Model Serving Minefield, `minefield quick --base-url URL/v1 --json FILE`, from its
  own venv, given with `--minefield PATH`; Python >= 3.10): its exit status, the trap ids it
  calls problems, or that it crashed or hung (killed after `--peer-timeout` seconds).

Writes benchmarks/results/selfcheck_matrix.json. Without `--minefield` only our side runs.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import tempfile
import time
from pathlib import Path

from sparktriage.errors import EndpointError
from sparktriage.progress import quiet
from sparktriage.session.selfcheck import (SelfcheckSettings, check_endpoint, has_findings,
                                           run_selfcheck)
from sparktriage.sim.thread import SimThread
from sparktriage.store.rundir import RunDir

FAST = {"ttft_s": 0.005, "gap_s": 0.0005}
NO_SOURCES = {"token_ids": False, "logprobs": False, "continuous_usage": False, "final_usage": False}
# name -> (scenario, server settings, our options, is it a fault)
CASES = {
    "healthy": ({}, {}, {}, False),
    "one token of 128 (ignore_eos ignored)": ({"eos_after": 1, "honour_ignore_eos": False}, {}, {}, True),
    "answers nothing": ({"fixed_tokens": 0}, {}, {}, True),
    "never answers": ({"faults": {"never_answer": True}}, {}, {"answer_deadline_s": 5.0}, True),
    "pauses 2 s mid-stream": ({"faults": {"stalls": [{"at": 40, "seconds": 2.0}]}}, {},
                              {"max_pause_s": 1.0}, True),
    "error event": ({"faults": {"error_at": 10}}, {}, {}, True),
    "malformed event": ({"faults": {"malformed_at": 10}}, {}, {}, True),
    "connection reset": ({"faults": {"reset_at": 10}}, {}, {}, True),
    "no usage or token ids (4 tokens a chunk)": ({"sources": NO_SOURCES, "tokens_per_chunk": 4}, {}, {}, True),
    "multi-token chunks (1,4,2) with ids": ({"tokens_per_chunk": [1, 4, 2]}, {}, {}, False),
    "reasoning only": ({"answer_channel": "reasoning"}, {}, {}, True),
    "requires a key (none given)": ({}, {"api_key": "s3cret"}, {}, True),
    "accepts any field": ({}, {}, {}, False),
    "strict fields": ({"strict_fields": True}, {}, {}, False),
}


def ours(url: str, options: dict, folder: Path) -> dict:
    settings = SelfcheckSettings(endpoint=url, quick=True, probe=False, formats="md", metrics=None,
                                 workloads=("code",), **options)
    start = time.monotonic()
    try:
        check_endpoint(settings)
    except EndpointError as exc:
        return {"exit": 3, "findings": [], "reason": exc.one_line(),
                "seconds": round(time.monotonic() - start, 1)}
    doc = run_selfcheck(RunDir.create(folder, ["bench"]), settings, quiet)
    return {"exit": 1 if has_findings(doc) else 0,
            "findings": [f["id"] for f in doc["findings"] if f["severity"] == "finding"],
            "caveats": [f["id"] for f in doc["findings"] if f["severity"] == "caveat"],
            "seconds": round(time.monotonic() - start, 1)}


def peer(minefield: str, url: str, timeout_s: float, folder: Path) -> dict:
    out = folder / "minefield.json"
    start = time.monotonic()
    try:
        done = subprocess.run([minefield, "quick", "--base-url", url + "/v1", "--json", str(out)],
                              capture_output=True, text=True, timeout=timeout_s)
    except subprocess.TimeoutExpired:
        return {"exit": None, "verdict": f"hung: no verdict within {timeout_s:g} s",
                "seconds": round(time.monotonic() - start, 1)}
    seconds = round(time.monotonic() - start, 1)
    try:
        doc = json.loads(out.read_text())
    except (OSError, ValueError):
        tail = (done.stderr or done.stdout).strip().splitlines()[-1:] or ["no output"]
        return {"exit": done.returncode, "verdict": "crashed or wrote no report: " + tail[0][:200],
                "seconds": seconds}
    problems = sorted({str(i) for p in doc.get("problems") or [] for i in _trap_ids(p)}, key=_number)
    return {"exit": done.returncode, "problems": problems, "requests": doc.get("requests_made"),
            "verdict": ("problems " + ", ".join(problems)) if problems else "no problem",
            "seconds": seconds}


def _trap_ids(problem) -> list:
    """A problem of the peer's JSON report: `[[trap ids], what it saw, advice]`."""
    if isinstance(problem, list) and problem and isinstance(problem[0], list):
        return problem[0]
    if isinstance(problem, dict):
        return [problem.get("id")]
    return [problem]


def _number(trap: str):
    return (0, int(trap)) if trap.isdigit() else (1, trap)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--minefield", help="the peer's `minefield` executable")
    parser.add_argument("--peer-timeout", type=float, default=120.0)
    parser.add_argument("--out", default=str(Path(__file__).parent / "results" / "selfcheck_matrix.json"))
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for number, (name, (scenario, server, options, fault)) in enumerate(CASES.items()):
            config = {"scenarios": {"sim": {**FAST, **scenario}}, **server}
            with SimThread(config) as sim:
                row = {"case": name, "fault": fault,
                       "sparktriage": ours(sim.url, options, Path(tmp) / f"ours-{number}")}
                if args.minefield:
                    folder = Path(tmp) / f"peer-{number}"
                    folder.mkdir()
                    row["minefield"] = peer(args.minefield, sim.url, args.peer_timeout, folder)
            print(json.dumps(row), flush=True)
            rows.append(row)
    Path(args.out).write_text(json.dumps({"schema_version": 1, "kind": "selfcheck-matrix",
                                          "peer": "model-serving-minefield 0.2.2 (minefield quick)"
                                          if args.minefield else None, "rows": rows}, indent=1) + "\n")


if __name__ == "__main__":
    main()
