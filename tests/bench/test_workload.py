"""Workloads as data: the shipped ones, user files, and errors with file:line."""

from __future__ import annotations

import pytest

from sparktriage.bench.workload import builtin_names, load_workload, load_workloads
from sparktriage.errors import ConfigError, InputError


def test_builtins_follow_the_protocol_defaults():
    assert builtin_names() == ["code", "prose"]
    code, prose = load_workloads(["code,prose"])
    for w in (code, prose):
        assert (w.max_tokens, w.temperature, w.ignore_eos, w.requests, w.warmup) == (256, 0.0, True, 15, 1)
    assert code.api == "completions" and "def moving_average" in code.prompt
    assert prose.api == "chat" and prose.messages[0].role == "system"


def test_request_bodies():
    code = load_workload("code").body("m", {"return_token_ids": True})
    assert code == {"model": "m", "stream": True, "temperature": 0.0, "prompt": code["prompt"],
                    "max_tokens": 256, "ignore_eos": True, "return_token_ids": True}
    prose = load_workload("prose").body("m", {})
    assert prose["max_completion_tokens"] == prose["max_tokens"] == 256
    assert [m["role"] for m in prose["messages"]] == ["system", "user"]


def test_user_file_with_extra_body(tmp_path):
    path = tmp_path / "mine.yaml"
    path.write_text("name: mine\napi: chat\nprompt: hi\nmax_tokens: 8\nextra_body:\n  top_k: 1\n")
    w = load_workload(str(path))
    body = w.body("m", {"stream_options": {"include_usage": True}})
    assert body["messages"] == [{"role": "user", "content": "hi"}] and body["top_k"] == 1


@pytest.mark.parametrize("text, message", [
    ("name: x\napi: completions\nprompt: hi\nmax_tokens: 0\n",
     r"mine.yaml:4: workload field 'max_tokens': must be at least 1$"),
    ("name: x\nprompt: hi\nbogus: 1\ntemperature: 9\n",
     r"mine.yaml:4: workload field 'temperature': must be at most 2 \(and 1 more problem\)$"),
    ("name: x\nprompt: [unclosed\n", r"mine.yaml:3: not valid YAML"),
    ("- a list\n", r"mine.yaml:1: workload must be a mapping"),
    ("name: x\napi: completions\n", r"mine.yaml:1: workload field '\(top\)': a completions workload needs 'prompt'"),
])
def test_bad_files_name_file_and_line(tmp_path, text, message):
    path = tmp_path / "mine.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError, match=message) as info:
        load_workload(str(path))
    assert info.value.exit_code == 2 and "\n" not in info.value.one_line()


def test_unknown_and_duplicate_names(tmp_path):
    with pytest.raises(InputError, match="unknown workload 'nope': not a built-in \\(code, prose\\)"):
        load_workload("nope")
    with pytest.raises(InputError, match="given twice"):
        load_workloads(["code", "code"])
    with pytest.raises(InputError, match="is a directory|cannot read"):
        load_workload(str(tmp_path))
