"""Simulator configuration: validation, overrides and sequences."""

from __future__ import annotations

import pytest

from sparktriage.errors import ConfigError
from sparktriage.sim.scenario import Scenario, SimConfig, load_config, parse_config


def test_defaults():
    config = SimConfig()
    assert list(config.scenarios) == ["sim"] and config.vocab_size == 2048
    s = config.scenarios["sim"]
    assert s.pattern == (1,) and s.gaps == (0.005,) and s.sources.token_ids


def test_overrides_merge_nested_settings():
    base = Scenario(faults={"error_at": 5, "reset_at": 9}, sources={"logprobs": False})
    changed = base.with_overrides({"faults": {"reset_at": None}, "gap_s": [0.1, 0.2]})
    assert changed.faults.error_at == 5 and changed.faults.reset_at is None
    assert not changed.sources.logprobs and changed.gaps == (0.1, 0.2)


def test_sequence_cycles_per_request():
    s = Scenario(tokens_per_chunk=2, sequence=({"tokens_per_chunk": 1}, {}, {"ttft_s": 1.0}))
    assert [s.for_request(n).pattern for n in range(4)] == [(1,), (2,), (2,), (1,)]
    assert s.for_request(2).ttft_s == 1.0 and s.for_request(2).sequence == ()


@pytest.mark.parametrize("text, message", [
    ("scenarios:\n  a:\n    gap_s: -1\n", r"x.yaml:3: simulator configuration field 'scenarios.a.gap_s'"),
    ("scenarios:\n  a:\n    tokens_per_chunk: [1, 0]\n", r"x.yaml:3: .*tokens per chunk must be 1..4096"),
    ("scenarios:\n  a:\n    sequence:\n      - {bogus: 1}\n", r"x.yaml:3: .*sequence\[0\]\.bogus: unknown key"),  # plain words (validation_words.py)
    ("api_key: k\nmodels_endpoint: maybe\n", r"x.yaml:2: .*'models_endpoint'"),
    ("schema_version: 2\n", r"x.yaml:1: .*schema_version 2 is not supported"),
    ("scenarios: {}\n", r"at least one scenario"),
    ("scenarios:\n  a: {ttft_s: 0.1}\n  b: [1\n", r"x.yaml:4: not valid YAML"),
])
def test_errors_name_the_line(text, message):
    with pytest.raises(ConfigError, match=message):
        parse_config(text, "x.yaml")


def test_load_config_json_and_missing(tmp_path):
    path = tmp_path / "c.json"
    path.write_text('{"scenarios": {"m": {"tokens_per_chunk": [1, 4]}}}')
    assert load_config(path).scenarios["m"].pattern == (1, 4)
    with pytest.raises(Exception, match="no such file"):
        load_config(tmp_path / "absent.yaml")
