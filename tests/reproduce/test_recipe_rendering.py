"""Every sparkrun recipe of the corpus: the planned argv of each node equals, flag for flag, what
sparkrun 0.4.2 itself renders for it (recorded by scripts/sparkrun_render.py, offline; see
docs/reproduce.md "Recipes as sparkrun renders them"), and the recipe's pre-launch steps are
steps of the deployment, named as sparkrun names them."""

from __future__ import annotations

import hashlib
import re
import tempfile
from pathlib import Path

import pytest
from recipe_rendering import RENDERED, differences, fixture, planned_steps, rendered_steps

from sparktriage.config.deployment import load_deployment
from sparktriage.launch.plan import build_plan
from sparktriage.reproduce import reproduce

ROOT = Path(__file__).resolve().parents[2]
LAB = Path(__file__).parent / "corpus" / "lab-8x-gb10.yaml"
FIXTURES = sorted(p.name for p in RENDERED.glob("*.json"))
RENDERED_OK = [name for name in FIXTURES if fixture(name)["exit_code"] == 0]
# fixture -> what the code is missing (strict: the mark must go once the case passes)
GAPS: dict[str, str] = {}


def _plan(record: dict):
    out = Path(tempfile.mkdtemp(prefix="recipe-render-"))
    result = reproduce([ROOT / record["recipe"]], LAB, {}, out, capture_live=False)
    dep = load_deployment(out / "deployment.yaml")
    return result, dep, build_plan(dep)


def test_fixtures_cover_the_corpus_recipes() -> None:
    """Every sparkrun-shaped corpus recipe has its rendering, recorded from the same bytes."""
    assert len(RENDERED_OK) >= 10
    recorded = set()
    for name in FIXTURES:
        record = fixture(name)
        assert record["sparkrun"] == "0.4.2"
        path = ROOT / record["recipe"]
        assert hashlib.sha256(path.read_bytes()).hexdigest() == record["recipe_sha256"], name
        recorded.add(path.parent.name)
    corpus = Path(__file__).parent / "corpus"
    sparkrun_shaped = {p.parent.name for p in corpus.glob("*/*.yaml") if p.name != "expected.yaml"
                       and re.search(r"^(command|defaults):", p.read_text(), re.M)
                       and re.search(r"^(min_nodes|runtime|recipe_version):", p.read_text(),
                                     re.M)}
    assert sparkrun_shaped <= recorded, sparkrun_shaped - recorded


def test_sparkrun_refuses_a_recipe_without_model() -> None:
    """Corpus 12 is eugr's v1 format with the model only in the command: sparkrun refuses it
    ("Recipe missing 'model' field"); reproduce takes the command's model (eugr's own launcher
    runs it), which the corpus case checks."""
    record = fixture("12-glm5-fp8-8x-recipe--glm-5-fp8.json")
    assert record["exit_code"] == 1 and "Recipe missing 'model' field" in record["output_tail"]


@pytest.mark.parametrize("name", [
    pytest.param(n, id=n.split("--")[0], marks=[pytest.mark.xfail(strict=True, reason=GAPS[n])]
                 if n in GAPS else []) for n in RENDERED_OK])
def test_planned_argv_is_what_sparkrun_renders(name: str) -> None:
    record = fixture(name)
    _, dep, plan = _plan(record)
    assert differences(record, plan, dep.lab) == []
    assert planned_steps(dep) == rendered_steps(record)


def test_sparkrun_s_hooks_read_as_named_steps() -> None:
    record = fixture("49-qwen35-397b-sparkrun-eugr-vllm-4x-mods--qwen3.5-397b-a17b-int4-"
                     "autoround-4x-vllm.json")
    names = [name for name, _ in rendered_steps(record)]
    assert names == ["mod:fix-qwen3-coder-next", "mod:fix-qwen35-tp4-marlin"]
    record = fixture("45-deepseek-v4-flash-0731-sparkrun-pre-exec-exports--deepseek-v4-flash-"
                     "0731-dspark-dual-spark-1m.json")
    steps = rendered_steps(record)
    assert [n for n, _ in steps] == [f"pre_exec:{i}" for i in range(1, 5)]
    assert steps[0][1].startswith("mkdir -p /cache/huggingface/dspark-tmp")
