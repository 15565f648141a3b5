"""The roofline (roofline.ceiling): the seed's worked example, profiles, the deployment field."""

from __future__ import annotations

import pytest

from sparktriage.config.deployment import load_deployment
from sparktriage.errors import ConfigError
from sparktriage.roofline.ceiling import ceiling, deployment_ceiling
from sparktriage.roofline.profiles import HardwareProfile, ModelProfile, load_profile, shipped


def test_shipped_profiles():
    assert shipped("hardware") == ["gb10"]
    assert shipped("models") == ["deepseek-v3", "gpt-oss-120b", "kimi-k2", "qwen3-235b"]
    gb10 = load_profile(HardwareProfile, "gb10")
    assert (gb10.memory_bandwidth_gbs, gb10.memory_gib) == (273, 128)


def test_worked_example_8_gb10_1t_fp4_at_27_8_tok_s():
    """The seed: 8 × GB10, a ~1T-parameter FP4 MoE (Kimi K2-class, 32B active), 27.8 tok/s."""
    roof = ceiling(load_profile(HardwareProfile, "gb10"), load_profile(ModelProfile, "kimi-k2"), 8)
    bytes_token = 32e9 * 4 / 8 * 1.125                       # 18.0 GB read per token
    t_mem = bytes_token / (8 * 273e9)                        # 8.24 ms: each node reads 1/8
    allreduce = 2 * 7 * 5e-6 + (2 * 7 / 8) * (7168 * 2) / 25e9   # ring: 14 hops + the bytes
    t_net = 61 * 2 * allreduce                               # 8.66 ms over 61 layers × 2
    assert roof.bytes_per_token == pytest.approx(bytes_token)
    assert roof.t_memory_s == pytest.approx(t_mem) and roof.t_memory_s == pytest.approx(8.2418e-3, rel=1e-4)
    assert roof.t_network_s == pytest.approx(t_net)
    assert roof.ceiling_tok_s == pytest.approx(1 / (t_mem + t_net)) and roof.ceiling_tok_s == pytest.approx(59.16, abs=0.01)
    assert roof.percent(27.8) == pytest.approx(47.0, abs=0.05)


def test_speculative_ceiling_reads_the_expert_union_of_the_verify_step():
    """docs/roofline.md's worked example: Kimi K2 on 8 GB10, depths 0-4, acceptance lengths
    1, 1.8, 2.4, 2.85, 3.2. A verify step of w = k + 1 tokens reads the dense part once and
    the union of the routed experts its tokens pick: 384 · (1 − (1 − 8/384)^w) per layer."""
    roof = ceiling(load_profile(HardwareProfile, "gb10"), load_profile(ModelProfile, "kimi-k2"), 8)
    lengths = [1.0, 1.8, 2.4, 2.85, 3.2]
    union = [384 * (1 - (1 - 8 / 384) ** (k + 1)) for k in range(5)]
    assert [round(u, 1) for u in union] == [8.0, 15.8, 23.5, 31.0, 38.4]
    hop_part = 2 * 7 * 5e-6                                   # the ring's latency, per all-reduce
    transfer = (2 * 7 / 8) * (7168 * 2) / 25e9                # one hidden state's bytes on the link
    for k, length in enumerate(lengths):
        step = roof.verify(k, length)
        ratio = union[k] / 8
        bytes_ratio = 0.34 + 0.66 * ratio                     # routed share 0.66 of the 18.0 GB
        t_memory = 18.0e9 * bytes_ratio / (8 * 273e9)
        t_network = 61 * 2 * (hop_part + (k + 1) * transfer)  # w hidden states per all-reduce
        assert step.expert_ratio == pytest.approx(ratio)
        assert step.bytes_ratio == pytest.approx(bytes_ratio)
        assert step.t_memory_s == pytest.approx(t_memory) and step.t_network_s == pytest.approx(t_network)
        assert step.ceiling_tok_s == pytest.approx(length / (t_memory + t_network))
        assert step.ceiling_without_union_tok_s == pytest.approx(length * roof.ceiling_tok_s)
    got = [round(roof.verify(k, a).ceiling_tok_s, 1) for k, a in enumerate(lengths)]
    dense = [round(roof.verify(k, a).ceiling_without_union_tok_s, 1) for k, a in enumerate(lengths)]
    assert got == [59.2, 80.5, 86.7, 86.6, 84.1]
    assert dense == [59.2, 106.5, 142.0, 168.6, 189.3]
    assert roof.verify(3, 2.85).bytes_ratio == pytest.approx(2.90, abs=0.01)  # 4 tokens: 2.9x the bytes
    assert roof.percent(27.8, 2.4, depth=2) == pytest.approx(100 * 27.8 / 86.7, abs=0.05)


def test_a_dense_profile_keeps_ceiling_times_acceptance_length():
    dense = ModelProfile(active_params_b=8, layers=32, hidden_size=4096, bits_per_weight=4)
    roof = ceiling(load_profile(HardwareProfile, "gb10"), dense, 1)
    assert roof.verify(3, 2.5).ceiling_tok_s == pytest.approx(2.5 * roof.ceiling_tok_s)
    assert roof.at_depth(0, 2.5) == pytest.approx(roof.ceiling_tok_s)  # depth 0: no acceptance


def test_an_moe_profile_gives_its_expert_fields_together():
    with pytest.raises(ValueError, match="together"):
        ModelProfile(active_params_b=8, layers=32, bits_per_weight=4, experts=64)


def test_single_node_has_no_network_term_and_pipeline_stages_do_not_help():
    gb10 = load_profile(HardwareProfile, "gb10")
    oss = load_profile(ModelProfile, "gpt-oss-120b")
    one = ceiling(gb10, oss, 1)
    assert one.t_network_s == 0 and one.ceiling_tok_s == pytest.approx(273e9 / (5.1e9 * 0.5 * 1.0625))
    pp = ceiling(gb10, oss, 2, stages=2)
    assert pp.t_memory_s == pytest.approx(one.t_memory_s) and pp.t_network_s > 0


def test_deployment_selects_profiles_by_name_and_user_yaml(tmp_path):
    (tmp_path / "node.yaml").write_text("name: mine\nmemory_bandwidth_gbs: 500\n")
    (tmp_path / "d.yaml").write_text(
        "lab: {nodes: [{name: a, host: 127.0.0.1}, {name: b, host: 127.0.0.2}]}\n"
        "model: {path: /m}\nparallelism: {tp: 2}\n"
        "roofline: {hardware: ./node.yaml, model: deepseek-v3}\n")
    roof = deployment_ceiling(load_deployment(tmp_path / "d.yaml"))
    assert roof.hardware == "mine" and roof.model == "deepseek-v3" and roof.nodes == 2
    assert roof.t_memory_s == pytest.approx(37e9 * 0.5 * 1.125 / (2 * 500e9))


def test_unknown_profile_and_bad_user_profile_are_config_errors(tmp_path):
    with pytest.raises(ConfigError, match="not shipped"):
        load_profile(ModelProfile, "llama-9000")
    (tmp_path / "bad.yaml").write_text("memory_bandwidth_gbs: fast\n")
    with pytest.raises(ConfigError, match="memory_bandwidth_gbs"):
        load_profile(HardwareProfile, str(tmp_path / "bad.yaml"))
