"""The bandwidth-bound decode ceiling of one stream, plain and speculative (docs/roofline.md).

Per decoded token, the nodes that share each layer (tensor/expert parallel, `shard` of them)
stream their part of the active weights from memory in parallel, the pipeline stages run one
after the other, and every layer waits for its all-reduces across the shard:

    bytes_token  = active_params × bits_per_weight / 8 × (1 + scale_overhead)
    t_memory     = bytes_token / (shard × memory_bandwidth)          shard = nodes / stages
    t_allreduce  = 2 (shard − 1) × hop_latency + 2 (shard − 1) / shard × hidden × 2 B / link_bw
    t_network    = layers × allreduces_per_layer × t_allreduce + (stages − 1) × (hop + hidden × 2 B / link_bw)
    ceiling      = 1 / (t_memory + t_network)                         tokens/s, depth 0

At depth k a verify step checks w = k + 1 tokens in one pass and yields L(k) tokens on average
(the mean acceptance length, the bonus token included). The dense part of the weights is read
once; the routed experts are read for the union of the experts the w tokens route to
(roofline.experts: r(w) times a plain step's routed bytes); the all-reduce messages carry w
hidden states:

    bytes_step(w) = bytes_token × ((1 − routed_share) + routed_share × r(w))
    t_step(w)     = bytes_step(w) / (shard × memory_bandwidth) + t_network with w × hidden × 2 B
    ceiling(k)    = L(k) / t_step(k + 1)

For a dense profile (no `experts`) routed_share is 0 and ceiling(k) is ceiling × L(k); for an
MoE at one stream a verify step of 4 tokens reads about 2.9× a plain step's bytes (Kimi K2).
Delivered rates are shown as a percentage of the ceiling of their depth.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from sparktriage.roofline import experts as expert_union
from sparktriage.roofline.profiles import HardwareProfile, ModelProfile


@dataclass(frozen=True)
class VerifyCeiling:
    """The ceiling of one speculative depth: what its verify step reads and how long it takes."""

    depth: int
    width: int
    expert_ratio: float  # routed bytes of this verify step over a plain step's (1: dense)
    bytes_ratio: float  # all bytes of this verify step over a plain step's
    bytes_per_step: float
    t_memory_s: float
    t_network_s: float
    t_step_s: float
    tokens_per_step: float  # the acceptance length the ceiling assumes
    ceiling_tok_s: float
    ceiling_without_union_tok_s: float  # the dense formula (ceiling × L), for comparison

    def as_dict(self) -> dict:
        return asdict(self)


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
    t_network_per_width_s: float = 0.0  # the part of t_network that grows with the step's width
    routed_share: float = 0.0
    experts: int | None = None
    experts_per_token: int | None = None
    routing_correlation: float = 0.0

    def as_dict(self) -> dict:
        return asdict(self)

    def expert_ratio(self, width: int) -> float:
        """Routed bytes of a verify step of `width` tokens over a plain step's (1 when dense)."""
        if not self.experts or not self.experts_per_token:
            return 1.0
        return expert_union.ratio(self.experts, self.experts_per_token, width, self.routing_correlation)

    def verify(self, depth: int, acceptance_length: float | None = None) -> VerifyCeiling:
        """The ceiling at speculative depth `depth` for a mean acceptance length (≥ 1; 1 when
        not given: the ceiling of the step alone, before acceptance)."""
        width = depth + 1
        tokens = max(1.0, acceptance_length or 1.0)
        ratio = self.expert_ratio(width)
        bytes_ratio = (1.0 - self.routed_share) + self.routed_share * ratio
        t_memory = self.t_memory_s * bytes_ratio
        t_network = self.t_network_s + (width - 1) * self.t_network_per_width_s
        t_step = t_memory + t_network
        return VerifyCeiling(depth, width, ratio, bytes_ratio, self.bytes_per_token * bytes_ratio,
                             t_memory, t_network, t_step, tokens, tokens / t_step,
                             self.ceiling_tok_s * tokens)

    def at_depth(self, depth: int | None, acceptance_length: float | None = None) -> float:
        """The ceiling (tok/s) that applies to a delivered rate at `depth` (0 or None: plain)."""
        if not depth:
            return self.ceiling_tok_s
        return self.verify(depth, acceptance_length).ceiling_tok_s

    def percent(self, delivered_tok_s: float | None, acceptance_length: float | None = None,
                depth: int | None = 0) -> float | None:
        """Delivered rate as a percentage of the ceiling of its depth (None without a rate)."""
        if delivered_tok_s is None:
            return None
        return 100.0 * delivered_tok_s / self.at_depth(depth, acceptance_length)


def ceiling(hardware: HardwareProfile, model: ModelProfile, nodes: int = 1, stages: int = 1,
            allreduces_per_layer: int = 2) -> Ceiling:
    """The decode ceiling per stream (see module doc); `Ceiling.verify` gives it per depth."""
    stages = max(1, min(stages, nodes))
    shard = max(1, nodes // stages)
    bytes_token = model.active_params_b * 1e9 * model.bits_per_weight / 8.0 * (1.0 + model.scale_overhead)
    t_memory = bytes_token / (shard * hardware.memory_bandwidth_gbs * 1e9)
    hop = hardware.interconnect_latency_us * 1e-6
    message = (model.hidden_size or 0) * 2.0
    link = (hardware.interconnect_bandwidth_gbs or 0.0) * 1e9
    transfer = message / link if link > 0 else 0.0
    ring = shard > 1
    t_allreduce = 2 * (shard - 1) * hop + (2 * (shard - 1) / shard) * transfer if ring else 0.0
    t_network = model.layers * allreduces_per_layer * t_allreduce + (stages - 1) * (hop + transfer)
    per_width = (model.layers * allreduces_per_layer * ((2 * (shard - 1) / shard) * transfer if ring else 0.0)
                 + (stages - 1) * transfer)
    t_token = t_memory + t_network
    return Ceiling(hardware.name, model.name, nodes, stages, shard, bytes_token, t_memory, t_network,
                   t_token, 1.0 / t_token, per_width, model.routed_share or 0.0, model.experts,
                   model.experts_per_token, model.routing_correlation)


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


def bench_fractions(roof: Ceiling, bench: dict, acceptance_length: float | None = None,
                   depth: int = 0) -> dict:
    """Every workload's delivered decode rate of a bench document as % of the ceiling of its
    depth (with speculation, of the verify step's ceiling at the acceptance length)."""
    rows = []
    for w in bench.get("workloads") or []:
        mean = ((w.get("summary") or {}).get("decode_tok_s") or {}).get("mean")
        rows.append({"workload": w.get("name"), "delivered_tok_s": mean,
                     "ceiling_tok_s": roof.at_depth(depth, acceptance_length),
                     "roofline_pct": roof.percent(mean, acceptance_length, depth)})
    return {**roof.as_dict(), "acceptance_length": acceptance_length, "workloads": rows}
