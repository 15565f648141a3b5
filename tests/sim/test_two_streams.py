"""Two streams at once on the simulator (docs/simulator.md "Two streams at once"): a step of
both costs the pair's union and width (sim/speculation.py), and the server takes each step at its
pair gap while another stream is open and at its own gap otherwise (sim/server.py)."""

from __future__ import annotations

import asyncio
import statistics

import httpx
import pytest

from sparktriage.bench.client import ClientSettings, make_stream_client, stream_request
from sparktriage.roofline import experts
from sparktriage.sim.speculation import StepCost

pytestmark = [pytest.mark.slow]


def test_a_step_of_two_streams_costs_the_union_of_both_routings_and_the_batch_width():
    step = StepCost(routed_share=0.4, experts=384, experts_per_token=8, correlation=0.5)
    for length in range(4):  # one stream: as before
        width = length + 1
        assert step.cost(length) == pytest.approx(1 + 0.4 * (experts.ratio(384, 8, width, 0.5) - 1))
        assert step.cost(length, 2) == pytest.approx(
            1 + 0.4 * (experts.ratio(384, 8, width, 0.5, 2) - 1))
    assert step.cost(0) == 1.0 and step.cost(0, 2) == pytest.approx(1 + 0.4 * (1 - 8 / 384))
    jumped = StepCost(per_token=0.1, jump={"depth": 3, "factor": 1.5}, factors={1: 1.2})
    assert jumped.cost(1) == pytest.approx(1.1 * 1.2)  # width 2: the factor of drafts of 1
    assert jumped.cost(2) == pytest.approx(1.2) and jumped.cost(3) == pytest.approx(1.3 * 1.5)
    assert jumped.cost(0, 2) == pytest.approx(1.1 * 1.2)  # two plain steps: width 2
    assert jumped.cost(1, 2) == pytest.approx(1.3 * 1.5)  # width 4: past the jump


def _gaps_from(entry: dict) -> float:
    return next(e["t"] for e in entry["events"] if e["kind"] == "tokens")


def _gaps(entry: dict, low: float = float("-inf"), high: float = float("inf")) -> list[float]:
    times = [e["t"] for e in entry["events"] if e["kind"] == "tokens"]
    return [b - a for a, b in zip(times, times[1:]) if a >= low and b <= high]


def test_the_server_takes_steps_at_the_pair_gap_while_two_streams_are_open(start_sim):
    scenario = {"ttft_s": 0.005, "gap_s": [0.010], "pair_gap_s": [0.018], "gap_per": "chunk",
                "tokens_per_chunk": 1}
    url = start_sim({"scenarios": {"m": scenario}}).base_url
    settings = ClientSettings(base_url=url)
    body = {"model": "m", "prompt": "x", "max_tokens": 60, "stream": True, "ignore_eos": True}

    async def one() -> dict:
        async with make_stream_client(settings) as client:
            return await stream_request(client, settings, "/v1/completions", body)

    async def go() -> None:
        await asyncio.gather(one(), one())
        await one()

    asyncio.run(go())
    trace = httpx.get(url + "/sim/trace", timeout=30, trust_env=False).json()["requests"]
    a, b, alone = sorted(trace, key=lambda e: e["n"])[-3:]
    low = max(_gaps_from(a), _gaps_from(b))
    high = min(a["t_end"], b["t_end"])
    both = _gaps(a, low, high) + _gaps(b, low, high)
    assert len(both) >= 80
    assert statistics.median(both) == pytest.approx(0.018, abs=0.002)
    assert statistics.median(_gaps(alone)) == pytest.approx(0.010, abs=0.002)


def test_routing_reuse_and_a_batched_step_over_every_sequence_s_own_draft():
    reuse = StepCost(routed_share=0.4, experts=384, experts_per_token=8, routing_reuse=0.3)
    same = StepCost(routed_share=0.4, experts=384, experts_per_token=8, correlation=0.3)
    for length in range(5):
        assert reuse.cost(length) == pytest.approx(same.cost(length))
        assert reuse.cost(length, 2) == pytest.approx(
            1 + 0.4 * (experts.ratio(384, 8, length + 1, 0.3, 2) - 1))
    # a step of a draft of 3 beside a plain step: 4 + 1 tokens, the first sequence's 3 further
    # tokens each bringing 70% fresh experts, the second sequence routing on its own
    unit = experts.union(384, 8, 1.0)
    mixed = 1 + 0.4 * (experts.union(384, 8, (1 + 3 * 0.7) + 1) / unit - 1)
    assert reuse.batch_cost((3, 0)) == pytest.approx(mixed)
    assert reuse.cost(3) < reuse.batch_cost((3, 0)) < reuse.cost(3, 2)
    dense = StepCost(per_token=0.05, routed_share=0.4, experts=384, experts_per_token=8,
                     routing_reuse=0.3, jump={"depth": 6, "factor": 1.5})
    assert dense.batch_cost((3, 2)) == pytest.approx(
        (1 + 0.05 * 6 + 0.4 * (experts.union(384, 8, 3.1 + 2.4) / unit - 1)) * 1.5)
    with pytest.raises(ValueError, match="routing_reuse or correlation"):
        StepCost(routed_share=0.4, experts=384, experts_per_token=8, correlation=0.2,
                 routing_reuse=0.3)


def test_a_batched_engine_prices_each_step_over_every_open_stream(start_sim):
    step = StepCost(routed_share=0.5, experts=384, experts_per_token=8, routing_reuse=0.3,
                    batched=True)
    base = 0.008
    scenario = {"ttft_s": 0.005, "gap_s": [base * step.cost(2)], "gap_per": "chunk",
                "tokens_per_chunk": 1, "drafts": [2], "batch_step": step.model_dump(),
                "batch_base_s": base}
    url = start_sim({"scenarios": {"m": scenario}}).base_url
    settings = ClientSettings(base_url=url)
    body = {"model": "m", "prompt": "x", "max_tokens": 60, "stream": True, "ignore_eos": True}

    async def one() -> dict:
        async with make_stream_client(settings) as client:
            return await stream_request(client, settings, "/v1/completions", body)

    async def go() -> None:
        await asyncio.gather(one(), one(), one())
        await one()

    asyncio.run(go())
    trace = httpx.get(url + "/sim/trace", timeout=30, trust_env=False).json()["requests"]
    *three, alone = sorted(trace, key=lambda e: e["n"])[-4:]
    low = max(_gaps_from(e) for e in three)
    high = min(e["t_end"] for e in three)
    together = [g for e in three for g in _gaps(e, low, high)]
    assert len(together) >= 60
    # three sequences verifying 3 tokens each: the union over all nine, not 3x one's
    assert statistics.median(together) == pytest.approx(base * step.batch_cost((2, 2, 2)),
                                                        abs=0.002)
    assert step.batch_cost((2, 2, 2)) < 3 * step.cost(2)
    assert statistics.median(_gaps(alone)) == pytest.approx(base * step.cost(2), abs=0.002)
