"""The declared session plan: what a session will do, as data, before it does any of it.

`SessionOptions` are the options of `session run` (remembered in `session.json`; `resume`
takes none that change them). `build_steps` turns them into the ordered steps of the session
(docs/session.md): per protocol launch a launch group (launch, probe on the first, protocol,
stall classification), then the sweep over the depths, the environment diff across nodes, the
report and its signature check. `estimate_s` prices a plan in lab seconds from the
deployment's timeouts and the protocol's size.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

from sparktriage.sweep.plan import parse_depths  # noqa: F401 (the sweep's: one depth parser)

PENDING, RUNNING, DONE, FAILED, INTERRUPTED = "pending", "running", "done", "failed", "interrupted"
STATES = (PENDING, RUNNING, DONE, FAILED, INTERRUPTED)
LAUNCH_KINDS = ("launch",)
IN_LAUNCH = ("probe", "protocol")  # run while the group's server is up


@dataclass(frozen=True)
class SessionOptions:
    """The options of one session (units in the names)."""

    deployment: str | None  # absolute path of DEPLOY.yaml; None: an endpoint the tool did not start
    lab: str | None = None
    endpoint: str | None = None  # selfcheck preset: the server to measure
    preset: str = "session"  # session, demo, selfcheck
    launches: int = 3
    depths: tuple[int, ...] = (0, 1, 2, 3, 4)
    method: str = "ngram"
    requests: int = 15
    max_tokens: int = 256
    workloads: tuple[str, ...] = ("code,prose",)
    sweep_workload: str = "code"
    baseline: str | None = None
    sign: str | None = None
    sign_identity: str | None = None
    budget_min: float | None = None
    formats: str = "md,pdf"
    probe: bool = True
    logs: tuple[str, ...] = ()  # selfcheck preset: the server's log files
    extra: dict = field(default_factory=dict)  # preset-specific settings (JSON values)

    def to_json(self) -> dict:
        doc = asdict(self)
        doc["depths"] = list(self.depths)
        doc["workloads"] = list(self.workloads)
        doc["logs"] = list(self.logs)
        return doc

    @classmethod
    def from_json(cls, doc: dict) -> "SessionOptions":
        return cls(**{**doc, "depths": tuple(doc.get("depths") or ()),
                      "workloads": tuple(doc.get("workloads") or ()),
                      "logs": tuple(doc.get("logs") or ())})


def _step(step_id: str, kind: str, group: str | None, **inputs) -> dict:
    return {"id": step_id, "kind": kind, "group": group, "inputs": inputs, "state": PENDING,
            "reason": None, "launch": None, "started": None, "ended": None, "notes": []}


def base_depth(options: SessionOptions) -> int:
    """The speculative depth of the deployment as given (the protocol launches)."""
    return int(options.extra.get("base_depth", 0))


def build_steps(options: SessionOptions) -> list[dict]:
    """Every step of the session, in order, all pending."""
    steps: list[dict] = []
    protocol = {"workloads": list(options.workloads), "requests": options.requests,
                "max_tokens": options.max_tokens}
    attached = options.deployment is None
    for index in range(1, 1 if attached else options.launches + 1):
        group = f"launch-{index}"
        steps.append(_step(group, "launch", group, index=index, depth=base_depth(options),
                           collect=True))
        # the protocol first: the probe's traffic would fall into its log windows
        steps.append(_step(f"protocol-{index}", "protocol", group, **protocol))
        if index == 1 and options.probe:
            steps.append(_step(f"probe-{index}", "probe", group, baseline=options.baseline))
        steps.append(_step(f"stalls-{index}", "stalls", None, of=group))
    if attached:  # an endpoint the tool did not start: one measurement, its log classified
        steps.append(_step("protocol-1", "protocol", None, logs=list(options.logs),
                           metrics=options.extra.get("metrics", ""), **protocol))
        if options.probe:
            steps.append(_step("probe-1", "probe", None, baseline=options.baseline,
                               reference=options.extra.get("reference")))
        if options.logs:
            steps.append(_step("logs-1", "logs", None, logs=list(options.logs)))
            steps.append(_step("stalls-1", "stalls", None, log=options.logs[0]))
    sweep_depths = [d for d in options.depths if d != base_depth(options)]
    if not attached and sweep_depths:
        steps.append(_step("sweep", "sweep", None, depths=list(options.depths),
                           method=options.method, workload=options.sweep_workload,
                           requests=options.requests, max_tokens=options.max_tokens,
                           base_launches=[f"launch-{i}" for i in range(1, options.launches + 1)]))
    if not attached:
        steps.append(_step("envdiff", "envdiff", None))
    steps.append(_step("report", "report", None, formats=options.formats,
                       signed=options.sign is not None))
    if options.sign is not None and options.preset != "selfcheck":  # selfcheck may sign with an agent key
        steps.append(_step("signature", "signature", None, key=options.sign))
    return steps


@dataclass(frozen=True)
class LabAssumptions:
    """What a launch costs in the lab when nothing is measured yet (seconds, tok/s)."""

    startup_s: float = 165.0  # the seed's cold start: 2 min 45 s
    tok_s: float = 28.0
    teardown_s: float = 20.0
    probe_s: float = 60.0
    gap_s: float = 10.0  # node-state checks between launches


def _protocol_tokens(inputs: dict, workloads: int) -> int:
    return int(inputs.get("requests", 0)) * int(inputs.get("max_tokens", 0)) * workloads


def estimate_s(steps: list[dict], assume: LabAssumptions, workloads: int = 2,
               sweep_launches_per_depth: int = 1) -> float:
    """Lab seconds of the steps not yet done: launches at `assume.startup_s`, tokens at
    `assume.tok_s` (one stream at a time), the sweep one launch per depth on one workload."""
    total = 0.0
    for step in steps:
        if step["state"] == DONE:
            continue
        kind, inputs = step["kind"], step["inputs"]
        if kind == "launch":
            total += assume.startup_s + assume.teardown_s + assume.gap_s
        elif kind == "probe":
            total += assume.probe_s
        elif kind == "protocol":
            total += _protocol_tokens(inputs, workloads) / assume.tok_s
        elif kind == "sweep":
            depths = [d for d in inputs["depths"] if d != 0]
            per_launch = (assume.startup_s + assume.teardown_s + assume.gap_s
                          + _protocol_tokens(inputs, 1) / assume.tok_s)
            total += per_launch * len(depths) * sweep_launches_per_depth
        else:
            total += 5.0
    return round(total, 1)
