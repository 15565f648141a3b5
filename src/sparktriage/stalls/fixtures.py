"""Fixtures with time-indexed expectations (promtool style): "fires at t", "quiet at t'".

Layout: `<root>/<rule-id>/{positive,negative}/<case>.yaml`, each a synth spec (synth.py)
plus `expect:` items, and `<root>/_segments.yaml` with reusable log segments. An expectation
names a time `at` (seconds after the first log line), an optional `node`, and one of
`fires: ID` (a finding covering `at` has verdict ID), `not_fires: ID`, or `quiet: true` (no
finding covers `at`); `fires` may add `min_confidence`, `max_confidence`, `state`, `kind`,
`open_includes`. A positive case must expect its rule to fire, a negative one must expect
it not to.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from pathlib import Path



from sparktriage import yamlsafe
from sparktriage.errors import SourceLocation
from sparktriage.stalls.loader import Problem
from sparktriage.stalls.synth import load_spec, node_lines, write_bundle, write_log

SEGMENTS_FILE = "_segments.yaml"


@dataclass(frozen=True)
class Case:
    rule: str
    polarity: str  # positive / negative
    path: Path


@dataclass(frozen=True)
class Result:
    case: Case
    expectation: dict
    ok: bool
    message: str


def discover(root: Path) -> list[Case]:
    cases = []
    for rule_dir in sorted(p for p in root.iterdir() if p.is_dir() and not p.name.startswith("_")):
        for polarity in ("positive", "negative"):
            folder = rule_dir / polarity
            if folder.is_dir():
                cases += [Case(rule_dir.name, polarity, p) for p in sorted(folder.glob("*.yaml"))]
    return cases


def segments(root: Path) -> dict:
    """The fixture library: `segments` (log pieces) and `profiles` (sample records)."""
    path = root / SEGMENTS_FILE
    if not path.exists():
        return {}
    data = yamlsafe.load_file(path, "fixture")[0] or {}
    return {"segments": data.get("segments", {}), "profiles": data.get("profiles", {})}


def build(case_path: Path, out_dir: Path, segs: dict) -> Path:
    """Write a case's evidence (bundle folder or plain log) under out_dir; return its path."""
    spec = load_spec(case_path)
    if spec.get("form", "bundle") == "log":
        return write_log(spec, out_dir / "server.log", case_path.parent, segs)
    return write_bundle(spec, out_dir / "bundle", case_path.parent, segs)


def _covering(document: dict, t: float, node: str | None) -> list[dict]:
    return [f for f in document["findings"] if (node is None or f["node"] == node)
            and f["start"] - 0.5 <= t <= f["end"] + 0.5]


def check_expectation(document: dict, expectation: dict, origin: float) -> tuple[bool, str]:
    t = origin + float(expectation["at"])
    found = _covering(document, t, expectation.get("node"))
    where = f"at +{expectation['at']} s"
    if expectation.get("quiet"):
        ids = [f["verdict"]["id"] for f in found]
        return (not found, f"{where}: expected no finding, got {ids}" if found else f"{where}: quiet")
    if "not_fires" in expectation:
        bad = [f for f in found if f["verdict"]["id"] == expectation["not_fires"]]
        return (not bad, f"{where}: {expectation['not_fires']} fired" if bad
                else f"{where}: {expectation['not_fires']} did not fire")
    want = expectation["fires"]
    hits = [f for f in found if f["verdict"]["id"] == want]
    if not hits:
        got = [(f["verdict"]["id"], f["verdict"]["confidence"]) for f in found]
        return False, f"{where}: expected {want}, got {got or 'no finding'}"
    # a stall that ends where a failure begins covers that time too: `kind` picks between them
    same_kind = [f for f in hits if f["kind"] == expectation.get("kind")]
    v, f = (same_kind or hits)[0]["verdict"], (same_kind or hits)[0]
    checks = [("min_confidence", lambda x: v["confidence"] >= x),
              ("max_confidence", lambda x: v["confidence"] <= x),
              ("state", lambda x: v["state"] == x), ("kind", lambda x: f["kind"] == x),
              ("open_includes", lambda x: set(x) <= set(v["open"]))]
    for key, ok in checks:
        if key in expectation and not ok(expectation[key]):
            return False, (f"{where}: {want} fired but {key} {expectation[key]!r} does not hold "
                           f"(confidence {v['confidence']}, state {v['state']}, open {v['open']})")
    return True, f"{where}: {want} fired (confidence {v['confidence']})"


def _origin(case_path: Path, document: dict, segs: dict) -> float:
    """Absolute time of spec time 0 in the classified evidence (first line = its spec time)."""
    spec = load_spec(case_path)
    firsts = [node_lines(n or {}, 0.0, case_path.parent, segs)[0][0]
              for n in (spec.get("nodes") or {}).values()
              if node_lines(n or {}, 0.0, case_path.parent, segs)]
    start = min(n["start"] for n in document["nodes"].values())
    return start - (min(firsts) if firsts else 0.0)


def run_case(case: Case, rules, segs: dict, work: Path) -> tuple[dict, list[Result]]:
    from sparktriage.stalls.analyze import analyze  # late: analyze imports this package's core

    target = build(case.path, work, segs)
    params = _params(load_spec(case.path))
    document, _ = analyze(target, rules, params)
    origin = _origin(case.path, document, segs)
    results = []
    for expectation in load_spec(case.path).get("expect") or []:
        ok, message = check_expectation(document, expectation, origin)
        results.append(Result(case, expectation, ok, message))
    return document, results


def _params(spec: dict):
    from sparktriage.stalls.detect import DetectParams

    return DetectParams(**(spec.get("params") or {}))


def run_all(root: Path, rules) -> tuple[list[Result], list[Problem]]:
    """Run every case; return the results and structural problems (missing cases...)."""
    segs = segments(root)
    results: list[Result] = []
    problems: list[Problem] = []
    cases = discover(root)
    for rule_id in rules.ruleset.rules:
        for polarity in ("positive", "negative"):
            if not any(c.rule == rule_id and c.polarity == polarity for c in cases):
                problems.append(Problem(SourceLocation(str(root / rule_id / polarity)),
                                        f"rule {rule_id} has no {polarity} fixture", "fixtures"))
    with tempfile.TemporaryDirectory(prefix="sparktriage-fixtures-") as tmp:
        for i, case in enumerate(cases):
            try:
                expectations = load_spec(case.path).get("expect") or []
            except Exception as exc:  # noqa: BLE001 - a broken fixture is a problem, not a crash
                problems.append(Problem(SourceLocation(str(case.path)), str(exc), "fixtures"))
                continue
            key = "fires" if case.polarity == "positive" else "not_fires"
            if not any(e.get(key) == case.rule or (key == "not_fires" and e.get("quiet"))
                       for e in expectations):
                problems.append(Problem(SourceLocation(str(case.path)),
                                        f"a {case.polarity} fixture of {case.rule} must expect "
                                        f"`{key}: {case.rule}`", "fixtures"))
            work = Path(tmp) / f"case{i}"
            try:
                _, found = run_case(case, rules, segs, work)
            except Exception as exc:  # noqa: BLE001 - reported as a failed fixture, not a crash
                problems.append(Problem(SourceLocation(str(case.path)),
                                        f"fixture could not be built or classified: {exc}",
                                        "fixtures"))
                continue
            results += found
    return results, problems
