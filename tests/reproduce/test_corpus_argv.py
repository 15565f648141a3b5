"""The corpus's argv-level check (corpus_argv.py): facts read from planned argv, and failures
on the plans it exists to catch (two engines on one data-parallel rank, a lost --headless, a
server on a Ray worker, a changed speculative config)."""

from __future__ import annotations

from types import SimpleNamespace

from corpus_argv import check_argv, node_facts, plan_facts

ADDRESSES = {"spark-01": "192.0.2.11", "spark-02": "192.0.2.12"}
SERVE = ["vllm", "serve", "/m", "--port", "8000"]


def _proc(*argv: str) -> SimpleNamespace:
    return SimpleNamespace(argv=tuple(argv))


def _plan(per_node: dict[str, list[list[str]]], backend: str = "mp"):
    nodes = [SimpleNamespace(name=n) for n in per_node]
    stage = SimpleNamespace(processes=[(n, _proc(*a)) for n, argvs in per_node.items()
                                       for a in argvs])
    lab = SimpleNamespace(nodes=[SimpleNamespace(name=n, host=h) for n, h in ADDRESSES.items()])
    return SimpleNamespace(nodes=nodes, stages=[stage], backend=backend), lab


def test_data_parallel_rank_from_start_rank_and_address_as_node_name() -> None:
    facts = node_facts([_proc(*SERVE, "--data-parallel-size", "2", "--data-parallel-start-rank",
                              "1", "--headless", "--data-parallel-address", "192.0.2.11")],
                       ADDRESSES)
    assert facts == {"role": "server", "headless": True, "dp_rank": 1, "dp": 2,
                     "dp_address": "spark-01"}


def test_data_parallel_rank_inferred_from_node_rank_as_vllm_does() -> None:
    # arg_utils: rank = node_rank * (world // nnodes) // (tp * pp)
    facts = node_facts([_proc(*SERVE, "-dp", "4", "-tp", "2", "--nnodes", "4",
                              "--node-rank", "3")], ADDRESSES)
    assert (facts["dp_rank"], facts["nnodes"], facts["node_rank"]) == (3, 4, 3)
    tp_only = node_facts([_proc(*SERVE, "--tensor-parallel-size=2", "--nnodes=2",
                                "--node-rank=1")], ADDRESSES)
    assert tp_only["dp_rank"] == 0 and tp_only["nnodes"] == 2


def test_server_inside_a_shell_script_and_speculative_json() -> None:
    script = "exec vllm serve /m --speculative-config '{\"method\":\"mtp\"," \
             "\"num_speculative_tokens\":3}'"
    facts = node_facts([_proc("docker", "run", "IMG", "bash", "-c", script)], ADDRESSES)
    assert facts["speculative"] == {"method": "mtp", "num_speculative_tokens": 3}


def test_ray_worker_points_at_the_head() -> None:
    facts = node_facts([_proc("ray", "start", "--address", "192.0.2.11:6379", "--block")],
                       ADDRESSES)
    assert facts == {"role": "ray-worker", "ray_address": "spark-01"}


def test_two_engines_on_data_parallel_rank_zero_fail() -> None:
    argv = SERVE + ["--data-parallel-size", "2", "--data-parallel-size-local", "1"]
    plan, lab = _plan({"spark-01": [argv], "spark-02": [argv + ["--headless"]]})
    problems = check_argv({}, plan_facts(plan, lab), "mp")
    assert problems == ["argv: data-parallel ranks [0, 0] on ['spark-01', 'spark-02'] "
                        "(two engines claim the same rank)"]


def test_node_ranks_with_dp_pass_and_headless_is_required() -> None:
    argv = SERVE + ["--data-parallel-size", "2", "--nnodes", "2"]
    plan, lab = _plan({"spark-01": [argv + ["--node-rank", "0"]],
                       "spark-02": [argv + ["--node-rank", "1", "--headless"]]})
    assert check_argv({}, plan_facts(plan, lab), "mp") == []
    plan, lab = _plan({"spark-01": [argv + ["--node-rank", "0"]],
                       "spark-02": [argv + ["--node-rank", "1"]]})
    assert check_argv({}, plan_facts(plan, lab), "mp") == [
        "argv: 2 API server(s) planned (['spark-01', 'spark-02']); one node serves the API, "
        "the others run --headless"]


def test_expected_keys_compared_and_ray_server_on_head_only() -> None:
    plan, lab = _plan({"spark-01": [["ray", "start", "--head"], SERVE],
                       "spark-02": [SERVE]}, backend="ray")
    want = {"argv_nodes": [{"role": "server", "speculative": {"method": "mtp"}},
                           {"role": "ray-worker", "ray_address": "spark-01"}]}
    assert check_argv(want, plan_facts(plan, lab), "ray") == [
        "argv: under Ray only the head runs the server, planned on ['spark-01', 'spark-02']",
        "argv: node 0 (spark-01) speculative 'absent', expected {'method': 'mtp'}",
        "argv: node 1 (spark-02) role 'server', expected 'ray-worker'",
        "argv: node 1 (spark-02) ray_address 'absent', expected 'spark-01'"]
    assert check_argv({"argv_nodes": [{}]}, plan_facts(plan, lab), "ray")[-1] == \
        "argv: 2 node(s) planned, argv_nodes lists 1"
