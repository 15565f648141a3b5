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
