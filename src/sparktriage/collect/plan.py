"""The collector plan: which collectors run on a node, how often, with what time limit.

Declared before anything runs (on the collecting machine), shown by `--dry-run`, sent to the
node agent as JSON, and echoed into the manifest. Building a plan touches nothing.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

# Sampling collectors share one thread; command collectors (py-spy) get their own.
COLLECTORS = ("host", "disk", "net", "procs", "gpu", "stacks", "dmesg", "environment")

DEFAULT_INTERVAL_S = 1.0
DEFAULT_STACKS_INTERVAL_S = 15.0


@dataclass(frozen=True)
class CollectorSpec:
    """One collector on one node."""

    name: str
    interval_s: float | None  # None: runs once (environment) or follows a stream (dmesg)
    timeout_s: float  # per run (a py-spy dump, an NVML query round, a version probe)
    options: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.name not in COLLECTORS:
            raise ValueError(f"unknown collector {self.name!r} (known: {', '.join(COLLECTORS)})")
        if self.interval_s is not None and self.interval_s <= 0:
            raise ValueError(f"{self.name}: interval must be positive")


@dataclass(frozen=True)
class CollectPlan:
    """Everything one node agent collects."""

    node: str
    collectors: tuple[CollectorSpec, ...]

    def to_json(self) -> dict:
        return {"node": self.node, "collectors": [asdict(c) for c in self.collectors]}

    @classmethod
    def from_json(cls, data: dict) -> "CollectPlan":
        return cls(node=data["node"],
                   collectors=tuple(CollectorSpec(**c) for c in data["collectors"]))

    def spec(self, name: str) -> CollectorSpec | None:
        for c in self.collectors:
            if c.name == name:
                return c
        return None


def default_plan(node: str, *, interval_s: float = DEFAULT_INTERVAL_S,
                 stacks_interval_s: float | None = DEFAULT_STACKS_INTERVAL_S,
                 pyspy: str | None = None, python: str | None = None,
                 gpu_source: str = "auto", dmesg_backlog_s: float = 600.0,
                 disable: tuple[str, ...] = ()) -> CollectPlan:
    """The standard plan: every collector, samples at `interval_s`, stacks at their own pace.

    `pyspy` is the py-spy executable on the node (None: look it up there); `python` the
    interpreter whose packages the environment capture reads (None: the server's own);
    `stacks_interval_s=None` takes stacks only on demand; `gpu_source` is "auto" (NVML) or
    "none".
    """
    options: dict[str, dict[str, Any]] = {
        "stacks": {"pyspy": pyspy, "nonblocking": True},
        "gpu": {"source": gpu_source},
        "dmesg": {"backlog_s": dmesg_backlog_s, "max_backlog_lines": 2000},
        "environment": {"python": python},
        "procs": {"max_threads": 16},
    }
    specs = []
    for name in COLLECTORS:
        if name in disable:
            continue
        if name == "stacks":
            interval, timeout = stacks_interval_s, 20.0
        elif name == "dmesg":
            interval, timeout = interval_s, 5.0
        elif name == "environment":
            interval, timeout = None, 30.0
        else:
            interval, timeout = interval_s, 10.0
        specs.append(CollectorSpec(name, interval, timeout, options.get(name, {})))
    return CollectPlan(node=node, collectors=tuple(specs))
