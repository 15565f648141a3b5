"""Golden tests on logs built from the format strings of vLLM 0.11-0.33 (vllm_synth.py).

Each profile writes the same startup with that version's prefixes, colours and wording; the
parsed document must give back the schedule and numbers the generator put in.
"""

from __future__ import annotations

import datetime as dt

import pytest

from sparktriage.logs.document import analyze
from sparktriage.logs.parser import parse_lines
from vllm_synth import PROFILES, render

UTC = dt.timezone.utc


def document(name: str) -> tuple[dict, object, list]:
    lines, truth = render(name)
    events = parse_lines(lines, tz=UTC, year=2026, node="head")
    return analyze(events, tz=UTC), truth, events


@pytest.mark.parametrize("name", sorted(PROFILES))
def test_profile_gives_back_its_schedule(name):
    doc, truth, events = document(name)
    assert doc["version"] == truth.version
    assert [(p["name"], p["duration_s"]) for p in doc["phases"]] == truth.phases
    assert doc["phases"][0]["start"] == dt.datetime.fromtimestamp(truth.start, UTC).isoformat(
        timespec="milliseconds")
    assert doc["startup"]["complete"] and not doc["startup"]["failed"]
    assert doc["reported"] == truth.reported
    assert doc["kernels"] == truth.kernels
    assert doc["kv_cache"]["tokens"] == truth.kv_tokens
    assert doc["kv_cache"]["max_concurrency"] == 9.42
    gen = doc["throughput"]["generation"]
    assert gen["windows"] == len(truth.stats_generation)
    assert gen["peak"] == max(truth.stats_generation)
    assert gen["mean"] == pytest.approx(sum(truth.stats_generation) / len(truth.stats_generation), abs=1e-3)
    active = [g for g in truth.stats_generation if g > 0]
    assert gen["mean_active"] == pytest.approx(sum(active) / len(active), abs=1e-3)
    assert doc["throughput"]["interval_s"] == 10.0
    assert doc["throughput"]["hidden_idle_windows"] == 3  # the 40 s stretch hid three windows
    assert not [g for g in doc["gaps"] if g["significant"]]
    assert {g["name"] for g in doc["gaps"]} == {"loading_weights", "model_loading", "torch_compile",
                                                "graph_capture", "init_engine"}
    assert doc["config"]["tensor_parallel_size"] == 2
    assert doc["config"]["quantization"] == "modelopt_fp4"
    assert doc["args"]["api_key"] == "***"  # secrets never reach the document
    assert "sk-secret" not in repr(doc)
    assert doc["errors"] == []
    if truth.spec:
        spec = doc["spec_decode"]
        assert (spec["accepted"], spec["drafted"]) == (truth.spec["accepted"], truth.spec["drafted"])
        assert spec["mean_acceptance_length"] == pytest.approx(truth.spec["mal"], abs=2e-3)
        assert doc["config"]["speculative"] == {"method": "ngram", "num_speculative_tokens": 3,
                                                "model": None}
    else:
        assert doc["spec_decode"] is None


def test_011_prefix_is_parsed_through_its_colour_codes():
    _, _, events = document("0.11-coloured")
    procs = {e.process for e in events if e.process}
    assert procs == {"APIServer", "EngineCore_DP0", "Worker_TP0", "Worker_TP1"}
    assert not any("\x1b" in e.message for e in events)


@pytest.mark.parametrize("name,relay", [("0.27-ray-multinode", "RayWorkerWrapper pid=301, ip=10.0.16.95"),
                                        ("0.33-v2-runner", "RayWorkerProc pid=301, ip=10.0.16.95")])
def test_ray_relayed_lines_keep_relay_and_inner_process(name, relay):
    doc, truth, events = document(name)
    relayed = [e for e in events if e.relay]
    assert len(relayed) == truth.relayed > 0
    assert {e.relay for e in relayed} == {relay}
    if name.startswith("0.33"):
        assert {e.process for e in relayed} == {"Worker_TP1"}
    detail = doc["reported_detail"]["loading_weights_s"]
    assert sorted(d["value"] for d in detail) == [118.0, 119.5]


def test_v2_runner_profiling_capture_stays_in_kv_profiling():
    doc, _, _ = document("0.33-v2-runner")
    captures = doc["reported_detail"]["graph_capture_s"]
    assert [c["value"] for c in captures] == [1.0, 1.0, 11.0, 11.0]  # twice, on both ranks
    assert doc["reported"]["graph_capture_s"] == 11.0  # the real capture, not the profiling one
    assert "Starting to load model" not in repr(doc["phases"])
    assert doc["phases"][3]["anchor"] == "Loading model from scratch..."


def test_020_prefetch_and_filesystem_lines():
    doc, _, _ = document("0.20-prefetch")
    assert doc["storage"] == {"filesystem": "NFS4", "checkpoint_gib": 554.12, "available_ram_gib": 119.5,
                              "prefetch": "finished", "prefetch_started": doc["storage"]["prefetch_started"],
                              "prefetch_pct": 50, "prefetch_files": "30/60", "prefetch_s": 96.0,
                              "prefetch_finished": doc["storage"]["prefetch_finished"]}
    shards = doc["shards"]
    assert len(shards) == 1 and shards[0]["n"] == 60 and shards[0]["complete"]
    assert shards[0]["updates"] == 4  # 0%, 50%, and the duplicated 100% line


def test_enum_kernel_rejections_are_kept():
    doc, _, _ = document("0.30-kv-one-line")
    assert doc["kernel_rejections"] == [{"what": "NvFp4 MoE", "backend": "FLASHINFER_TRTLLM",
                                         "why": "kernel does not support current device"}]
    assert "FLASHINFER_TRTLLM" in doc["kernel_detail"][0]["candidates"]
