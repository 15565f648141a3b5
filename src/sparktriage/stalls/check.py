"""`rules check` as a function: schema, validators and fixtures, as one report document."""

from __future__ import annotations

from pathlib import Path

from sparktriage.errors import SourceLocation
from sparktriage.stalls import fixtures as fixture_layer
from sparktriage.stalls.analyze import Rules
from sparktriage.stalls.loader import Problem, load_directory
from sparktriage.stalls.markers import MarkerSet
from sparktriage.stalls.validators import default_rules_dir, validate


def default_fixtures_dir(rules_dir: Path) -> Path | None:
    candidate = rules_dir.parent / "tests" / "fixtures" / "stalls"
    return candidate if candidate.is_dir() else None


def run_checks(rules_dir: Path | None = None, fixtures_dir: Path | None = None,
               use_fixtures: bool = True) -> dict:
    """Every problem of the rule set, and the fixture results when fixtures are available."""
    directory = rules_dir or default_rules_dir()
    ruleset, problems = load_directory(directory)
    if ruleset.vocabulary is not None:
        problems += validate(ruleset)
    errors = [p for p in problems if p.severity == "error"]
    report_fixtures = {"ran": False, "why": "", "total": 0, "passed": 0, "failed": 0,
                       "results": []}
    root = fixtures_dir or (default_fixtures_dir(directory) if use_fixtures else None)
    if not use_fixtures:
        report_fixtures["why"] = "--no-fixtures"
    elif errors:
        report_fixtures["why"] = "the rules have errors"
    elif root is None or not root.is_dir():
        report_fixtures["why"] = "no fixture folder found (give --fixtures DIR)"
    else:
        rules = Rules(ruleset, MarkerSet(ruleset.vocabulary))
        results, fixture_problems = fixture_layer.run_all(root, rules)
        problems += fixture_problems
        report_fixtures.update(ran=True, total=len(results),
                               passed=sum(r.ok for r in results),
                               failed=sum(not r.ok for r in results),
                               results=[{"case": str(r.case.path), "rule": r.case.rule,
                                         "polarity": r.case.polarity, "ok": r.ok,
                                         "message": r.message} for r in results])
        for result in results:
            if not result.ok:
                problems.append(Problem(SourceLocation(str(result.case.path)), result.message,
                                        "fixtures"))
    return {
        "schema_version": 1,
        "kind": "sparktriage-rules-check",
        "rules_dir": str(directory),
        "rules": len(ruleset.rules),
        "errors": sum(1 for p in problems if p.severity == "error"),
        "warnings": sum(1 for p in problems if p.severity == "warning"),
        "problems": [{"location": str(p.location), "severity": p.severity, "message": p.message,
                      "check": p.check} for p in problems],
        "fixtures": report_fixtures,
    }
