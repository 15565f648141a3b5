"""Property tests: written deployments load with the model; a deployment YAML comes back unchanged."""

from __future__ import annotations

import tempfile
from pathlib import Path

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sparktriage.config.deployment import Deployment, load_deployment
from sparktriage.reproduce import reproduce
from sparktriage.reproduce.check.traps import load_traps

names = st.from_regex(r"[a-z][a-z0-9-]{0,10}", fullmatch=True)
values = st.from_regex(r"[A-Za-z0-9_./-]{1,12}", fullmatch=True)


@st.composite
def deployments(draw) -> dict:
    dep = {"schema_version": 1, "name": draw(names),
           "lab": {"nodes": [{"name": "local", "host": "127.0.0.1"}]},
           "model": {"path": "/models/" + draw(values), "name": draw(st.none() | names)},
           "parallelism": {"tp": draw(st.integers(1, 8)), "ep": draw(st.booleans())},
           "serve": {"port": draw(st.integers(1024, 65535)),
                     "max_num_seqs": draw(st.none() | st.integers(1, 512)),
                     "gpu_memory_utilization": draw(st.none() | st.floats(0.1, 1.0)),
                     "flags": draw(st.dictionaries(names, st.booleans() | values, max_size=3))},
           "env": draw(st.dictionaries(st.from_regex(r"[A-Z][A-Z0-9_]{0,8}", fullmatch=True),
                                       values, max_size=3))}
    if draw(st.booleans()):
        dep["speculative"] = {"method": draw(st.sampled_from(["mtp", "ngram", "eagle3"])),
                              "num_speculative_tokens": draw(st.integers(1, 7))}
    return dep


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(deployments())
def test_deployment_round_trip(dep: dict) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "in.yaml"
        src.write_text(yaml.safe_dump(dep))
        first = reproduce([src], None, {}, Path(tmp) / "a", capture_live=False)
        written = Path(tmp) / "a" / "deployment.yaml"
        data = yaml.safe_load(written.read_text())
        Deployment.model_validate(data)  # the model accepts what was written
        load_deployment(written)  # and so does launch
        again = reproduce([written], None, {}, Path(tmp) / "b", capture_live=False)
        assert again.deployment == first.deployment
        original = Deployment.model_validate(dep).model_dump(mode="json", exclude={"lab"})
        back = {k: v for k, v in first.deployment.items() if k != "lab"}
        for key in ("model", "serve", "speculative", "env"):
            secretless = {k: v for k, v in (original[key] or {}).items()} if original[key] else original[key]
            if key == "env":
                continue  # secret-looking names become placeholders
            assert back[key] == secretless, key


def test_trap_fixtures() -> None:
    traps = load_traps()
    assert len(traps) >= 10
    for trap in traps:
        for facts in trap.fixtures.positive:
            assert trap.fires(facts) is True, (trap.id, facts)
        for facts in trap.fixtures.negative:
            assert trap.fires(facts) is not True, (trap.id, facts)


OPTIONS = st.sampled_from([
    ("-tp", st.integers(1, 8).map(str)), ("--max-num-seqs", st.integers(1, 512).map(str)),
    ("--gpu-memory-utilization", st.floats(0.05, 1.0).map(lambda f: f"{f:.2f}")),
    # a name with a leading dash is an option to vLLM's parser, which then refuses the bare
    # --served-model-name (nargs "+"); test_vllm_options.py checks that refusal
    ("--served-model-name", values.filter(lambda v: not v.startswith("-"))),
    ("--kv-cache-dtype", st.sampled_from(["fp8", "auto"])),
    ("--enforce-eager", st.none()), ("--seed", st.integers(0, 99).map(str)),
    ("--made-up-option", values), ("--compilation-config.level", st.integers(0, 3).map(str)),
    ("--speculative-config", st.integers(1, 5).map(
        lambda n: '{"method":"ngram","num_speculative_tokens":%d}' % n)),
    ("--api-key", values.map(lambda v: "sk-" + v * 3)), ("--port", st.integers(1024, 65535).map(str)),
])


@st.composite
def serve_lines(draw) -> str:
    import shlex
    words = ["vllm", "serve", "/models/" + draw(values)]
    for name, value in draw(st.lists(OPTIONS, max_size=6, unique_by=lambda o: o[0])):
        item = draw(value)
        words += [name] if item is None else [name, item]
    env = draw(st.dictionaries(st.from_regex(r"[A-Z][A-Z0-9_]{0,8}", fullmatch=True), values,
                               max_size=2))
    return "".join(f"export {k}={shlex.quote(v)}\n" for k, v in env.items()) + \
        " ".join(shlex.quote(w) for w in words) + "\n"


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(serve_lines())
def test_written_deployment_loads(line: str) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "serve.sh"
        src.write_text(line)
        reproduce([src], None, {}, Path(tmp) / "a", capture_live=False)
        written = Path(tmp) / "a" / "deployment.yaml"
        Deployment.model_validate(yaml.safe_load(written.read_text()))
        load_deployment(written)
        again = reproduce([written], None, {}, Path(tmp) / "b", capture_live=False)
        first = yaml.safe_load(written.read_text())
        assert again.deployment == {**first, "lab": again.deployment["lab"]}
