"""`pip install .` into a fresh venv, with no checkout next to it, finds the demo's fingerprint.

The worktree's sources are copied to a temporary folder and installed non-editable (`--no-deps`:
the dependencies come from the test venv's site-packages through a `.pth` line, which adds
that folder to `sys.path` without running its editable-install hook, so `sparktriage` itself
can only come from the fresh install). The installed `sparktriage demo --dry-run`, given the
test bed's vLLM and model paths, must plan with the fingerprint shipped inside the installed
package; without a model it must fail with one line and exit 2. No vLLM is started.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from sparktriage.testbed.paths import locate

pytestmark = pytest.mark.slow  # a pip install into a fresh venv
REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Path:
    work = tmp_path_factory.mktemp("installed")
    source = work / "source"
    source.mkdir()
    for name in ("pyproject.toml", "setup.py", "README.md"):
        shutil.copy2(REPO / name, source / name)
    shutil.copytree(REPO / "src", source / "src",
                    ignore=shutil.ignore_patterns("__pycache__", "*.so", "*.egg-info"))
    venv = work / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    site = Path(sysconfig.get_path("purelib", vars={"base": str(venv), "platbase": str(venv)}))
    (site / "deps.pth").write_text(sysconfig.get_path("purelib") + "\n")
    done = subprocess.run([sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python"),
                           "install", "--quiet", "--no-deps", "--disable-pip-version-check",
                           str(source)], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    shutil.rmtree(source)  # nothing of the checkout is left beside the installed package
    return venv


def _demo(venv: Path, cwd: Path, *args: str, bed_root: Path | None = None) -> subprocess.CompletedProcess:
    bed = locate()
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH",)}
    env.update(SPARKTRIAGE_VLLM_VENV=str(bed.vllm_venv), SPARKTRIAGE_TESTBED=str(bed_root or bed.root))
    return subprocess.run([str(venv / "bin" / "sparktriage"), "demo", "--dry-run", *args],
                          capture_output=True, text=True, cwd=cwd, env=env, timeout=120)


def test_installed_demo_finds_its_fingerprint(installed, tmp_path):
    bed = locate()
    model = REPO / "provision" / "garbage" / "model"
    done = _demo(installed, tmp_path, "--model", str(model), "--json", str(tmp_path / "plan.json"))
    assert done.returncode == 0, done.stderr
    plan = json.loads((tmp_path / "plan.json").read_text())
    fingerprint = Path(plan["fingerprint"])
    assert fingerprint.is_relative_to(installed) and fingerprint.name == "fingerprint.json"
    assert fingerprint.read_bytes() == (REPO / "src" / "sparktriage" / "testbed" / "garbage"
                                        / "fingerprint.json").read_bytes()
    assert json.loads(fingerprint.read_text())  # the shipped file is the whole document
    assert plan["vllm"] == str(bed.vllm) and plan["model"] == str(model)
    assert plan["launches"] == [{"depth": 0, "count": 1}, {"depth": 2, "count": 1}]
    assert f"fingerprint: {fingerprint}" in done.stdout.splitlines()
    assert not list(tmp_path.glob("runs"))  # a dry run creates no run directory
    # the recipe of the tiny test-bed model ships too
    recipe = subprocess.run([str(installed / "bin" / "python"), "-c",
                             "from sparktriage.testbed.recipes import path; print(path())"],
                            capture_output=True, text=True, cwd=tmp_path, check=True).stdout.strip()
    assert Path(recipe).is_relative_to(installed) and "def build_model" in Path(recipe).read_text()


def test_installed_demo_without_a_model_is_one_line_exit_2(installed, tmp_path):
    bare = tmp_path / "bed"  # a test bed with the tiny Llama only (no models/tiny-moe)
    (bare / "models").mkdir(parents=True)
    (bare / "models" / "tiny-llama").symlink_to(locate().model())
    done = _demo(installed, tmp_path, bed_root=bare)
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        "error: the tiny MoE model is missing: give --model DIR, or put it at the test bed's "
        "models/tiny-moe (provision/setup.sh copies provision/garbage/model there)"]
