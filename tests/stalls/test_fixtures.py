"""Every rule against its fixtures: time-indexed expectations, promtool style.

Each case under tests/fixtures/stalls/<rule-id>/{positive,negative}/ is built into a bundle
(or a plain log) and classified; every `expect` item must hold. The sweep also pins that
every rule has both kinds of fixture, which `sparktriage rules check` enforces too.
"""

from __future__ import annotations

import pytest

from pathlib import Path

from sparktriage.stalls import fixtures as fixture_layer
from sparktriage.stalls.validators import TAXONOMY

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "stalls"

CASES = fixture_layer.discover(FIXTURES)


@pytest.mark.parametrize("case", CASES, ids=[f"{c.rule}/{c.polarity}/{c.path.stem}" for c in CASES])
def test_fixture_expectations_hold(case, rules, library, tmp_path):
    _, results = fixture_layer.run_case(case, rules, library, tmp_path)
    assert results, f"{case.path} has no expectations"
    failed = [r.message for r in results if not r.ok]
    assert not failed, "\n".join(failed)
    key = "fires" if case.polarity == "positive" else "not_fires"
    pinned = [r.expectation for r in results if r.expectation.get(key) == case.rule
              or (key == "not_fires" and r.expectation.get("quiet"))]
    assert pinned, f"a {case.polarity} case must pin `{key}: {case.rule}`"


def test_every_rule_has_positive_and_negative_fixtures():
    have = {(c.rule, c.polarity) for c in CASES}
    missing = [(rule, pol) for rule in TAXONOMY for pol in ("positive", "negative")
               if (rule, pol) not in have]
    assert not missing


def test_positive_cases_pin_a_quiet_or_other_time_too():
    """promtool's other half: positives also say where the rule must NOT fire."""
    for case in (c for c in CASES if c.polarity == "positive"):
        spec = fixture_layer.load_spec(case.path)
        others = [e for e in spec["expect"] if e.get("quiet") or "not_fires" in e]
        assert others, f"{case.path}: pin a time or cause where it must not fire"


@pytest.mark.slow
def test_run_all_reports_nothing_wrong(rules):
    results, problems = fixture_layer.run_all(FIXTURES, rules)
    assert not problems, [str(p) for p in problems]
    assert len(results) >= 2 * len(TAXONOMY)
    assert all(r.ok for r in results)
