"""Reading token facts out of completion and chat chunks, defensively."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sparktriage.bench.chunks import ChunkError, read_chunk


def test_completions_chunk_with_every_source():
    chunk = {"id": "cmpl-1", "object": "text_completion", "choices": [{
        "index": 0, "text": " a b c", "token_ids": [5, 6, 7], "finish_reason": None,
        "logprobs": {"tokens": [" a", " b", " c"], "token_logprobs": [-1, -1, -1]}}],
        "usage": {"prompt_tokens": 3, "completion_tokens": 9, "total_tokens": 12}}
    info = read_chunk(chunk)
    assert (info.ids, info.logprobs, info.usage, info.text) == ([5, 6, 7], 3, 9, " a b c")
    assert not info.final and info.error is None and info.finish_reason is None


def test_chat_role_chunk_carries_no_token():
    chunk = {"choices": [{"index": 0, "delta": {"role": "assistant", "content": ""},
                          "logprobs": None, "finish_reason": None}]}
    info = read_chunk(chunk)
    assert info.text == "" and info.ids is None and info.logprobs is None and info.usage is None


def test_chat_logprobs_content_and_reasoning():
    chunk = {"choices": [{"delta": {"reasoning": "hm", "content": "x"},
                          "logprobs": {"content": [{"token": "x"}, {"token": "y"}]},
                          "finish_reason": "length"}]}
    info = read_chunk(chunk)
    assert (info.logprobs, info.reasoning, info.text, info.finish_reason) == (2, "hm", "x", "length")
    old = read_chunk({"choices": [{"delta": {"reasoning_content": "r"}}]})  # vLLM 0.11 name
    assert old.reasoning == "r"


def test_chat_logprobs_null_content_is_no_count():
    info = read_chunk({"choices": [{"delta": {"content": ""}, "logprobs": {"content": None}}]})
    assert info.logprobs is None


def test_final_usage_chunk():
    info = read_chunk({"choices": [], "usage": {"completion_tokens": 256}})
    assert info.final and info.usage == 256


def test_error_event():
    info = read_chunk({"error": {"message": "EngineCore encountered an issue", "code": 500}})
    assert info.error == "EngineCore encountered an issue"
    assert read_chunk({"error": "boom"}).error == "boom"


@pytest.mark.parametrize("bad, match", [
    ([1, 2], "not an object"),
    ({"id": "x"}, "neither 'choices' nor 'error'"),
    ({"choices": {"0": {}}}, "not a list"),
    ({"choices": ["x"]}, "not an object"),
    ({"choices": [{"text": "a", "token_ids": [1, None]}]}, "other than integers"),
    ({"choices": [{"text": "a", "token_ids": [1, True]}]}, "other than integers"),
])
def test_malformed_chunks_raise_chunkerror(bad, match):
    with pytest.raises(ChunkError, match=match):
        read_chunk(bad)


def test_odd_but_harmless_values_are_ignored():
    info = read_chunk({"choices": [{"text": None, "finish_reason": 3, "token_ids": "1,2"}],
                       "usage": {"completion_tokens": -1}})
    assert info.text == "" and info.finish_reason is None and info.ids is None and info.usage is None


_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=5),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(
        st.sampled_from(["choices", "usage", "error", "text", "delta", "token_ids", "logprobs",
                         "tokens", "content", "completion_tokens", "finish_reason"]), children,
        max_size=4),
    max_leaves=20,
)


@settings(max_examples=400, deadline=None)
@given(_json)
def test_any_json_gives_chunkinfo_or_chunkerror(doc):
    doc = json.loads(json.dumps(doc))
    try:
        info = read_chunk(doc)
    except ChunkError:
        return
    assert info.ids is None or all(isinstance(i, int) for i in info.ids)
    assert isinstance(info.text, str)
