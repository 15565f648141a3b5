"""Stall detection on timelines: silence, spawn allowance, hang, crawl, asymmetry, failure."""

from __future__ import annotations

from pathlib import Path

from sparktriage.documents.stalls import StallsDocument
from sparktriage.stalls import fixtures as fixture_layer
from sparktriage.stalls.analyze import analyze
from sparktriage.stalls.detect import DetectParams
from sparktriage.store.typed import check

LOGS = Path(__file__).resolve().parents[1] / "fixtures" / "logs"
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "stalls"


def _spec(log: list, **node) -> dict:
    return {"nodes": {"n1": {"log": log, **node}}}


HEAD = [{"segment": "api_start", "at": 0}, {"segment": "worker_single", "at": 40}]


def test_healthy_start_has_no_period(classify):
    doc, _ = classify(_spec(HEAD + [{"segment": "load_begin", "at": 41},
                                    [56, "Loading safetensors checkpoint shards: 100% Completed | 20/20 [00:15<00:00,  0.75s/it]"],
                                    {"segment": "load_end", "at": 56},
                                    {"segment": "compile_warm", "at": 58},
                                    {"segment": "kv_and_graphs", "at": 64},
                                    {"segment": "ready", "at": 74}]))
    assert doc["findings"] == [] and doc["summary"]["healthy"] is True
    assert doc["nodes"]["n1"]["outcome"] == "ready"


def test_silence_threshold_and_phase(classify):
    # a warm compile cache (the log says so): 30 s of silence in compile is a stall
    log = HEAD + [{"segment": "load_begin", "at": 41},
                  [56, "Loading safetensors checkpoint shards: 100% Completed | 20/20 [00:15<00:00,  0.75s/it]"],
                  {"segment": "load_end", "at": 56},
                  [57, "Worker", "Directly load the compiled graph(s) for compile range (1, 2048) from the cache, took 0.50 s"],
                  [58, "Worker", "Dynamo bytecode transform time: 3.01 s"],
                  [88, "Worker", "torch.compile took 30.00 s in total"],
                  {"segment": "ready", "at": 90}]
    doc, _ = classify(_spec(log))
    (stall,) = doc["findings"]
    assert stall["kind"] == "stall" and stall["phase"] == "compile"
    assert stall["duration_s"] == 30.0 and stall["how"] == ["silence"]
    doc, _ = classify(_spec(log), params=DetectParams(silence_s=31))
    assert doc["findings"] == []


def test_silent_cold_compile_is_an_observation_not_a_stall(classify):
    """No cache hit in the log: the compile is cold and may stay silent for compile_cold_s."""
    log = HEAD + [{"segment": "load_begin", "at": 41}, {"segment": "load_end", "at": 56},
                  [58, "Worker", "Dynamo bytecode transform time: 3.01 s"],
                  [158, "Worker", "torch.compile took 100.00 s in total"],
                  {"segment": "ready", "at": 160}]
    doc, _ = classify(_spec(log))
    assert doc["findings"] == []
    (seen,) = doc["observations"]
    assert seen["phase"] == "compile" and seen["duration_s"] == 100.0
    assert seen["text"].startswith("compile took 100 s: cold cache, expected on a first boot")
    assert seen["cause"] == "compile-jit"  # the rule that names it past its budget
    doc, _ = classify(_spec(log), params=DetectParams(compile_cold_s=60))
    assert [(f["phase"], f["duration_s"]) for f in doc["findings"]] == [("compile", 100.0)]
    assert doc["findings"][0]["verdict"]["id"] == "compile-jit"


def test_compile_cache_found_but_not_loaded_is_named(classify):
    """vLLM found its AOT cache but could not load it and compiled again (the line vLLM 0.32's CPU
    build writes on every warm start): cold, and persisting the cache is not the advice."""
    failure = ("[backbone] Compiling model again due to a load failure from /cache/torch_compile_"
               "cache/torch_aot_compile/92b6c4/rank_0_0/model, reason: 'function' object has no "
               "attribute 'finalize_loading'")
    log = HEAD + [{"segment": "load_begin", "at": 41}, {"segment": "load_end", "at": 56},
                  [57, "Worker", "Warming up model for the compilation..."],
                  [58, "Worker", failure],
                  [158, "Worker", "torch.compile took 100.00 s in total"],
                  {"segment": "ready", "at": 160}]
    doc, _ = classify(_spec(log))
    assert doc["findings"] == []
    (seen,) = doc["observations"]
    assert seen["phase"] == "compile" and seen["duration_s"] == 100.0
    assert seen["text"] == (
        "compile took 100 s: vLLM found its compile cache but could not load it ('function' "
        "object has no attribute 'finalize_loading') and compiled again; persisting "
        "VLLM_CACHE_ROOT does not help until the cache loads (it must come from the same vLLM "
        "and torch build; VLLM_FORCE_AOT_LOAD=1 makes the failure an error)")


def test_recorded_cold_compile_names_its_rule(rules):
    """A real vLLM 0.32 CPU start (tests/fixtures/logs): its 41 s cold compile is an
    observation, not a stall, and says which rule it belongs to."""
    doc, _ = analyze(LOGS / "vllm-cpu-startup.log", rules)
    assert doc["findings"] == []
    (seen,) = doc["observations"]
    assert (seen["phase"], seen["duration_s"], seen["cause"]) == ("compile", 41.0, "compile-jit")
    assert seen["cause"] in {rule.rule.id for rule in rules.ruleset.rules.values()}
    check(StallsDocument, doc)


def test_observations_tied_to_no_rule_say_none(classify, rules, library, tmp_path):
    """A rendezvous wait for a late peer (rendezvous-interface's false positive, not its
    cause) and a silence within a phase's budget name no rule."""
    tp2 = "world_size=2 rank={rank} local_rank=0 distributed_init_method=tcp://10.0.0.1:29501 backend=gloo"
    ready = [[150, "Worker", "Model loading took 1.0 GiB memory and 2.0 seconds"],
             {"segment": "ready", "at": 160}]
    doc, _ = classify({"nodes": {
        "n1": {"log": [{"segment": "api_start", "at": 0}, [45, "Worker", tp2.format(rank=0)],
                       [100, "Worker", "rank 0 in world size 2 is assigned as TP rank 0"], *ready]},
        "n2": {"log": [{"segment": "api_start", "at": 0}, [95, "Worker", tp2.format(rank=1)],
                       [100, "Worker", "rank 1 in world size 2 is assigned as TP rank 1"], *ready]}}})
    waits = [o for o in doc["observations"] if "at the rendezvous" in o["text"]]
    assert [(o["node"], o["cause"]) for o in waits] == [("n1", None)]
    # the fixture of a throttled read: the silences inside the read are within its budget
    # (the checkpoint size); the crawl is the finding, and it carries the cause
    case = FIXTURES / "cold-storage" / "positive" / "throttled-read.yaml"
    doc, _ = analyze(fixture_layer.build(case, tmp_path / "case", library), rules)
    assert doc["observations"] and all("within the" in o["text"] and o["cause"] is None
                                       for o in doc["observations"])
    assert [f["verdict"]["id"] for f in doc["findings"]] == ["cold-storage"]


def test_compute_budgets_scale_with_load_but_waits_do_not(classify):
    """45 s of silence after the weights (post_load): a stall on an idle machine, expected
    at a load of 3 per core; a hang at the rendezvous is not excused by load."""
    log = HEAD + [{"segment": "load_begin", "at": 41}, {"segment": "load_end", "at": 56},
                  [57, "Worker", "Directly load the compiled graph(s) for compile range (1, 2048) from the cache, took 0.50 s"],
                  [102, "Worker", "torch.compile took 1.00 s in total"],
                  {"segment": "ready", "at": 104}]
    doc, _ = classify(_spec(log))
    assert [f["duration_s"] for f in doc["findings"]] == [45.0]
    doc, _ = classify(_spec(log, samples={"host": [{"from": 0, "to": 110,
                                                     "profile": "host_calm"}]}))
    assert [f["duration_s"] for f in doc["findings"]] == [45.0]  # calm: no load figure
    loaded = {"host": [{"from": 0, "to": 110, "profile": "host_calm",
                        "record": {"load1": 6.0, "ncpu": 2}}]}
    doc, _ = classify(_spec(log, samples=loaded))
    assert doc["findings"] == []
    (seen,) = doc["observations"]
    assert "load 3.0 per core" in seen["text"] and seen["cause"] is None
    hang = HEAD + [[45, "Worker", "world_size=2 rank=1 local_rank=0 distributed_init_method=tcp://10.0.0.1:29501 backend=gloo"]]
    doc, _ = classify(_spec(hang, samples={"host": [{"from": 0, "to": 200, "profile": "host_calm",
                                                      "record": {"load1": 6.0, "ncpu": 2}}]}))
    assert [(f["how"], f["phase"]) for f in doc["findings"]] == [(["hang"], "distributed_init")]


def test_new_process_gets_the_import_allowance(classify):
    # 70 s before the worker's first line: importing torch in a new process, not a stall
    log = [{"segment": "api_start", "at": 0}, {"segment": "worker_single", "at": 94},
           {"segment": "ready", "at": 96}]
    doc, _ = classify(_spec(log))
    assert doc["findings"] == []
    doc, _ = classify(_spec(log), params=DetectParams(spawn_s=60))
    assert [f["how"] for f in doc["findings"]] == [["silence"]]


def test_waiting_lines_are_not_progress_and_hang_is_open_ended(classify):
    log = HEAD + [[40 + 60 * i, "Worker", "No available shared memory broadcast block found in 60 seconds. This typically happens when some processes are hanging."]
                  for i in range(1, 6)]
    doc, _ = classify(_spec(log, samples={"host": [{"from": 0, "to": 400, "profile": "host_calm"}]}))
    (stall,) = doc["findings"]
    # found twice: no progress after the last line, and the 5 x 60 s the lines say they waited
    assert stall["how"] == ["hang", "wait"] and stall["open_ended"] is True
    assert stall["end"] - stall["start"] == 400 - 40  # until the last sample, not the last line


def test_lines_ray_forwards_from_its_own_processes_are_not_progress(classify):
    """A vLLM driver under Ray prints its raylet's and GCS's complaints (colour codes and all)
    while it waits for a placement group; they must not hide the wait (a fresh-clone suite run of
    stop 27: the last one came 29 s before the stop and the head's hang went unseen)."""
    exporter = "main.cc:1100: Failed to establish connection to the metrics exporter agent."
    log = HEAD + [[41, "EngineCore", "No current placement group found. Creating a new placement group."],
                  [45, f"\x1b[36m(pid=gcs_server)\x1b[0m [2026-12-04 09:57:50,113 E 1 1] (gcs_server) {exporter}"],
                  [50, f"\x1b[33m(raylet)\x1b[0m [2026-12-04 09:57:54,415 E 2 2] (raylet) {exporter}"],
                  [80, f"(raylet, ip=10.250.0.2) [2026-12-04 09:57:59,506 E 3 3] (raylet) {exporter}"],
                  [61, "EngineCore", "Waiting for creating a placement group of specs for 20 seconds. "
                                     "specs=[{'GPU': 1.0}, {'GPU': 1.0}]."]]
    log.sort(key=lambda entry: entry["at"] if isinstance(entry, dict) else entry[0])
    doc, _ = classify(_spec(log, samples={"host": [{"from": 0, "to": 100, "profile": "host_calm"}]}))
    (stall,) = doc["findings"]
    assert stall["how"] == ["hang"] and stall["phase"] == "distributed_init"
    assert stall["end"] - stall["start"] == 100 - 41  # from the placement group's creation


def test_crawl_uses_the_checkpoint_size(classify):
    bars = [[41 + 10 * i, f"Loading safetensors checkpoint shards: {5 * i:3d}% Completed | {i}/20 [00:10<00:10,  10.00s/it]"]
            for i in range(1, 21)]
    log = HEAD + [{"segment": "load_begin", "at": 41}] + bars + [
        {"segment": "load_end", "at": 241}, {"segment": "ready", "at": 245}]
    doc, cl = classify(_spec(log))
    (stall,) = doc["findings"]
    assert stall["how"] == ["crawl"] and stall["phase"] == "weight_read"
    assert 500e6 < cl.detection.periods[0].facts["weight_read_bps"] < 560e6  # 100 GiB / 200 s
    doc, _ = classify(_spec(log), params=DetectParams(crawl_floor_bps=400e6))
    assert doc["findings"] == []


def test_slow_rank_is_asymmetric_and_holds_the_other(classify):
    def node(load_s, name):
        return {"log": [[40, name, "world_size=2 rank=0 local_rank=0 distributed_init_method=tcp://10.0.0.1:1 backend=nccl"],
                        [41, name, "Starting to load model /m..."],
                        *[[41 + load_s * i / 10, name, f"loaded part {i}"] for i in range(1, 10)],
                        [41 + load_s, name, "Loading weights took 1.0 seconds"],
                        [41 + 120, name, "init engine (profile, create kv cache, warmup model) took 2 s"],
                        [42 + 120, name, "Starting vLLM server on http://0.0.0.0:8000"]]}
    spec = {"nodes": {"fast": node(20, "Worker_TP0"), "slow": node(100, "Worker_TP1")}}
    doc, _ = classify(spec)
    slow = [f for f in doc["findings"] if f["node"] == "slow"]
    assert slow and "asymmetry" in slow[0]["how"]
    fast = [f for f in doc["findings"] if f["node"] == "fast"]
    assert fast and fast[0]["held_by"] == "slow"


def test_failure_is_a_failure_not_a_stall(classify):
    log = HEAD + [[42, "Worker", "ERROR", "ptxas fatal   : Value 'sm_121a' is not defined for option 'gpu-name'"],
                  [42, "EngineCore", "ERROR", "EngineCore failed to start."]]
    doc, _ = classify(_spec(log), form="log")
    (finding,) = doc["findings"]
    assert finding["kind"] == "failure" and "sm_121a" in finding["reason"]


def test_headless_nodes_are_ready_when_the_head_is(classify):
    head = {"log": HEAD + [{"segment": "ready", "at": 50}]}
    worker = {"log": [[40, "Worker_TP1", "world_size=2 rank=1 local_rank=0 distributed_init_method=tcp://10.0.0.1:1 backend=nccl"],
                      [45, "Worker_TP1", "Loading weights took 1.00 seconds"]],
              "samples": {"host": [{"from": 0, "to": 300, "profile": "host_calm"}]}}
    doc, _ = classify({"nodes": {"head": head, "worker": worker}})
    assert doc["findings"] == []  # the worker's silence after the head was ready is serving


def test_a_stopped_start_is_a_hang_not_a_failure(classify):
    log = HEAD + [[41, "Worker", "Starting to load model /m..."],
                  [100, "EngineCore", "[shutdown] EngineCore: trigger received signal=SIGTERM"],
                  [102, "EngineCore", "ERROR", "EngineCore failed to start."]]
    doc, _ = classify(_spec(log))
    (stall,) = doc["findings"]
    assert stall["kind"] == "stall" and stall["how"] == ["hang"]
    assert stall["end"] - stall["start"] == 59  # until it was stopped
    assert "stopped" in stall["reason"]
