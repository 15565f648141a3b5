"""`ray start` commands: which Ray role a client node plays, and its Ray settings.

`ray start --head ...` makes the node the Ray head (the serve command then runs there with the
Ray executor); `ray start --address=HEAD:PORT ...` makes it a Ray worker, which runs no
`vllm serve` of its own (it is one node of the head's deployment, not a node of another
kind). Options the launch plan sets itself (`--block`, the ports, the node address, the
dashboard, usage stats) are accounted for; `--object-store-memory` and `--temp-dir` map onto
the engine's Ray fields; `--num-gpus`, `--num-cpus`, `--resources` go to `engine.ray_args`;
anything else is kept in `engine.ray_args` and listed as unknown.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from sparktriage.reproduce.importers.common import Ctx

PLAN_SETS = {"--block": "the plan runs ray start in the foreground (--block)",
             "--node-ip-address": "the plan gives each lab node's own address",
             "--include-dashboard": "the plan runs Ray without its dashboard",
             "--dashboard-host": "the plan runs Ray without its dashboard",
             "--dashboard-port": "the plan runs Ray without its dashboard",
             "--disable-usage-stats": "the plan disables Ray's usage stats",
             "--min-worker-port": "the plan sets Ray's ports from engine.ray_port",
             "--max-worker-port": "the plan sets Ray's ports from engine.ray_port",
             "--node-manager-port": "the plan sets Ray's ports from engine.ray_port",
             "--object-manager-port": "the plan sets Ray's ports from engine.ray_port",
             "--ray-client-server-port": "the plan sets Ray's ports from engine.ray_port",
             "--dashboard-agent-listen-port": "the plan sets Ray's ports from engine.ray_port",
             "--dashboard-agent-grpc-port": "the plan sets Ray's ports from engine.ray_port",
             "--metrics-export-port": "the plan sets Ray's ports from engine.ray_port",
             "--runtime-env-agent-port": "the plan sets Ray's ports from engine.ray_port"}
BOOL = {"--head", "--block", "--disable-usage-stats", "--verbose"}
KEEP = {"--num-gpus", "--num-cpus", "--resources", "--labels"}


@dataclass
class RayStart:
    """One `ray start` command, read."""

    role: str  # "head" or "worker"
    line: int | None = None
    address: str | None = None
    engine: dict = field(default_factory=dict)  # ray_port, ray_object_store_mb, ray_args


def is_ray_start(words: list[str]) -> bool:
    return len(words) >= 2 and os.path.basename(words[0]) == "ray" and words[1] == "start"


def parse_ray_start(words: list[str], ctx: Ctx, line: int | None) -> RayStart:
    """A `ray start ...` argv (from `ray`) onto a RayStart; every option accounted for."""
    args = words[2:]
    out = RayStart(role="worker", line=line)
    where = f"line {line}" if line is not None else "ray start"
    i = 0
    while i < len(args):
        word = args[i]
        i += 1
        name, eq, value = word.partition("=")
        if not eq and name not in BOOL and i < len(args) and not args[i].startswith("--"):
            value, i = args[i], i + 1
        elif not eq:
            value = None
        if name == "--head":
            out.role = "head"
            ctx.mapped.append(f"{where}: ray start --head -> engine.backend ray (head node)")
        elif name == "--address":
            out.address = value
            ctx.mapped.append(f"{where}: ray start --address {value} -> a Ray worker node of "
                              "the head's deployment")
        elif name == "--port" and value and value.isdigit():
            out.engine["ray_port"] = int(value)
            ctx.mapped.append(f"{where}: ray start --port -> engine.ray_port")
        elif name == "--object-store-memory" and value and value.isdigit():
            out.engine["ray_object_store_mb"] = max(76, int(value) // 1_000_000)
            ctx.mapped.append(f"{where}: ray start --object-store-memory -> "
                              "engine.ray_object_store_mb")
        elif name == "--temp-dir" and value:
            out.engine["ray_temp_dir"] = value
            ctx.mapped.append(f"{where}: ray start --temp-dir -> engine.ray_temp_dir")
        elif name in PLAN_SETS:
            ctx.mapped.append(f"{where}: ray start {name} -> {PLAN_SETS[name]}")
        elif name in KEEP and value is not None:
            out.engine.setdefault("ray_args", []).extend([name, value])
            ctx.check_variables(value, f"{where}: ray start {name}")
            ctx.mapped.append(f"{where}: ray start {name} -> engine.ray_args")
        else:
            kept = [word] if eq or value is None else [name, value]
            out.engine.setdefault("ray_args", []).extend(kept)
            ctx.flag_unknown("ray start " + " ".join(kept), f"{where}: a ray start option this "
                             "tool does not know; kept in engine.ray_args")
    return out
