"""The bandwidth-bound decode ceiling of one stream (design §6; formula in docs/roofline.md).

Per decoded token, the nodes that share each layer (tensor/expert parallel, `shard` of them)
stream their part of the active weights from memory in parallel, the pipeline stages run one
after the other, and every layer waits for its all-reduces across the shard:

    bytes_token  = active_params × bits_per_weight / 8 × (1 + scale_overhead)
    t_memory     = bytes_token / (shard × memory_bandwidth)          shard = nodes / stages
    t_allreduce  = 2 (shard − 1) × hop_latency + 2 (shard − 1) / shard × hidden × 2 B / link_bw
    t_network    = layers × allreduces_per_layer × t_allreduce + (stages − 1) × (hop + hidden × 2 B / link_bw)
    ceiling      = 1 / (t_memory + t_network)                         tokens/s, depth 0

With speculation a verification pass reads the weights once and yields on average the mean
acceptance length L of tokens (the bonus token included), so its ceiling is ceiling × L. Delivered
rates are shown as a percentage of the ceiling that applies to them.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from sparktriage.roofline.profiles import HardwareProfile, ModelProfile


@dataclass(frozen=True)
class Ceiling:
    """The roofline of one deployment, with every term kept for the report."""

    hardware: str
    model: str
    nodes: int
    stages: int
    shard: int
    bytes_per_token: float
    t_memory_s: float
    t_network_s: float
    t_token_s: float
    ceiling_tok_s: float

    def as_dict(self) -> dict:
        return asdict(self)

    def with_acceptance(self, acceptance_length: float | None) -> float:
        """The ceiling with speculation: ceiling × mean acceptance length (≥ 1)."""
        return self.ceiling_tok_s * max(1.0, acceptance_length or 1.0)

    def percent(self, delivered_tok_s: float | None, acceptance_length: float | None = None) -> float | None:
        """Delivered rate as a percentage of its ceiling (None without a rate)."""
        if delivered_tok_s is None:
            return None
        return 100.0 * delivered_tok_s / self.with_acceptance(acceptance_length)


def ceiling(hardware: HardwareProfile, model: ModelProfile, nodes: int = 1, stages: int = 1,
            allreduces_per_layer: int = 2) -> Ceiling:
    """The depth-0 decode ceiling per stream (see module doc)."""
    stages = max(1, min(stages, nodes))
    shard = max(1, nodes // stages)
    bytes_token = model.active_params_b * 1e9 * model.bits_per_weight / 8.0 * (1.0 + model.scale_overhead)
    t_memory = bytes_token / (shard * hardware.memory_bandwidth_gbs * 1e9)
    hop = hardware.interconnect_latency_us * 1e-6
    message = (model.hidden_size or 0) * 2.0
    link = (hardware.interconnect_bandwidth_gbs or 0.0) * 1e9
    transfer = message / link if link > 0 else 0.0
    t_allreduce = 2 * (shard - 1) * hop + (2 * (shard - 1) / shard) * transfer if shard > 1 else 0.0
    t_network = model.layers * allreduces_per_layer * t_allreduce + (stages - 1) * (hop + transfer)
    t_token = t_memory + t_network
    return Ceiling(hardware.name, model.name, nodes, stages, shard, bytes_token, t_memory, t_network,
                   t_token, 1.0 / t_token)


def deployment_ceiling(deployment) -> Ceiling | None:
    """The ceiling of a loaded Deployment with a `roofline:` block (None without one)."""
    from sparktriage.roofline.profiles import load_profile

    spec = getattr(deployment, "roofline", None)
    if spec is None:
        return None
    hardware = load_profile(HardwareProfile, spec.hardware)
    model = load_profile(ModelProfile, spec.model)
    lab_nodes = len(deployment.nodes or [n.name for n in deployment.lab.nodes]) \
        if getattr(deployment.lab, "nodes", None) else 1
    nodes = spec.nodes or deployment.parallelism.nodes or lab_nodes
    stages = spec.pipeline_stages or deployment.parallelism.pp
    return ceiling(hardware, model, nodes, stages, spec.allreduces_per_layer)


def bench_fractions(roof: Ceiling, bench: dict, acceptance_length: float | None = None) -> dict:
    """Every workload's delivered decode rate of a bench document as % of the ceiling (with
    speculation, of the ceiling × the acceptance length when one is known)."""
    rows = []
    for w in bench.get("workloads") or []:
        mean = ((w.get("summary") or {}).get("decode_tok_s") or {}).get("mean")
        rows.append({"workload": w.get("name"), "delivered_tok_s": mean,
                     "ceiling_tok_s": roof.with_acceptance(acceptance_length),
                     "roofline_pct": roof.percent(mean, acceptance_length)})
    return {**roof.as_dict(), "acceptance_length": acceptance_length, "workloads": rows}
