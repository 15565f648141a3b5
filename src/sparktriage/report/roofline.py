"""The bandwidth roofline of single-stream decode (design §6), when the deployment gives it.

Per decoded token every node streams its share of the active weights from memory, and a
tensor-parallel step across nodes waits for the interconnect on every layer. The floor on the
time per token is therefore

    t = active_param_bytes_per_token_per_node / memory_bandwidth + interconnect_floor

and the ceiling is 1 / t tokens per second. Inputs are read from `deployment.yaml`, from a
`roofline:` mapping first, then from `model:` / `hardware:` / the top level (docs/report.md
lists every accepted key). Speculative decoding can exceed the ceiling, because one pass over
the weights can yield several accepted tokens; the report says so rather than hiding it.
"""

from __future__ import annotations

from sparktriage.report.sections import missing
from sparktriage.report.values import as_dict, num

ALLREDUCES_PER_LAYER = 2  # attention and MLP/MoE outputs under tensor parallelism


def _lookup(doc: dict, *keys: str) -> float | None:
    scopes = [as_dict(doc.get("roofline")), as_dict(doc.get("model")), as_dict(doc.get("hardware")),
              as_dict(doc.get("parallelism")), doc]
    for scope in scopes:
        for key in keys:
            value = num(scope.get(key))
            if value is not None and value > 0:
                return value
    return None


def _from_profiles(deployment: dict) -> dict | None:
    """The ceiling from `roofline: {hardware, model}` profiles (sparktriage.roofline), in this
    section's shape; None when the deployment names no profiles."""
    spec = as_dict(deployment.get("roofline"))
    if not (isinstance(spec.get("hardware"), (str, dict)) and isinstance(spec.get("model"), (str, dict))):
        return None
    from pydantic import ValidationError

    from sparktriage.errors import SparktriageError
    from sparktriage.roofline.ceiling import ceiling
    from sparktriage.roofline.profiles import HardwareProfile, ModelProfile, RooflineSpec, load_profile
    try:
        parsed = RooflineSpec.model_validate(spec)
        hardware = load_profile(HardwareProfile, parsed.hardware)
        model = load_profile(ModelProfile, parsed.model)
    except (ValidationError, SparktriageError) as exc:
        return missing(f"deployment.yaml roofline: {str(exc).splitlines()[0][:200]}",
                       ["deployment.yaml"], "fix the roofline: block (docs/roofline.md)")
    par = as_dict(deployment.get("parallelism"))
    lab_nodes = as_dict(deployment.get("lab")).get("nodes")
    nodes = (parsed.nodes or num(par.get("nodes")) or
             len(deployment.get("nodes") or (lab_nodes if isinstance(lab_nodes, list) else [])) or 1)
    stages = parsed.pipeline_stages or int(num(par.get("pp")) or 1)
    roof = ceiling(hardware, model, int(nodes), stages, parsed.allreduces_per_layer)
    return {"status": "present", "source": "deployment.yaml",
            "active_param_bytes_per_token_per_node": roof.bytes_per_token / roof.shard,
            "bytes_derivation": f"profile {model.name}: active params × bits/8 × (1 + scale overhead) "
                                f"÷ {roof.shard} node(s)",
            "memory_bandwidth_bytes_s": hardware.memory_bandwidth_gbs * 1e9,
            "interconnect_floor_s": roof.t_network_s,
            "floor_derivation": f"profile {hardware.name}: all-reduces per layer across {roof.shard} "
                                "node(s) (docs/roofline.md)",
            "tensor_parallel_size": float(roof.shard), "t_memory_s": roof.t_memory_s,
            "t_token_s": roof.t_token_s, "ceiling_tok_s": roof.ceiling_tok_s}


def compute(deployment: dict | None) -> dict:
    """The roofline numbers, or a missing-section record that names what is absent."""
    if deployment is None:
        return missing("no deployment.yaml, so no model size or memory bandwidth to compute "
                       "the roofline from", ["deployment.yaml"], "deployment.yaml")
    profiled = _from_profiles(deployment)
    if profiled is not None:
        return profiled
    tp = _lookup(deployment, "tensor_parallel_size", "tp", "tensor_parallel") or 1.0
    bytes_node = _lookup(deployment, "active_param_bytes_per_token_per_node")
    derivation = "given"
    if bytes_node is None:
        params = _lookup(deployment, "active_params", "active_parameters")
        per_param = _lookup(deployment, "bytes_per_param", "bytes_per_weight")
        bits = _lookup(deployment, "bits_per_weight")
        if per_param is None and bits is not None:
            per_param = bits / 8.0
        if params is not None and per_param is not None:
            bytes_node = params * per_param / tp
            derivation = f"active_params × bytes_per_param ÷ tensor_parallel_size ({tp:g})"
    bandwidth = _lookup(deployment, "memory_bandwidth_bytes_s")
    if bandwidth is None:
        gbs = _lookup(deployment, "memory_bandwidth_gbs", "memory_bandwidth_gb_s")
        bandwidth = gbs * 1e9 if gbs is not None else None
    floor = _lookup(deployment, "interconnect_latency_floor_s")
    floor_source = "given"
    if floor is None:
        per_layer = _lookup(deployment, "interconnect_latency_per_layer_s")
        if per_layer is None:
            us = _lookup(deployment, "interconnect_latency_per_layer_us")
            per_layer = us * 1e-6 if us is not None else None
        layers = _lookup(deployment, "num_layers", "layers", "num_hidden_layers")
        if per_layer is not None and layers is not None:
            floor = per_layer * layers * ALLREDUCES_PER_LAYER
            floor_source = f"per-layer latency × {layers:g} layers × {ALLREDUCES_PER_LAYER} all-reduces"
        elif tp <= 1:
            floor, floor_source = 0.0, "single node: no interconnect on the decode path"
    absent = [name for name, value in (("active parameter bytes per token per node", bytes_node),
                                       ("memory bandwidth", bandwidth),
                                       ("interconnect latency floor", floor)) if value is None]
    if absent:
        record = missing("deployment.yaml does not give " + ", ".join(absent),
                         ["deployment.yaml"], "add a roofline: mapping to deployment.yaml "
                         "(docs/report.md, Roofline)")
        return record
    t_mem = bytes_node / bandwidth
    t_token = t_mem + floor
    return {"status": "present", "source": "deployment.yaml",
            "active_param_bytes_per_token_per_node": bytes_node, "bytes_derivation": derivation,
            "memory_bandwidth_bytes_s": bandwidth, "interconnect_floor_s": floor,
            "floor_derivation": floor_source, "tensor_parallel_size": tp,
            "t_memory_s": t_mem, "t_token_s": t_token, "ceiling_tok_s": 1.0 / t_token}


def attach_fractions(roof: dict, protocol: dict, sweep: dict) -> None:
    """Every pooled delivered rate as a fraction of the ceiling (added to the roofline record)."""
    ceiling = roof["ceiling_tok_s"]
    rows = []
    for pool in protocol.get("across", []):
        mean = pool["decode_tok_s"]["mean"]
        if mean is None:
            continue
        what = pool["workload"] + ("" if pool["depth"] is None else f", depth {pool['depth']}")
        rows.append({"what": what, "delivered_tok_s": mean, "fraction": mean / ceiling,
                     "speculative": bool(pool["depth"])})
    roof["fractions"] = rows
    roof["note"] = ("fractions above 1 are possible only with speculative decoding, where one "
                    "pass over the weights can yield several accepted tokens")
