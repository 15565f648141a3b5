"""Client code a reproduced deployment runs is listed, refused, then accepted by name.

A client's recipe with a container image, a mod, `--trust-remote-code` and an
`export LD_PRELOAD=...` is reproduced; `launch --dry-run` lists the four items, `launch` and
`session run` refuse with exit 2 and one line naming them, and once every name is accepted the
launch gets past the check: it runs the plan (a fake `docker` first on PATH records its argv
and exits 1, so the launch fails fast at the server, exit 3), the acceptance is recorded in
the run directory and the report shows it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from sparktriage.config.deployment import load_deployment

RECIPE = """\
recipe_version: "1"
model: org/tiny-moe
container: ghcr.io/client/vllm-patched:1.2
mods:
  - mods/fix-fp4-moe
defaults:
  port: 8000
  tensor_parallel: 1
command: |
  export LD_PRELOAD=/opt/client/libshim.so
  vllm serve {model} --port {port} -tp {tensor_parallel} --trust-remote-code
"""
ITEMS = ["image:ghcr.io/client/vllm-patched:1.2", "trust-remote-code:org/tiny-moe",
         "env:LD_PRELOAD", "mod:fix-fp4-moe"]
PRE_RECIPE = RECIPE.replace("mods:\n  - mods/fix-fp4-moe\n", "pre_exec:\n  - pip install shim==1.0\n")
PRE_ITEMS = ITEMS[:3] + ["pre_exec:1"]


def _cli(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "sparktriage", *args], capture_output=True,
                          text=True, timeout=timeout, env=ENV)


ENV: dict = {}


@pytest.fixture(scope="module")
def reproduced(tmp_path_factory) -> Path:
    """The reproduced deployment; every command of this file runs with a fake `docker` first
    on PATH (it records its argv and exits 1), so that no container is ever pulled or run."""
    root = tmp_path_factory.mktemp("client-code")
    fake = root / "bin"
    fake.mkdir()
    (fake / "docker").write_text(f'#!/bin/sh\necho "$@" >> {root / "docker-ran"}\nexit 1\n')
    (fake / "docker").chmod(0o755)
    ENV.clear()
    ENV.update({**os.environ, "PATH": f"{fake}:{os.environ['PATH']}"})
    (root / "recipe.yaml").write_text(RECIPE)
    done = _cli("reproduce", str(root / "recipe.yaml"), "--out", str(root / "out"),
                "--no-capture", "--json", str(root / "reproduce.json"))
    assert done.returncode == 0, done.stderr
    (root / "pre").mkdir()
    (root / "pre" / "recipe.yaml").write_text(PRE_RECIPE)
    done = _cli("reproduce", str(root / "pre" / "recipe.yaml"), "--out", str(root / "out-pre"),
                "--no-capture")
    assert done.returncode == 0, done.stderr
    return root


def test_reproduce_plan_lists_the_four(reproduced: Path) -> None:
    doc = json.loads((reproduced / "reproduce.json").read_text())
    assert [c["name"] for c in doc["plan"]["client_code"]] == ITEMS
    assert "loader-env-runs-client-code" in [t["id"] for t in doc["traps"]]
    assert any(u["text"] == "LD_PRELOAD" and "runs client code" in u["note"]
               for u in doc["unknown"])


def test_dry_run_lists_each_item_to_accept(reproduced: Path) -> None:
    done = _cli("launch", str(reproduced / "out" / "deployment.yaml"), "--dry-run",
                "--json", str(reproduced / "plan.json"))
    assert done.returncode == 0, done.stderr
    assert "runs client code (4; accept each by name" in done.stdout
    for name in ITEMS:
        assert f"  {name}  " in done.stdout
    plan = json.loads((reproduced / "plan.json").read_text())
    assert [c["name"] for c in plan["client_code"]] == ITEMS


@pytest.mark.parametrize("accepted", [[], ITEMS[:3]])
def test_launch_refuses_until_every_item_is_accepted(reproduced: Path, accepted: list[str],
                                                     tmp_path: Path) -> None:
    run = tmp_path / "run"
    flags = ["--accept-client-code", ",".join(accepted)] if accepted else []
    before = _ran(reproduced)
    done = _cli("launch", str(reproduced / "out" / "deployment.yaml"), "--out", str(run), *flags)
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(
        "error: the deployment runs client code not accepted: "), lines
    left = [n for n in ITEMS if n not in accepted]
    assert lines[0].split("not accepted: ", 1)[1].startswith(", ".join(left) + " (hint:")
    assert not run.exists() and _ran(reproduced) == before  # refused before anything ran


def _ran(root: Path) -> str:
    return (root / "docker-ran").read_text() if (root / "docker-ran").exists() else ""


def test_session_refuses_and_its_dry_run_lists(reproduced: Path, tmp_path: Path) -> None:
    dep = str(reproduced / "out" / "deployment.yaml")
    done = _cli("session", "run", dep, "--out", str(tmp_path / "s"), "--no-probe")
    assert done.returncode == 2 and "client code not accepted: " + ", ".join(ITEMS) in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "s").exists()
    dry = _cli("session", "run", dep, "--out", str(tmp_path / "s"), "--dry-run")
    assert dry.returncode == 0 and all(f"  {n}  " in dry.stdout for n in ITEMS), dry.stdout


def test_an_accepted_mod_whose_folder_is_missing_still_cannot_run(reproduced: Path,
                                                                  tmp_path: Path) -> None:
    before = _ran(reproduced)
    run = tmp_path / "run"
    done = _cli("launch", str(reproduced / "out" / "deployment.yaml"), "--out", str(run),
                "--accept-client-code", ",".join(ITEMS))
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "cannot all run on the lab: mod:fix-fp4-moe cannot run: the " \
        "mod's folder" in lines[0], lines
    assert not run.exists() and _ran(reproduced) == before


def test_accepted_launch_gets_past_the_check_and_is_recorded(reproduced: Path,
                                                             tmp_path: Path) -> None:
    ran = reproduced / "docker-ran"
    names = tmp_path / "accepted.txt"
    names.write_text("# reviewed with the client\n" + PRE_ITEMS[3] + "\n")
    run = tmp_path / "run"
    done = _cli("launch", str(reproduced / "out-pre" / "deployment.yaml"), "--out", str(run),
                "--accept-client-code", ",".join(PRE_ITEMS[:2]),
                "--accept-client-code", PRE_ITEMS[2], "--accept-client-code-from", str(names))
    assert done.returncode == 3, done.stderr  # the fake image's server exits 1: not ready
    text = ran.read_text()
    assert "ghcr.io/client/vllm-patched:1.2" in text and "pip install shim==1.0" in text
    assert "vllm serve org/tiny-moe" in text
    record = json.loads((run / "client-code.json").read_text())
    assert record["kind"] == "client-code-acceptance"
    assert [i["name"] for i in record["items"]] == PRE_ITEMS and record["accepted"] == PRE_ITEMS
    report = _cli("report", str(run), "--format", "md", "--out", str(tmp_path / "report"))
    assert report.returncode == 0, report.stderr
    text = next((tmp_path / "report").glob("*.md")).read_text()
    assert "Client code the consultant accepted by name" in text
    assert "`env:LD_PRELOAD`" in text and "`pre_exec:1`" in text


def test_own_deployments_need_no_acceptance(tmp_path: Path) -> None:
    """A deployment the project writes (test bed, demo: no image, no remote code, no loader
    variable) has nothing to accept."""
    from sparktriage.config.client_code import client_code
    from sparktriage.launch.acceptance import require
    from sparktriage.testbed.paths import Testbed
    from sparktriage.testbed.server import ServeSpec, deployment
    import yaml

    bed = Testbed(vllm_venv=tmp_path / "venv", root=tmp_path, cache=tmp_path / "cache")
    from sparktriage.session import demo
    for index, doc in enumerate([deployment(bed, ServeSpec(model=tmp_path / "model"), 8000,
                                            tmp_path),
                                 demo.deployment(bed, tmp_path / "model", 8000, tmp_path, 2,
                                                 temp=tmp_path / "t")]):
        path = tmp_path / f"d{index}.yaml"
        path.write_text(yaml.safe_dump(doc))
        assert client_code(load_deployment(path)) == []
    assert require([], ()).missing == []


def test_accepted_names_parsing_and_refusal_wording(tmp_path: Path) -> None:
    from sparktriage.config.client_code import client_code
    from sparktriage.launch.acceptance import ClientCodeRefused, parse_accepted, require
    names = tmp_path / "names"
    names.write_text("  # comment\nprogram:/opt/a,b/vllm\n\nenv:PATH\n")
    assert parse_accepted(["env:PATH, image:x", "env:PATH"], [names]) == (
        "env:PATH", "image:x", "program:/opt/a,b/vllm")
    with pytest.raises(ClientCodeRefused) as info:
        require(client_code(load_deployment(_dep(tmp_path, "env: {PYTHONPATH: ., PATH: /x}"))),
                ("env:PATH",))
    assert info.value.exit_code == 2
    assert info.value.message == "the deployment runs client code not accepted: env:PYTHONPATH"
    big = tmp_path / "big"
    big.write_bytes(b"a" * ((1 << 20) + 1))
    with pytest.raises(Exception, match="exceeds the limit of 1 MiB"):
        parse_accepted([], [big])


def _dep(tmp_path: Path, extra: str) -> Path:
    path = tmp_path / "dep.yaml"
    path.write_text("schema_version: 1\nlab: {nodes: [{name: local}]}\n"
                    f"model: {{path: /m}}\n{extra}\n")
    return path


def test_sweep_refuses_before_its_run_directory(reproduced: Path, tmp_path: Path) -> None:
    before = _ran(reproduced)
    done = _cli("sweep", str(reproduced / "out" / "deployment.yaml"), "--out",
                str(tmp_path / "sw"), "--accept-client-code", ITEMS[0])
    assert done.returncode == 2
    assert "client code not accepted: " + ", ".join(ITEMS[1:]) + " (hint:" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "sw").exists() and _ran(reproduced) == before


def test_session_records_the_acceptance_and_resume_checks_again(reproduced: Path,
                                                                tmp_path: Path) -> None:
    """Accepted: the session runs (the fake image fails its launch: exit 3), keeps the names
    and reports them; the deployment then gains a loader variable: resume refuses it."""
    dep = tmp_path / "deployment.yaml"
    dep.write_text((reproduced / "out-pre" / "deployment.yaml").read_text())
    out = tmp_path / "s"
    done = _cli("session", "run", str(dep), "--out", str(out), "--launches", "1", "--depths", "0",
                "--no-probe", "--format", "md", "--accept-client-code", ",".join(PRE_ITEMS))
    assert done.returncode == 3, done.stderr[-2000:]
    record = json.loads((out / "client-code.json").read_text())
    assert record["accepted"] == PRE_ITEMS
    assert "`pre_exec:1`" in next((out / "report").glob("*.md")).read_text()
    dep.write_text(dep.read_text().replace("env:\n", "env:\n  PYTHONPATH: /opt/client\n", 1))
    again = _cli("session", "resume", str(out))
    assert again.returncode == 2
    assert again.stderr.strip().splitlines() == [
        "error: the deployment runs client code not accepted: env:PYTHONPATH (hint: review each "
        "(launch --dry-run lists them), then accept by name: --accept-client-code NAME[,NAME] or "
        "--accept-client-code-from FILE (docs/security.md))"]
