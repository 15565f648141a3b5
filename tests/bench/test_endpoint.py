"""Discovery and request-shape negotiation against simulated servers."""

from __future__ import annotations

import asyncio
import socket

import pytest

from sparktriage.bench.client import ClientSettings, make_stream_client
from sparktriage.bench.endpoint import choose_model, discover, negotiate
from sparktriage.bench.workload import load_workload
from sparktriage.errors import EndpointError, UsageError


def run(settings: ClientSettings, step):
    async def go():
        async with make_stream_client(settings) as client:
            return await step(client)
    return asyncio.run(go())


def test_discover_lists_models_and_version(sim):
    server = run(ClientSettings(sim.base_url + "/v1/"), lambda c: discover(c, ClientSettings(sim.base_url)))
    assert server.models == ("sim", "strict") and server.version == "sparktriage-sim"
    assert server.base_url == sim.base_url and server.max_model_len == 1_000_000
    assert choose_model(server, None) == "sim" and choose_model(server, "strict") == "strict"
    with pytest.raises(UsageError, match=r"model 'nope' is not served by .* \(it lists: sim, strict\)"):
        choose_model(server, "nope")


@pytest.mark.parametrize("mode, message", [
    ("404", r"does not look like an OpenAI-compatible server: GET /v1/models answered HTTP 404: Not Found"),
    ("html", r"does not look like an OpenAI-compatible server: GET /v1/models returned an HTML page"),
])
def test_non_openai_servers_are_refused(start_sim, mode, message):
    other = start_sim({"models_endpoint": mode})
    settings = ClientSettings(other.base_url)
    with pytest.raises(EndpointError, match=message) as info:
        run(settings, lambda c: discover(c, settings))
    assert info.value.exit_code == 3


def test_api_key(start_sim):
    keyed = start_sim({"api_key": "s3cret"})
    anonymous = ClientSettings(keyed.base_url)
    with pytest.raises(EndpointError, match="HTTP 401") as info:
        run(anonymous, lambda c: discover(c, anonymous))
    assert "--api-key" in info.value.hint
    good = ClientSettings(keyed.base_url, api_key="s3cret")
    assert run(good, lambda c: discover(c, good)).models == ("sim",)


def test_unreachable_endpoint():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        settings = ClientSettings(f"http://127.0.0.1:{s.getsockname()[1]}", connect_timeout_s=2)
        with pytest.raises(EndpointError, match="cannot connect to .*: connection refused") as info:
            run(settings, lambda c: discover(c, settings))
    assert info.value.exit_code == 3 and "refuses connections until startup completes" in info.value.hint


def test_negotiation_takes_every_source_and_keeps_its_probes(sim):
    settings = ClientSettings(sim.base_url)
    kept = []
    caps = run(settings, lambda c: negotiate(c, settings, load_workload("code"), "sim", kept.append))
    assert caps.accepted == "token_ids+usage+logprobs" and caps.exact
    assert caps.sources == ("token_ids", "logprobs", "continuous_usage", "final_usage")
    assert caps.extras["return_token_ids"] is True and "logprobs" not in caps.extras  # ids suffice
    assert caps.ignore_eos_ok is True and caps.notes == []
    assert len(kept) == 1 and kept[0]["purpose"] == "negotiate" and kept[0]["status"] == "ok"


@pytest.mark.parametrize("workload", ["code", "prose"])
def test_strict_server_gets_a_plainer_shape_without_ignore_eos(sim, workload):
    settings = ClientSettings(sim.base_url)
    kept = []
    caps = run(settings, lambda c: negotiate(c, settings, load_workload(workload), "strict", kept.append))
    assert caps.dropped == ("ignore_eos",)
    assert caps.sources == ("logprobs", "final_usage")
    assert caps.accepted == "final-usage+logprobs, without ignore_eos"
    assert any("refuses ignore_eos" in n for n in caps.notes)
    assert all(r["http_status"] == 400 for r in kept[:-1]) and kept[-1]["http_status"] == 200
    body = caps.body(load_workload(workload), "strict")
    assert "ignore_eos" not in body and "return_token_ids" not in body and body["logprobs"]


def test_model_unknown_to_the_completion_api_is_a_usage_error(sim):
    settings = ClientSettings(sim.base_url)
    with pytest.raises(UsageError, match=r"model 'ghost' is not served at .*/v1/completions .*does not exist") as info:
        run(settings, lambda c: negotiate(c, settings, load_workload("code"), "ghost"))
    assert info.value.exit_code == 2


def test_missing_completion_endpoint_is_unreachable_not_usage(start_sim):
    other = start_sim({"completions_endpoint": "404"})
    settings = ClientSettings(other.base_url)
    with pytest.raises(EndpointError, match=r"/v1/completions is not served \(HTTP 404: Not Found\)"):
        run(settings, lambda c: negotiate(c, settings, load_workload("code"), "sim"))


def test_malformed_stream_during_negotiation_is_not_openai(sim):
    settings = ClientSettings(sim.base_url)
    workload = load_workload("code").model_copy(update={"extra_body": {"sim": {"faults": {"malformed_at": 1}}}})
    with pytest.raises(EndpointError, match="could not stream a short test request: malformed SSE"):
        run(settings, lambda c: negotiate(c, settings, workload, "sim"))


def test_discover_also_takes_an_httpx_client_and_a_url(sim, start_sim):
    from sparktriage.bench.client import make_http_client

    async def go(url):
        async with make_http_client(ClientSettings(url)) as client:
            return await discover(client, url)

    assert asyncio.run(go(sim.base_url)).models == ("sim", "strict")
    other = start_sim({"models_endpoint": "html"})
    with pytest.raises(EndpointError, match="returned an HTML page"):
        asyncio.run(go(other.base_url))
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        with pytest.raises(EndpointError, match="connection refused"):
            asyncio.run(go(f"http://127.0.0.1:{s.getsockname()[1]}"))
