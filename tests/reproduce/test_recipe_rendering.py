"""Every sparkrun recipe of the corpus: the planned argv of each node equals, flag for flag, what
sparkrun 0.4.2 itself renders for it (recorded by scripts/sparkrun_render.py, offline; see
docs/reproduce.md "Recipes as sparkrun renders them"), and the recipe's pre-launch steps are
steps of the deployment, named as sparkrun names them."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from recipe_rendering import RENDERED, differences, fixture

from sparktriage.config.deployment import load_deployment
from sparktriage.launch.plan import build_plan
from sparktriage.reproduce import reproduce

ROOT = Path(__file__).resolve().parents[2]
LAB = Path(__file__).parent / "corpus" / "lab-8x-gb10.yaml"
FIXTURES = sorted(p.name for p in RENDERED.glob("*.json"))
RENDERED_OK = [name for name in FIXTURES if fixture(name)["exit_code"] == 0]


def _plan(record: dict):
    out = Path(tempfile.mkdtemp(prefix="recipe-render-"))
    result = reproduce([ROOT / record["recipe"]], LAB, {}, out, capture_live=False)
    dep = load_deployment(out / "deployment.yaml")
    return result, dep, build_plan(dep)


def test_fixtures_cover_the_corpus_recipes() -> None:
    assert len(RENDERED_OK) >= 10
    for name in FIXTURES:
        record = fixture(name)
        assert record["sparkrun"] == "0.4.2"
        assert (ROOT / record["recipe"]).is_file(), record["recipe"]


@pytest.mark.parametrize("name", RENDERED_OK)
def test_planned_argv_is_what_sparkrun_renders(name: str) -> None:
    record = fixture(name)
    _, dep, plan = _plan(record)
    assert differences(record, plan, dep.lab) == []
