"""vLLM's speculative options before 0.8 (`--speculative-model`, `--num-speculative-tokens`, ...):
`reproduce` translates a client's old serve line into the one `--speculative-config` vLLM 0.32
reads (config/speculative_legacy.py), leaves out and flags what 0.32 has no setting for, and a
deployment that still carries an old option is refused on load (vLLM 0.32 would refuse it at
every launch)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from sparktriage.config.deployment import load_deployment
from sparktriage.config.speculative_legacy import translate
from sparktriage.errors import ConfigError, InputError, UsageError
from sparktriage.launch.plan import build_plan
from sparktriage.reproduce import reproduce
from sparktriage.sweep.plan import plan_sweep

HEAD = "lab: {nodes: [{name: local, host: 127.0.0.1}]}\nmodel: {path: /nonexistent}\n"
OLD = ("--speculative-model", "--num-speculative-tokens", "--speculative_model",
       "--ngram-prompt-lookup-max", "--speculative-disable-mqa-scorer", "-spec-draft-tp")


def _reproduce(tmp_path: Path, line: str):
    src = tmp_path / "serve.sh"
    src.write_text(line + "\n")
    return reproduce([src], None, {}, tmp_path / "out", capture_live=False)


def _argv(dep) -> list[str]:
    plan = build_plan(dep)
    return [a for stage in plan.stages for _, proc in stage.processes for a in proc.argv]


def test_an_old_ngram_line_becomes_one_speculative_config(tmp_path):
    r = _reproduce(tmp_path, "vllm serve /m --speculative-model '[ngram]' "
                   "--num-speculative-tokens 5 "
                   "--ngram-prompt-lookup-max 4 --ngram_prompt_lookup_min 2 "
                   "--speculative-disable-by-batch-size 4 --disable-logprobs-during-spec-decoding "
                   "True --speculative-disable-mqa-scorer --max-model-len 8192")
    d = r.deployment
    assert d["speculative"] == {"method": "ngram", "num_speculative_tokens": 5, "model": None,
                                "extra": {"prompt_lookup_max": 4, "prompt_lookup_min": 2}}
    assert d["serve"]["max_model_len"] == 8192 and d["model"]["path"] == "/m"
    assert d["serve"]["extra_args"] == [] and d["serve"]["flags"] == {}
    left_out = {u.text: u.note for u in r.unknown}
    assert set(left_out) == {"--speculative-disable-by-batch-size 4",
                             "--disable-logprobs-during-spec-decoding True",
                             "--speculative-disable-mqa-scorer"}
    assert all("no setting in vLLM 0.32" in note for note in left_out.values())
    dep = load_deployment(tmp_path / "out" / "deployment.yaml")
    argv = _argv(dep)
    assert argv.count("--speculative-config") == 1
    assert json.loads(argv[argv.index("--speculative-config") + 1]) == {
        "method": "ngram", "num_speculative_tokens": 5, "prompt_lookup_max": 4,
        "prompt_lookup_min": 2}
    assert not [a for a in argv if a.split("=")[0] in OLD or "spec-decoding" in a]


def test_an_old_draft_model_line_keeps_the_model_and_needs_a_method_to_sweep(tmp_path):
    """vLLM infers a draft model's method itself; this tool does not guess it for a sweep."""
    r = _reproduce(tmp_path, "vllm serve /m --speculative-model /draft --num-speculative-tokens 3 "
                   "-spec-draft-tp 1 --speculative-model-quantization fp8 --port 8100")
    flags = r.deployment["serve"]["flags"]
    assert json.loads(flags["speculative-config"]) == {
        "model": "/draft", "num_speculative_tokens": 3, "draft_tensor_parallel_size": 1,
        "quantization": "fp8"}
    assert r.deployment["serve"]["port"] == 8100 and r.unknown == []
    path = tmp_path / "out" / "deployment.yaml"
    with pytest.raises(UsageError, match="names no method: give --method"):
        plan_sweep(path)
    plan = plan_sweep(path, method="draft_model", depths=(2,))
    assert plan.speculative_model is None  # another method than the (unnamed) deployment's


def test_an_old_option_beside_a_speculative_config_is_refused(tmp_path):
    with pytest.raises(InputError, match="given twice: --speculative-config and vLLM < 0.8's "
                                         "--num-speculative-tokens"):
        _reproduce(tmp_path, "vllm serve /m --speculative-config.method ngram "
                   "--num-speculative-tokens 3")


def test_translate_reads_the_values_as_vllm_did():
    assert translate({"speculative-model": "NGRAM", "num-speculative-tokens": "2"}) == (
        {"method": "ngram", "num_speculative_tokens": 2}, [])
    assert translate({"speculative-model": "org/7b-eagle", "speculative-max-model-len": "4096",
                      "spec-decoding-acceptance-method": "typical_acceptance_sampler"}) == (
        {"model": "org/7b-eagle", "max_model_len": 4096}, ["spec-decoding-acceptance-method"])
    assert translate({"num-speculative-tokens": "1e999", "ngram-prompt-lookup-max": "nan"})[0] == {
        "num_speculative_tokens": "1e999", "prompt_lookup_max": "nan"}  # no Infinity in the JSON


@pytest.mark.parametrize("serve, where", [
    ("serve: {extra_args: ['--num-speculative-tokens', '3']}\n",
     "serve.extra_args --num-speculative-tokens"),
    ("serve: {extra_args: ['--speculative_model=[ngram]']}\n",
     "serve.extra_args --speculative_model"),
    ("serve: {flags: {speculative-model: '[ngram]'}}\n", "serve.flags.speculative-model"),
])
def test_a_deployment_with_an_old_option_is_refused_on_load(tmp_path, serve, where):
    path = tmp_path / "d.yaml"
    path.write_text(HEAD + serve)
    with pytest.raises(ConfigError) as err:
        load_deployment(path)
    text = str(err.value) + " ".join(err.value.errors)
    assert f"{where}: a speculative option of vLLM before 0.8" in text
    done = subprocess.run([sys.executable, "-m", "sparktriage", "launch", str(path), "--dry-run"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and where in done.stderr


def test_other_arguments_are_not_old_speculative_options(tmp_path):
    path = tmp_path / "d.yaml"
    path.write_text(HEAD + "serve: {extra_args: ['--speculative-config.method', ngram, "
                           "'--speculative-config.num_speculative_tokens', '2', "
                           "'--num-scheduler-steps', '1']}\n")
    assert load_deployment(path).serve.extra_args[-2:] == ["--num-scheduler-steps", "1"]


@pytest.mark.parametrize("config", [
    {"model": "[ngram]", "num_speculative_tokens": 3, "prompt_lookup_max": 4},
    {"model": "ngram", "num_speculative_tokens": 3, "prompt_lookup_max": 4},
    {"method": "[ngram]", "num_speculative_tokens": 3, "prompt_lookup_max": 4},
])
def test_the_ngram_spellings_vllm_reads_as_ngram_sweep_as_ngram(tmp_path, config):
    """The older `"model": "[ngram]"` (no method) and the method `[ngram]` are
    the ngram drafter: the sweep keeps the deployment's keys and needs no --method."""
    path = tmp_path / "d.yaml"
    path.write_text(HEAD + "serve: {flags: {speculative-config: '"
                    + json.dumps(config, separators=(",", ":")) + "'}}\n")
    plan = plan_sweep(path, depths=(2,))
    assert (plan.method, plan.speculative_model, plan.speculative_extra) == (
        "ngram", None, {"prompt_lookup_max": 4})
    launched = _argv(plan.deployment_at(plan.load_deployment(), 2))
    assert launched.count("--speculative-config") == 1
    assert json.loads(launched[launched.index("--speculative-config") + 1]) == {
        "method": "ngram", "num_speculative_tokens": 2, "prompt_lookup_max": 4}
    given = plan_sweep(path, method="ngram", depths=(2,))
    assert given.speculative_extra == {"prompt_lookup_max": 4}


def test_a_reproduced_ngram_model_config_is_the_ngram_method(tmp_path):
    r = _reproduce(tmp_path, "vllm serve /m --speculative-config "
                   "'{\"model\": \"[ngram]\", \"num_speculative_tokens\": 5}'")
    assert r.deployment["speculative"] == {"method": "ngram", "num_speculative_tokens": 5,
                                           "model": None, "extra": {}}
    assert "ngram-structured-output" in {t.id for t in r.traps}
