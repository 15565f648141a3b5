"""A deployment's speculative config wherever it is given (config/speculative.py), and the one
config every launch at a chosen depth runs: never two `--speculative-config` flags (vLLM keeps the
last, so a client's own flag would silently override the depth a sweep launches), none at depth 0,
and a batch-size schedule of the depth left out and said."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from sparktriage.config import speculative as spec_source
from sparktriage.config.deployment import Speculative, load_deployment
from sparktriage.errors import ConfigError, UsageError
from sparktriage.launch.plan import build_plan
from sparktriage.sweep.plan import deployment_hash, plan_sweep

HEAD = "lab: {nodes: [{name: local, host: 127.0.0.1}]}\nmodel: {path: /nonexistent}\n"
SCHEDULE = [[1, 4, 3], [5, 64, 1]]
EAGLE = {"method": "eagle3", "model": "/draft", "num_speculative_tokens": 3,
         "draft_tensor_parallel_size": 1, "num_speculative_tokens_per_batch_size": SCHEDULE}


def _write(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "d.yaml"
    path.write_text(HEAD + body)
    return path


def _in_flags(tmp_path: Path, config: dict) -> Path:
    return _write(tmp_path, "serve:\n  flags:\n    speculative-config: '"
                  + json.dumps(config, separators=(",", ":")) + "'\n")


def _configs(dep) -> list[dict]:
    """Every --speculative-config the launch's vllm serve gets, parsed."""
    plan = build_plan(dep)
    argv = [a for stage in plan.stages for _, proc in stage.processes for a in proc.argv]
    return [json.loads(argv[i + 1]) for i, a in enumerate(argv) if a == "--speculative-config"]


@pytest.mark.parametrize("body, where", [
    ("speculative: {method: eagle3, num_speculative_tokens: 3, model: /draft}\n", "speculative"),
    ("serve: {flags: {speculative-config: '{\"method\":\"eagle3\",\"model\":\"/draft\","
     "\"num_speculative_tokens\":3}'}}\n", "serve.flags.speculative-config"),
    ("serve: {extra_args: ['--speculative-config', '{\"method\":\"eagle3\",\"model\":\"/draft\","
     "\"num_speculative_tokens\":3}', '--max-num-seqs', '4']}\n", "serve.extra_args"),
    ("serve: {extra_args: ['--speculative-config={\"method\":\"eagle3\",\"model\":\"/draft\","
     "\"num_speculative_tokens\":3}']}\n", "serve.extra_args"),
    ("serve: {extra_args: ['--speculative-config.method', eagle3, '--speculative-config.model', "
     "/draft, '--speculative_config.num_speculative_tokens', '3']}\n", "serve.extra_args"),
])
def test_found_wherever_the_deployment_gives_it(tmp_path, body, where):
    found = spec_source.find(load_deployment(_write(tmp_path, body)))
    assert found.where == where
    assert found.config == {"method": "eagle3", "model": "/draft", "num_speculative_tokens": 3}
    assert found.method == "eagle3" and found.depth == 3 and not found.schedule


def test_none_given_is_depth_0(tmp_path):
    found = spec_source.find(load_deployment(_write(tmp_path, "")))
    assert (found.config, found.where, found.method, found.depth) == (None, None, None, 0)


def test_the_schedule_sets_the_one_stream_depth(tmp_path):
    found = spec_source.find(load_deployment(_in_flags(tmp_path, {**EAGLE, "num_speculative_tokens": 4,
                                                                  "num_speculative_tokens_per_batch_size": [[2, 8, 1], [1, 1, 2]]})))
    assert found.schedule and found.depth == 2  # the entry covering batch size 1


@pytest.mark.parametrize("body, words", [
    ("speculative: {method: ngram, num_speculative_tokens: 2}\n"
     "serve: {flags: {speculative-config: '{\"method\":\"ngram\",\"num_speculative_tokens\":4}'}}\n",
     "given 2 times (speculative, serve.flags.speculative-config)"),
    ("serve: {flags: {speculative-config: '{\"method\":\"ngram\",\"num_speculative_tokens\":4}'},"
     " extra_args: ['--speculative-config.num_speculative_tokens', '2']}\n",
     "given 2 times (serve.flags.speculative-config, serve.extra_args)"),
    ("speculative: {method: ngram, num_speculative_tokens: 2, extra: {num_speculative_tokens: 4}}\n",
     "num_speculative_tokens belong(s) in speculative itself"),
])
def test_a_config_given_twice_is_refused_on_load(tmp_path, body, words):
    with pytest.raises(ConfigError) as err:
        load_deployment(_write(tmp_path, body))
    assert words in str(err.value) + " ".join(err.value.errors)


@pytest.mark.parametrize("flag, words", [("'{not json'", "not valid JSON"), ("'[1, 2]'", "JSON object"),
                                         ("3", "as a JSON string")])
def test_an_unreadable_flag_is_a_config_error(tmp_path, flag, words):
    dep = load_deployment(_write(tmp_path, f"serve: {{flags: {{speculative-config: {flag}}}}}\n"))
    with pytest.raises(ConfigError, match=words):
        spec_source.find(dep)


def test_every_sweep_launch_runs_one_config_at_its_depth(tmp_path):
    plan = plan_sweep(_in_flags(tmp_path, EAGLE), depths=(2, 4))
    assert (plan.method, plan.speculative_model) == ("eagle3", "/draft")
    assert plan.speculative_extra == {"draft_tensor_parallel_size": 1}
    assert plan.speculative_source == "serve.flags.speculative-config"
    assert plan.speculative_left_out == {"num_speculative_tokens_per_batch_size": SCHEDULE}
    dep = plan.load_deployment()
    assert _configs(dep) == [EAGLE]  # as given, the launch would run the client's schedule
    for depth in (2, 4):
        assert _configs(plan.deployment_at(dep, depth)) == [
            {"method": "eagle3", "model": "/draft", "num_speculative_tokens": depth,
             "draft_tensor_parallel_size": 1}]
    assert _configs(plan.deployment_at(dep, 0)) == []  # depth 0 runs no speculative decoding
    # pooled launches compare deployments less the swept factor, wherever it was given
    assert deployment_hash(dep) == deployment_hash(plan.deployment_at(dep, 0))


def test_another_method_keeps_none_of_the_deployments_keys(tmp_path):
    # none of eagle3's keys; ngram gets the prompt lookup 2-4 (sweep.plan.NGRAM_EXTRA, #37)
    plan = plan_sweep(_in_flags(tmp_path, EAGLE), depths=(2,), method="ngram")
    lookup = {"prompt_lookup_max": 4, "prompt_lookup_min": 2}
    assert (plan.method, plan.speculative_model, plan.speculative_extra) == ("ngram", None, lookup)
    assert _configs(plan.deployment_at(plan.load_deployment(), 2)) == [
        {"method": "ngram", "num_speculative_tokens": 2, **lookup}]



@pytest.mark.parametrize("given, asked", [("deepseek_mtp", "mtp"), ("mtp", "glm4_moe_mtp"),
                                          ("qwen3_next_mtp", "deepseek_mtp")])
def test_an_mtp_alias_is_the_same_method(tmp_path, given, asked):
    # vLLM 0.32 runs every `*_mtp` method as `mtp`: asking for either keeps the deployment's keys
    config = {"method": given, "num_speculative_tokens": 1, "draft_tensor_parallel_size": 1,
              "rejection_sample_method": "strict"}
    plan = plan_sweep(_in_flags(tmp_path, config), depths=(2,), method=asked)
    assert plan.speculative_extra == {"draft_tensor_parallel_size": 1,
                                      "rejection_sample_method": "strict"}
    assert _configs(plan.deployment_at(plan.load_deployment(), 2)) == [
        {"method": asked, "num_speculative_tokens": 2, "draft_tensor_parallel_size": 1,
         "rejection_sample_method": "strict"}]
    assert plan.speculative(3) == Speculative(
        method=asked, num_speculative_tokens=3,
        extra={"draft_tensor_parallel_size": 1, "rejection_sample_method": "strict"})
    # a name that merely contains "mtp" is not an alias
    assert plan_sweep(_in_flags(tmp_path, config), depths=(2,), method="mtpx").speculative_extra == {}

def test_a_config_without_a_method_needs_one_from_the_command_line(tmp_path):
    path = _in_flags(tmp_path, {"model": "/draft", "num_speculative_tokens": 3})
    with pytest.raises(UsageError, match="names no method: give --method"):
        plan_sweep(path)
    assert plan_sweep(path, method="draft_model").speculative_model is None  # another method


def test_the_session_launches_each_depth_with_the_deployments_method(tmp_path):
    # the session declares the sweep's plan (#37): one builder of the config at a depth
    path = _in_flags(tmp_path, EAGLE)
    dep = load_deployment(path)
    plan = plan_sweep(path, depths=(1, 2), method="eagle3")
    assert plan.speculative(1) == Speculative(method="eagle3", num_speculative_tokens=1,
                                              model="/draft",
                                              extra={"draft_tensor_parallel_size": 1})
    assert plan.speculative_left_out == {"num_speculative_tokens_per_batch_size": SCHEDULE}
    assert _configs(plan.deployment_at(dep, 1)) == [
        {"method": "eagle3", "model": "/draft", "num_speculative_tokens": 1,
         "draft_tensor_parallel_size": 1}]
    assert plan_sweep(path, depths=(2,), method="ngram").speculative(2) == Speculative(
        method="ngram", num_speculative_tokens=2, extra={"prompt_lookup_max": 4, "prompt_lookup_min": 2})
    assert plan.speculative(0) is None
    assert _configs(plan.deployment_at(dep, 0)) == []


def test_the_session_plan_takes_the_deployments_method_and_one_stream_depth(tmp_path):
    path = _in_flags(tmp_path, EAGLE)
    result = subprocess.run([sys.executable, "-m", "sparktriage", "session", "run", str(path),
                             "--out", str(tmp_path / "run"), "--dry-run", "--json", "-"],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    options = json.loads(result.stdout[result.stdout.index("{"):])["options"]
    assert options["method"] == "eagle3" and options["extra"] == {"base_depth": 3}


@pytest.mark.parametrize("doc, config, depth", [
    ({"speculative": {"method": "mtp", "num_speculative_tokens": 2, "model": None,
                      "extra": {"k": 1}}}, {"method": "mtp", "num_speculative_tokens": 2,
                                            "model": None, "k": 1}, 2),
    ({"serve": {"flags": {"speculative-config": json.dumps(EAGLE)}}}, EAGLE, 3),
    ({"serve": {"extra_args": ["--speculative-config", json.dumps({**EAGLE, "num_speculative_tokens_per_batch_size": [[1, 1, 2]]})]}},
     {**EAGLE, "num_speculative_tokens_per_batch_size": [[1, 1, 2]]}, 2),
    ({"serve": {"extra_args": ["--speculative-config=" + json.dumps({"method": "ngram", "num_speculative_tokens": 5})]}},
     {"method": "ngram", "num_speculative_tokens": 5}, 5),
    ({"serve": {"flags": {"speculative-config": "{broken"}}}, None, 0),
    ({"serve": "not a mapping"}, None, 0),
    ({}, None, 0),
])
def test_the_report_reads_the_config_from_a_written_deployment(doc, config, depth):
    from sparktriage.config.speculative_flag import in_document
    from sparktriage.report.findings import configured_depth
    assert in_document(doc) == config
    assert configured_depth(doc) == depth


class _Run:
    """The little of a run page one's deployment line reads: its deployment.yaml."""

    launches: list = []

    def __init__(self, deployment: dict) -> None:
        self.deployment = deployment

    def doc(self, rel: str):
        return self.deployment if rel == "deployment.yaml" else None


@pytest.mark.parametrize("doc, words", [
    ({"serve": {"flags": {"speculative-config": json.dumps(EAGLE)}}},
     "speculative eagle3, depth set by batch size (3 tokens at one stream)"),
    ({"serve": {"extra_args": ["--speculative-config", json.dumps({"method": "mtp", "num_speculative_tokens": 2})]}},
     "speculative mtp, 2 tokens"),
    ({"serve": {}}, "speculative none configured"),
])
def test_page_one_names_the_config_wherever_the_deployment_gave_it(doc, words):
    from sparktriage.report.page_one import deployment
    line = deployment(_Run({"nodes": ["a"], **doc}), {"protocol": {}, "sweep": {"status": "missing"}})["line"]
    assert line.endswith(words), line


def test_a_reproduced_client_line_with_a_schedule_sweeps_the_clients_method(tmp_path):
    """`reproduce` keeps a nested --speculative-config as JSON in serve.flags; the sweep plans
    with the client's method and draft model and leaves the schedule out of its launches."""
    line = tmp_path / "serve.sh"
    line.write_text("vllm serve org/model --tensor-parallel-size 2 --speculative-config '"
                    + json.dumps(EAGLE, separators=(",", ":")) + "'\n")
    result = subprocess.run([sys.executable, "-m", "sparktriage", "reproduce", str(line), "--out",
                             str(tmp_path / "out"), "--no-capture"],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    plan = plan_sweep(tmp_path / "out" / "deployment.yaml", depths=(1, 2))
    assert (plan.method, plan.speculative_model, plan.speculative_source) == (
        "eagle3", "/draft", "serve.flags.speculative-config")
    assert plan.speculative_left_out == {"num_speculative_tokens_per_batch_size": SCHEDULE}
    dep = plan.load_deployment()
    assert [len(_configs(plan.deployment_at(dep, d))) for d in (0, 1, 2)] == [0, 1, 1]
