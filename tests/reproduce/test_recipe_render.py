"""sparkrun's template rules, executor choice and client steps (importers/recipe_render.py,
importers/recipe_steps.py), and what the plan and launch do with the steps. Values checked
against what sparkrun 0.4.2 renders (tests/reproduce/recipes_rendered/)."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
from recipe_rendering import differences, fixture
from reproduce_helpers import gb10_lab, run

from sparktriage.config.deployment import load_deployment
from sparktriage.errors import UsageError
from sparktriage.config.client_code import client_code
from sparktriage.launch.acceptance import ClientCodeRefused, require
from sparktriage.launch.plan import STEP_DRIVER, build_plan
from sparktriage.reproduce.importers.recipe_render import executor, placeholders, render


def test_a_placeholder_inside_json_is_filled_and_the_json_kept() -> None:
    # the shape of corpus 43: escaped braces around a placeholder (sparkrun renders valid JSON)
    text = render("--speculative-config '{{\"method\":\"dspark\",\"num_speculative_tokens\":"
                  "{n},\"x\":\"y\"}}'", {"n": 5})
    assert json.loads(text.split("'")[1]) == {"method": "dspark", "num_speculative_tokens": 5,
                                              "x": "y"}
    # plain JSON (no `{{` anywhere): its `}}` ends nested objects and stays
    plain = render("--c '{\"a\":{\"b\":{k}}}'", {"k": 1})
    assert json.loads(plain.split("'")[1]) == {"a": {"b": 1}}
    assert placeholders("'{{\"a\":{n}}}' {m} {\"x\":1}") == ["n", "m"]


def test_values_are_written_as_python_writes_them_and_unknown_keys_stay() -> None:
    assert render("{a} {b} {c} {d} {gone}", {"a": True, "b": 0.80, "c": 8, "d": None}) \
        == "True 0.8 8 {d} {gone}"
    assert render("{url}", {"url": "http://h:{port}", "port": 8000}) == "http://h:8000"
    assert render("{a}", {"a": "x{a}"}).count("x") == 10  # a self-growing value: ten passes
    assert render("vllm serve m \\  \n  --port 1", {}) == "vllm serve m \\\n  --port 1"


@pytest.mark.parametrize(("runtime", "data", "command", "want"), [
    ("vllm-ray", {}, "vllm serve m", "ray"), ("eugr-vllm", {}, "vllm serve m", "ray"),
    ("vllm-distributed", {}, "vllm serve m --distributed-executor-backend ray", "mp"),
    ("vllm", {}, "vllm serve m", "mp"), (None, {}, "vllm serve m", "mp"),
    ("vllm", {"defaults": {"distributed_executor_backend": "ray"}}, "vllm serve m", "ray"),
    ("", {}, "vllm serve m --distributed-executor-backend  ray", "ray"),
])
def test_the_executor_is_chosen_as_sparkrun_chooses(runtime, data, command, want) -> None:
    assert executor(runtime, data, command) == want


RECIPE = """\
model: org/moe
runtime: vllm
min_nodes: 2
container: img:1
build_args: [--tf5, --vllm-ref, v0.19.0]
pre_exec:
  - pip install ray==2.49.0
  - {copy: /home/me/patch, dest: /workspace}
mods: [mods/fix-it]
defaults:
  tensor_parallel: 2
command: |
  vllm serve {model} -tp {tensor_parallel}
"""


def test_pre_launch_steps_are_named_steps_of_the_deployment(tmp_path: Path) -> None:
    (tmp_path / "r.yaml").write_text(RECIPE)
    r = run([tmp_path / "r.yaml"], tmp_path, gb10_lab(tmp_path, 2))
    steps = {s["name"]: s for s in r.deployment["steps"]}
    assert list(steps) == ["build:eugr", "pre_exec:1", "pre_exec:2", "mod:fix-it"]
    assert steps["pre_exec:1"]["run"] == ["pip install ray==2.49.0"]
    assert steps["pre_exec:1"]["runnable"] and not steps["pre_exec:2"]["runnable"]
    assert "build-and-copy.sh --tf5 --vllm-ref v0.19.0" in steps["build:eugr"]["run"][0]
    assert "not part of the input" in steps["mod:fix-it"]["why"]
    rows = {u.text for u in r.unknown}
    assert {"build:eugr (build_args entry)", "pre_exec:2 (pre_exec entry)",
            "mod:fix-it (mods entry)"} <= rows
    assert r.deployment["engine"]["backend"] == "mp"  # bare vllm, no Ray hint: native
    from sparktriage.reproduce.render import summary
    text = summary(r).text()
    assert "client steps (4, client code: launch runs none until they are accepted):" in text
    assert "  pre_exec:1 (before-serve): runnable" in text
    assert "  build:eugr (image): cannot run: the recipe tool builds its image" in text


def test_the_plan_runs_runnable_steps_before_the_server_and_launch_refuses(
        tmp_path: Path) -> None:
    (tmp_path / "r.yaml").write_text(RECIPE.replace("build_args: [--tf5, --vllm-ref, v0.19.0]\n",
                                                    "").replace("mods: [mods/fix-it]\n", ""))
    out = tmp_path / "out"
    run([tmp_path / "r.yaml"], tmp_path, gb10_lab(tmp_path, 2), out="out")
    plan = build_plan(load_deployment(out / "deployment.yaml"))
    argv = next(p for st in plan.stages for _, p in st.processes if p.name == "server").argv
    image = argv.index("img:1")
    entry = [argv[i + 1] for i in range(image) if argv[i] == "--entrypoint"]
    assert entry == ["bash"]
    assert argv[image + 1:image + 6] == ("-c", STEP_DRIVER, "steps", "1",
                                         "pip install ray==2.49.0")
    assert argv[image + 6:image + 8] == ("vllm", "serve")
    assert [s["name"] for s in plan.client_steps] == ["pre_exec:1", "pre_exec:2"]
    dep = load_deployment(out / "deployment.yaml")
    names = [i.name for i in client_code(dep)]
    assert "pre_exec:1" in names and "pre_exec:2" in names
    with pytest.raises(ClientCodeRefused, match=r"not accepted: .*pre_exec:1, pre_exec:2"):
        require(client_code(dep), ())
    # accepted, the step that is not a command still cannot run, and says why
    with pytest.raises(ClientCodeRefused, match=r"pre_exec:2 cannot run: an entry that is not "
                                                r"a command"):
        require(client_code(dep), tuple(names))


def test_a_plan_that_differs_from_sparkrun_by_one_value_is_caught() -> None:
    name = "38-qwen38-flash-next-sparkrun-vllm-distributed-mtp--qwen3.8-flash-next-nvfp4-vllm-" \
           "t4cmyk.json"
    record = fixture(name)
    root = Path(__file__).resolve().parents[2]
    import tempfile

    from sparktriage.reproduce import reproduce
    out = Path(tempfile.mkdtemp(prefix="recipe-render-"))
    reproduce([root / record["recipe"]], Path(__file__).parent / "corpus" / "lab-8x-gb10.yaml",
              {}, out, capture_live=False)
    dep = load_deployment(out / "deployment.yaml")
    plan = build_plan(dep)
    assert differences(record, plan, dep.lab) == []
    changed = copy.deepcopy(record)
    for call in changed["calls"]:
        call["text"] = call["text"].replace("--max-num-seqs 8", "--max-num-seqs 9")
    found = differences(changed, plan, dep.lab)
    assert len(found) == 2 and all("('max-num-seqs', '9')" in f for f in found)
    dropped = copy.deepcopy(record)
    dropped["calls"] = [c for c in dropped["calls"] if c["node_rank"] != 1]
    assert differences(dropped, plan, dep.lab) == ["2 node(s) planned, sparkrun renders 1"]


def test_the_step_driver_runs_each_step_then_the_program(tmp_path: Path) -> None:
    """The fixed driver, run by a real bash: steps in order, each its own shell (a `cd` does
    not carry over, as sparkrun's separate `docker exec`s), the program exec'd with its words
    as given; a failing step stops everything with its status."""
    import subprocess
    log = tmp_path / "log"
    steps = [f"cd / && echo one >> {log}", f"echo \"two $PWD\" >> {log}"]
    done = subprocess.run(["bash", "-c", STEP_DRIVER, "steps", "2", *steps,
                           "printf", "%s|", "a b", "'c'"], cwd=tmp_path, capture_output=True,
                          text=True, timeout=30)
    assert done.returncode == 0 and done.stdout == "a b|'c'|"
    assert log.read_text() == f"one\ntwo {tmp_path}\n"
    failed = subprocess.run(["bash", "-c", STEP_DRIVER, "steps", "1", "exit 3", "echo", "no"],
                            capture_output=True, text=True, timeout=30)
    assert failed.returncode == 3 and failed.stdout == ""


def test_the_dry_run_text_names_every_client_step(tmp_path: Path) -> None:
    from sparktriage.launch.render import render_launch_plan
    (tmp_path / "r.yaml").write_text(RECIPE)
    run([tmp_path / "r.yaml"], tmp_path, gb10_lab(tmp_path, 2))
    plan = build_plan(load_deployment(tmp_path / "out" / "deployment.yaml"))
    text = render_launch_plan(plan).text()
    assert "pre_exec:1 (pre_exec): run in each server container before its program" in text
    assert "mod:fix-it (mod): cannot run: the mod's folder" in text


def test_shell_variables_in_a_command_are_the_container_s() -> None:
    # `${NODE_IP}` is bash's at run time (sparkrun leaves it); `{model}` is the recipe's
    assert placeholders("export VLLM_HOST_IP=${NODE_IP}; vllm serve {model} --x {y}") \
        == ["model", "y"]
    assert render("A=${model} {model}", {"model": "m"}) == "A=$m m"


def test_launch_refuses_a_deployment_with_client_steps_in_one_line(tmp_path: Path) -> None:
    from reproduce_helpers import cli
    (tmp_path / "r.yaml").write_text(RECIPE)
    run([tmp_path / "r.yaml"], tmp_path, gb10_lab(tmp_path, 2))
    runs = tmp_path / "runs"
    done = cli("launch", str(tmp_path / "out" / "deployment.yaml"), "--out", str(runs))
    lines = [x for x in done.stderr.splitlines() if x.strip()]
    assert done.returncode == 2, done.stderr
    assert len(lines) == 1 and "not accepted:" in lines[0]
    for name in ("build:eugr", "pre_exec:1", "pre_exec:2", "mod:fix-it"):
        assert name in lines[0]
    assert not runs.exists()  # nothing started, no run directory
    accepted = ",".join(["build:eugr", "pre_exec:1", "pre_exec:2", "mod:fix-it", "image:img:1"])
    done = cli("launch", str(tmp_path / "out" / "deployment.yaml"), "--out", str(runs),
               "--accept-client-code", accepted)
    lines = [x for x in done.stderr.splitlines() if x.strip()]
    assert done.returncode == 2, done.stderr
    assert len(lines) == 1 and "mod:fix-it cannot run" in lines[0] \
        and "build:eugr cannot run" in lines[0], lines
    assert not runs.exists()


def test_an_export_extending_the_image_s_variable_is_not_set(tmp_path: Path) -> None:
    # corpus 45's shape: `-e PATH=/usr/local/cuda/bin:` would replace the image's PATH
    (tmp_path / "r.yaml").write_text(
        'model: m/x\nruntime: vllm\ncontainer: img:1\nenv: {CUDA_HOME: /usr/local/cuda}\n'
        'command: |\n  export PATH="/usr/local/cuda/bin:${PATH:-}";\n'
        '  export CUDA_HOME="${CUDA_HOME:-/opt/cuda}";\n  exec vllm serve {model}\n')
    r = run([tmp_path / "r.yaml"], tmp_path)
    assert "PATH" not in r.deployment["env"]
    assert r.deployment["env"]["CUDA_HOME"] == "/usr/local/cuda"
    assert any(u.text == "export PATH" and "image's PATH" in u.note for u in r.unknown)


def test_a_value_that_doubles_each_pass_is_refused_at_its_line(tmp_path: Path) -> None:
    from sparktriage.limits import LimitError
    blob = "x" * 4096
    (tmp_path / "r.yaml").write_text(f'model: m/x\ndefaults:\n  a: "{blob}{{a}}{{a}}"\n'
                                     'command: vllm serve {model} --x {a}\n')
    with pytest.raises(LimitError) as caught:
        run([tmp_path / "r.yaml"], tmp_path)
    assert caught.value.one_line().startswith(f"{tmp_path / 'r.yaml'}:4: the recipe's command "
                                              "with its values filled in exceeds the limit of "
                                              "1 MiB")
