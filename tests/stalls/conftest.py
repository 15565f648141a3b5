"""Shared helpers of the stall tests: the shipped rules, and specs turned into evidence."""

from __future__ import annotations

from pathlib import Path

import pytest

from sparktriage.stalls import fixtures as fixture_layer
from sparktriage.stalls.analyze import analyze, load_rules
from sparktriage.stalls.synth import write_bundle, write_log

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "tests" / "fixtures" / "stalls"
RULES_DIR = REPO / "rules"


@pytest.fixture(scope="session")
def rules():
    return load_rules(RULES_DIR)


@pytest.fixture(scope="session")
def library():
    return fixture_layer.segments(FIXTURES)


@pytest.fixture
def classify(rules, library, tmp_path):
    """Classify a spec (dict) written as a bundle, or as a plain log with form='log'."""
    count = iter(range(1000))

    def run(spec: dict, form: str = "bundle", params=None):
        folder = tmp_path / f"case{next(count)}"
        if form == "log":
            target = write_log(spec, folder / "server.log", FIXTURES, library)
        else:
            target = write_bundle(spec, folder / "bundle", FIXTURES, library)
        document, classification = analyze(target, rules, params)
        return document, classification
    return run
