"""Rendered chunks are valid vLLM-shaped JSON, whatever the model name."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from sparktriage.bench.chunks import read_chunk
from sparktriage.sim.plan import plan_stream, read_request
from sparktriage.sim.scenario import Scenario, SimConfig
from sparktriage.sim.encode import Renderer, token_id


def render_all(api: str, model: str, scenario: Scenario, **body) -> list[str]:
    doc = {"model": model, "stream": True, "max_tokens": 7, "return_token_ids": True, "logprobs": 1,
           "stream_options": {"include_usage": True, "continuous_usage_stats": True}, **body}
    if api == "chat":
        doc["messages"], doc["logprobs"] = [{"role": "user", "content": "hi"}], True
    else:
        doc["prompt"] = "hi"
    spec = read_request(api, doc, strict=False)
    plan = plan_stream(scenario, spec)
    renderer = Renderer(SimConfig(), scenario, spec, plan, "cmpl-sim-1", 1700000000)
    out, sent = [], 0
    for step in plan.steps:
        data = renderer.render(step, sent)
        sent += step.count
        if data:
            assert data.startswith(b"data: ") and data.endswith(b"\n\n")
            out.append(data[6:-2].decode())
    return out


@settings(max_examples=100, deadline=None)
@given(st.text(min_size=1, max_size=30), st.sampled_from(["completions", "chat"]))
def test_chunks_parse_and_count_for_any_model_name(model, api):
    events = render_all(api, model, Scenario(tokens_per_chunk=(1, 3)))
    assert events[-1] == "[DONE]"
    docs = [json.loads(e) for e in events[:-1]]
    assert all(d["model"] == model and d["id"] == "cmpl-sim-1" for d in docs)
    infos = [read_chunk(d) for d in docs]
    content = [i for i in infos if not i.final]
    assert sum(len(i.ids or []) for i in content) == 7
    assert sum(i.logprobs or 0 for i in content) == 7
    assert [i.usage for i in content if i.ids][-1] == 7
    assert infos[-1].final and infos[-1].usage == 7


def test_token_ids_are_valid_for_the_tiny_vocabulary():
    config, scenario = SimConfig(), Scenario(seed=3)
    ids = [token_id(config, scenario, j) for j in range(5000)]
    assert min(ids) >= 3 and max(ids) < 2048 and len(set(ids[:2045])) > 1000


def test_held_back_text_is_released_later():
    events = render_all("completions", "m", Scenario(empty_text_every=2))
    texts = [json.loads(e)["choices"][0]["text"] for e in events[:-1] if json.loads(e)["choices"]]
    assert texts[1] == "" and texts[2].count(" t") == 2  # chunk 2 held back, released with 3
    assert "".join(texts).count(" t") == 7


def test_error_and_malformed_events():
    events = render_all("completions", "m", Scenario(faults={"error_at": 2}))
    assert json.loads(events[-2])["error"]["message"] == "simulated engine failure after 2 tokens"
    events = render_all("completions", "m", Scenario(faults={"malformed_at": 1}))
    bad = [e for e in events if e.startswith('{"id": "truncated"')]
    assert len(bad) == 1
