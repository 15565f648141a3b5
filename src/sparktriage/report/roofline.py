"""The report's Roofline section: the ceiling of `roofline/` (the one formula, docs/roofline.md)
for the run's `deployment.yaml`, and every pooled delivered rate as a share of its depth's ceiling.

The deployment names its hardware and model profiles in `roofline:` (shipped names, YAML files or
inline); without that block, or with a bad one, the section is missing and says why. At depth 0
the ceiling is one pass over the active weights per token; at depth k it is the verify step's
(the dense part once, the routed experts' union for k + 1 tokens) over the depth's measured
acceptance length (from `sweep.json`; 1 when unknown), so no delivered rate is compared with the
dense formula's ceiling × acceptance length that an MoE at one stream never reaches.
"""

from __future__ import annotations

from sparktriage.report.sections import missing
from sparktriage.report.values import as_dict, num

HINT = "add a roofline: {hardware, model} block to deployment.yaml (docs/roofline.md)"


def _ceiling(deployment: dict):
    """The `roofline.ceiling.Ceiling` of a deployment document, or a missing-section record."""
    from pydantic import ValidationError

    from sparktriage.errors import SparktriageError
    from sparktriage.roofline.ceiling import ceiling
    from sparktriage.roofline.profiles import HardwareProfile, ModelProfile, RooflineSpec, load_profile
    spec = as_dict(deployment.get("roofline"))
    if not spec:
        return missing("deployment.yaml has no roofline: block naming the hardware and model "
                       "profiles", ["deployment.yaml"], HINT)
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
    return ceiling(hardware, model, int(nodes), stages, parsed.allreduces_per_layer)


def _acceptance(sweep: dict) -> dict[int, float]:
    if sweep.get("status") != "present":
        return {}
    return {p["depth"]: p["acceptance_length"] for p in sweep.get("points", [])
            if p.get("acceptance_length") is not None}


def compute(deployment: dict | None, protocol: dict | None = None, sweep: dict | None = None) -> dict:
    """The roofline section (or a missing-section record that names what is absent)."""
    if deployment is None:
        return missing("no deployment.yaml, so no model size or memory bandwidth to compute "
                       "the roofline from", ["deployment.yaml"], "deployment.yaml")
    roof = _ceiling(deployment)
    if isinstance(roof, dict):
        return roof
    lengths = _acceptance(sweep or {})
    per_depth = [roof.verify(d, lengths.get(d)).as_dict() for d in sorted({0, *lengths})]
    section = {"status": "present", "source": "deployment.yaml",
               "active_param_bytes_per_token_per_node": roof.bytes_per_token / roof.shard,
               "bytes_derivation": f"profile {roof.model}: active params × bits/8 × (1 + scale "
                                   f"overhead) ÷ {roof.shard} node(s)",
               "memory_bandwidth_bytes_s": roof.t_memory_s and roof.bytes_per_token / roof.shard / roof.t_memory_s,
               "interconnect_floor_s": roof.t_network_s,
               "floor_derivation": f"profile {roof.hardware}: all-reduces per layer across "
                                   f"{roof.shard} node(s) (docs/roofline.md)",
               "tensor_parallel_size": float(roof.shard), "t_memory_s": roof.t_memory_s,
               "t_token_s": roof.t_token_s, "ceiling_tok_s": roof.ceiling_tok_s,
               "routed_share": roof.routed_share, "per_depth": per_depth}
    section["fractions"] = fractions(roof, protocol or {}, lengths)
    section["note"] = ("at depth k the ceiling is the verify step's: the dense weights once and the "
                       "routed experts of all k + 1 tokens, over the depth's acceptance length")
    return section


def fractions(roof, protocol: dict, lengths: dict[int, float]) -> list[dict]:
    """Every pooled delivered rate as a share of the ceiling of its depth."""
    rows = []
    for pool in protocol.get("across", []):
        mean = pool["decode_tok_s"]["mean"]
        if mean is None:
            continue
        depth = pool["depth"]
        limit = roof.at_depth(depth, lengths.get(depth) if depth else None)
        what = pool["workload"] + ("" if depth is None else f", depth {depth}")
        rows.append({"what": what, "delivered_tok_s": mean, "ceiling_tok_s": limit,
                     "fraction": mean / limit, "speculative": bool(depth)})
    return rows


def ceiling_at(section: dict, depth: int | None) -> float | None:
    """The ceiling of one depth in a present section (the depth-0 one without a sweep figure)."""
    if section.get("status") != "present":
        return None
    for row in section.get("per_depth") or []:
        if row.get("depth") == (depth or 0):
            return row["ceiling_tok_s"]
    return section["ceiling_tok_s"]
