"""SYNTHETIC run directories for report tests and the report benchmark.

Nothing here was measured. The generator writes, from a fixed seed, a run directory in the
documented shapes (docs/formats.md and the JSON contracts of `bench`, `logs`, `stalls`, `probe`,
the `sweep.json` shape of docs/formats.md): per launch realistic raw request records (one record
per request, one entry per streamed chunk with arrival time, token ids, logprob count and
cumulative usage, several tokens per chunk under speculative decoding), the bench document
derived from them by the real bench code, and log/stall/probe/reconcile documents and an
evidence bundle's environment captures. `plant` adds secrets and identifying names in the
places real ones turn up (deployment env, command lines, log-derived text, URLs, environment
captures) so that redaction tests can check that none survives. Every document says
`"synthetic": true`.
"""

from __future__ import annotations

import datetime as _dt
import json
import random
from dataclasses import dataclass
from pathlib import Path

import yaml

from sparktriage.bench.protocol import rebuild
from sparktriage.logs.series import StatsWindow
from sparktriage.reconcile.launch import format_times
from sparktriage.reconcile.windows import delivered_from_records, reconcile
from sparktriage.store.documents import dumps
from sparktriage.store.rundir import LaunchDir


def _write_raw(path: Path, document: dict) -> None:
    """Write a document as it is: the planted secrets must reach the disk (a run directory
    edited by hand or written by an older version), which the product's writers never let
    happen (store/documents.py redacts); the report's own stage must still catch them."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(document, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


def _iso(t: float) -> str:
    """Unix seconds as the logs document writes times (ISO 8601, UTC, milliseconds)."""
    return (_dt.datetime.fromtimestamp(t, _dt.timezone.utc).isoformat(timespec="milliseconds")
            .replace("+00:00", "Z"))


def _launch_write(launch: LaunchDir, name: str, document: dict) -> None:
    _write_raw(launch.path / name, {"schema_version": 1, **document})


class _RawRecords:
    """Append-only records written as they are (see _write_raw)."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self._fh = open(path, "a", encoding="utf-8")

    def append(self, record: dict) -> None:
        self._fh.write(dumps(record) + "\n")

    def __enter__(self) -> "_RawRecords":
        return self

    def __exit__(self, *exc) -> None:
        self._fh.close()


T0 = 1_767_225_600.0  # 2026-01-01T00:00:00Z: synthetic clocks start here
SECRETS = {
    "openai": "sk-proj-Zq8vT3xK9mW2pL5nR7sB4dF6gH1jK0aS",
    "hf": "hf_QwErTyUiOpAsDfGhJkLzXcVbNm1234567",
    "url_password": "Tr0ub4dor-and-3",
    "flag_key": "plainflagsecret-77x",
    "aws": "AKIAIOSFODNN7EXAMPL3",
    "env_password": "p4ss-w0rd-env-9",
    "private_key_line": "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW",
    "bearer": "eyQ9fake-bearer-token-123456",
    "ngc": "nvapi-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789",
}
IDENTIFYING = {"hosts": ["spark-a1.lab.acme-ai.net", "spark-a2.lab.acme-ai.net"],
               "ips": ["10.40.1.11", "10.40.1.12"], "user": "jdoe"}


@dataclass(frozen=True)
class SyntheticSpec:
    """Shape of the synthetic run."""

    depths: tuple[int, ...] = (0,)
    launches_per_depth: int = 1
    requests: int = 15
    warmup: int = 1
    max_tokens: int = 256
    workloads: tuple[str, ...] = ("code", "prose")
    nodes: int = 2
    seed: int = 7
    plant: bool = False
    stall_every: int = 3  # every n-th launch gets a classified stall on one node
    rates: tuple[tuple[int, float], ...] = ()  # (depth, delivered tok/s) replacing the default curve
    spread: float = 0.03  # a launch's rate is its depth's times uniform(1 - spread, 1 + spread)


def _host(spec: SyntheticSpec, i: int) -> str:
    return IDENTIFYING["hosts"][i] if spec.plant and i < 2 else f"node-{i + 1:02d}"


def _request(rng: random.Random, workload: str, index: int, warmup: bool, sent: float,
             depth: int, max_tokens: int, rate: float) -> dict:
    chunks, t, produced = [], rng.uniform(0.05, 0.12), 0
    next_id = 1000 + index
    while produced < max_tokens:
        n = 1 if depth == 0 else min(max_tokens - produced, rng.randint(1, depth + 1))
        ids = [(next_id + k) % 32000 for k in range(n)]
        next_id += n
        produced += n
        chunks.append({"t": round(t, 6), "ids": ids, "lp": n, "usage": produced,
                       "text": " tok" * n, "finish": "length" if produced >= max_tokens else None})
        t += n / rate * rng.uniform(0.85, 1.15)
    return {"type": "request", "schema_version": 1, "workload": workload, "index": index,
            "warmup": warmup, "path": "/v1/completions", "max_tokens": max_tokens,
            "ignore_eos": True, "sent_at": None, "sent_unix": round(sent, 6), "http_status": 200,
            "chunks": chunks, "final_usage": {"completion_tokens": produced, "prompt_tokens": 90},
            "t_final": round(t, 6), "t_end": round(t + 0.001, 6), "done": True,
            "events": len(chunks) + 2, "status": "ok", "reason": None}


def _launch(root: Path, label: str, spec: SyntheticSpec, rng: random.Random, depth: int,
            start: float, number: int) -> dict:
    launch = LaunchDir(root / "launches" / label)
    launch.path.mkdir(parents=True, exist_ok=True)
    curve = dict(spec.rates).get(depth, 27.8 * (1.0 + 0.12 * min(depth, 2) - 0.05 * max(depth - 2, 0)))
    base = curve * rng.uniform(1.0 - spec.spread, 1.0 + spec.spread)
    endpoint = (f"http://{_host(spec, 0)}:8000" if spec.plant else "http://127.0.0.1:8000")
    workloads = [{"name": w, "api": "completions", "prompt": f"synthetic {w} prompt",
                  "max_tokens": spec.max_tokens, "temperature": 0.0, "ignore_eos": True,
                  "requests": spec.requests, "warmup": spec.warmup} for w in spec.workloads]
    _launch_write(launch, "launch.json", {"kind": "launch", "synthetic": True, "endpoint": endpoint,
                                 "model": "synthetic-moe-fp4", "server_version": "0.32.0",
                                 "workloads": workloads,
                                 "client": {"api_key": "set" if spec.plant else None}})
    ready = start + 95.0 + rng.uniform(-5, 5)
    sent = ready + 5.0
    with _RawRecords(launch.requests_path) as writer:
        for w_index, workload in enumerate(spec.workloads):
            rate = base * (1.0 if w_index == 0 else 0.93)
            for index in range(spec.warmup + spec.requests):
                record = _request(rng, workload, index, index < spec.warmup, sent, depth,
                                  spec.max_tokens, rate)
                if spec.plant and index == 0 and w_index == 0:
                    record["chunks"][0]["text"] = f" export HF_TOKEN={SECRETS['hf']}"
                writer.append(record)
                sent += record["t_end"] + 0.05
    _launch_write(launch, "capabilities.json", {w: {"sources": ["token_ids", "logprobs", "continuous_usage"],
                                           "notes": []} for w in spec.workloads})
    bench = rebuild(launch)
    _side_documents(launch, spec, rng, start, ready, sent, depth, number, bench)
    means = [w["summary"]["decode_tok_s"]["mean"] for w in bench["workloads"]]
    return {"label": label, "delivered_tok_s": means[0],
            "acceptance_length": None if depth == 0 else round(1.0 + 0.55 * depth - 0.06 * depth ** 2, 3)}


def _side_documents(launch: LaunchDir, spec: SyntheticSpec, rng: random.Random, start: float,
                    ready: float, end: float, depth: int, number: int, bench: dict) -> None:
    nodes = [_host(spec, i) for i in range(spec.nodes)]
    names = ["resolve", "distributed-init", "weight-read", "post-load", "compile", "kv-profile",
             "cuda-graphs", "ready"]
    phases, t = [], start
    for i, node in enumerate(nodes):
        t = start + rng.uniform(0, 1)
        for name in names:
            length = {"weight-read": 40.0 + 8 * i, "compile": 18.0}.get(name, rng.uniform(1, 6))
            phases.append({"name": name, "node": node, "start": round(t, 3),
                           "end": round(t + length, 3), "duration_s": round(length, 3)})
            t += length
    stall = number % spec.stall_every == 0
    findings = []
    if stall:
        w = next(p for p in phases if p["name"] == "weight-read" and p["node"] == nodes[-1])
        findings.append({
            "kind": "stall", "node": nodes[-1], "start": w["start"] + 5, "end": w["end"],
            "duration_s": round(w["end"] - w["start"] - 5, 3), "phase": "weight-read",
            "verdict": {"id": "cold-storage", "confidence": 0.82,
                        "evidence": [f"reads pinned at 480 MB/s on nvme0n1 of {nodes[-1]}",
                                     "iowait 38% while one loader thread is in D state"],
                        "alternatives": [{"id": "mmap-fault-crawl",
                                          "why_not": "read rate equals the device limit"}],
                        "fix": "warm the page cache or prefetch the checkpoint before launch"}})
    _launch_write(launch, "stalls.json", {"kind": "sparktriage-stalls", "synthetic": True, "phases": phases,
                                 "findings": findings})
    windows, t = [], ready + 15.0  # the end of the first 10 s window after the first request
    summary = bench["workloads"][0]["summary"]
    # A measured run may have no decode rate (every response arrived in one burst): fall back.
    base = summary["decode_tok_s"]["mean"] or summary["e2e_tok_s"]["mean"] or 100.0
    while t < end + 10.0:
        windows.append({"t": round(t, 3), "value": round(base * rng.uniform(1.05, 1.45), 2)})
        t += 10.0
    values = [w["value"] for w in windows]
    log_lines = "vllm serve synthetic --api-key " + SECRETS["flag_key"] if spec.plant else "no errors"
    _launch_write(launch, "logs.json", {
        "kind": "logs", "synthetic": True, "version": "0.32.0",
        "phases": [{k: p[k] for k in ("name", "start", "end", "duration_s")} for p in phases
                   if p["node"] == nodes[0]],
        "reported": {"loading_weights_s": 39.2, "torch_compile_s": 17.5, "init_engine_s": 80.1},
        "throughput": {"generation": {"windows": len(windows), "mean": sum(values) / len(values),
                                      "mean_active": sum(values) / len(values), "peak": max(values)},
                       "prompt": {"windows": 0, "mean": 0.0, "mean_active": 0.0, "peak": 0.0},
                       "interval_s": 10.0, "hidden_idle_windows": 0, "engines": ["0"],
                       "windows": [{"end": _iso(w["t"]), "start": _iso(w["t"] - 10.0),
                                    "start_estimated": False, "engine": "0", "node": None,
                                    "prompt": 0.0, "generation": w["value"], "level": "INFO",
                                    "running": 1, "waiting": 0} for w in windows],
                       "windows_kept": len(windows)},
        "spec_decode": None if depth == 0 else {"windows": len(windows), "mean_acceptance_length":
                                                1.0 + 0.55 * depth, "accepted": 1000 * depth,
                                                "drafted": 1400 * depth, "per_position": []},
        "kernels": ["CutlassNvFp4MoE"], "errors": [{"time": None, "text": log_lines}]})
    _launch_write(launch, "reconcile.json", {"synthetic": True, **_reconciled(launch, windows)})
    _launch_write(launch, "probe.json", {"kind": "probe", "synthetic": True, "verdict": "healthy",
                                "pattern": None, "baseline": None, "tokens_spent": 6120, "wall_s": 21.4,
                                "families": [{"name": "logprob-sanity", "status": "ok",
                                              "numbers": {"finite": 1.0, "mean_top1": -0.41},
                                              "evidence": ["all logprobs finite and <= 0"]},
                                             {"name": "known-answer", "status": "ok",
                                              "numbers": {"passed": 23, "total": 24},
                                              "evidence": ["23/24 probes answered"]}]})
    bundle = launch.path / "bundle"
    _write_raw(bundle / "bundle.json", {"schema_version": 1, "kind": "sparktriage-bundle",
                                            "synthetic": True, "nodes": nodes, "origin": "launch"})
    for i, node in enumerate(nodes):
        env = {"schema_version": 1, "hostname": node, "driver": "580.95.05", "cuda": "13.0",
               "vllm": "0.32.0", "nccl": "2.27.7" if i == 0 else "2.26.2",
               "kernel": "6.11.0-1016-nvidia", "nics": [{"name": "enp1s0f0np0", "mtu": 9000}],
               "versions": {"python": "3.12.3", "torch": "2.9.0+cu130", "vllm": "0.32.0",
                            "cuda": "13.0", "nccl": "2.27.7" if i == 0 else "2.26.2"},
               "gpus": [{"name": "NVIDIA GB10", "memory_total": 128 * 2 ** 30}],
               # a real capture lists every package: the report must not print them all
               "packages": {f"synthetic-pkg-{k:03d}": f"1.{k}.0" for k in range(200)},
               "env": {"NCCL_SOCKET_IFNAME": "enp1s0f0np0", "VLLM_HOST_IP": IDENTIFYING["ips"][i] if spec.plant and i < 2 else f"10.0.0.{i + 1}"}}
        if spec.plant:
            env["env"].update({"HF_TOKEN": SECRETS["hf"], "DB_PASSWORD": SECRETS["env_password"],
                               "USER": IDENTIFYING["user"], "NGC_API_KEY": SECRETS["ngc"]})
            env["cmdline"] = ["vllm", "serve", "/models/m", "--api-key", SECRETS["flag_key"]]
            env["ssh_private_key"] = ("-----BEGIN OPENSSH PRIVATE KEY-----\n"
                                      + SECRETS["private_key_line"] + "\n-----END OPENSSH PRIVATE KEY-----")
        _write_raw(bundle / "nodes" / node / "environment.json", env)
    _write_raw(bundle / "environment-diff.json", {"schema_version": 1, "differences": [
        {"key": "nccl", "values": {nodes[0]: "2.27.7", nodes[-1]: "2.26.2"}}]})


def _reconciled(launch: LaunchDir, windows: list[dict]) -> dict:
    """reconcile.json made by the real reconciliation code (reconcile.windows.reconcile) from
    the launch's requests and the synthetic log's stats windows, in the real document's shape."""
    records = [json.loads(line) for line in launch.requests_path.read_text(encoding="utf-8").splitlines()
               if line.strip()]
    stats = [StatsWindow(t=w["t"], engine="0", prompt=0.0, generation=w["value"], level="INFO",
                         node="", start=w["t"] - 10.0) for w in windows]
    doc = reconcile(delivered_from_records(records), None, stats, log_edge_s=1.0)
    doc["inputs"] = {"requests": "requests.jsonl", "logs": ["synthetic stats windows (logs.json)"],
                     "metrics": False}
    return format_times(doc, _dt.timezone.utc)


def add_side_documents(launch_path: Path, plant: bool = True, seed: int = 7) -> None:
    """SYNTHETIC logs/stalls/probe/reconcile/bundle documents beside a launch whose bench
    results are real (requests.jsonl and bench.json from an actual server)."""
    launch = LaunchDir(launch_path)
    bench = json.loads((launch.path / "bench.json").read_text(encoding="utf-8"))
    records = [json.loads(line) for line in launch.requests_path.read_text(encoding="utf-8").splitlines()
               if line.strip()]
    first = min(r["sent_unix"] for r in records)
    last = max(r["sent_unix"] + (r.get("t_end") or 0.0) for r in records)
    spec = SyntheticSpec(plant=plant, stall_every=1)
    _side_documents(launch, spec, random.Random(seed), first - 100.0, first - 5.0, last, 0, 1, bench)


def make_run(root: Path, spec: SyntheticSpec = SyntheticSpec()) -> Path:
    """Write a synthetic run directory at root and return it."""
    rng = random.Random(spec.seed)
    root.mkdir(parents=True, exist_ok=True)
    command = ["sparktriage", "session", "run", "lab.yaml"]
    if spec.plant:
        command += ["--api-key", SECRETS["flag_key"],
                    f"--endpoint=https://admin:{SECRETS['url_password']}@{IDENTIFYING['hosts'][0]}:8000"]
    _write_raw(root / "run.json", {"schema_version": 1, "kind": "sparktriage-run",
                                       "synthetic": True, "tool_version": "0.1.0",
                                       "created": "2026-01-01T00:00:00.000000Z", "command": command})
    deployment = {"schema_version": 1, "synthetic": True, "name": "synthetic-moe-fp4",
                  "model": {"path": "/models/synthetic-moe-fp4", "quantization": "nvfp4",
                            "active_params": 32e9, "bytes_per_param": 0.5625},
                  "parallelism": {"tp": spec.nodes},
                  "roofline": {"hardware": "gb10", "model": "kimi-k2"},
                  "nodes": [{"host": _host(spec, i), "role": "head" if i == 0 else "worker"}
                            for i in range(spec.nodes)]}
    if spec.plant:
        deployment["nodes"][0]["ssh"] = f"{IDENTIFYING['user']}@{IDENTIFYING['hosts'][0]}"
        deployment["env"] = {"HF_TOKEN": SECRETS["hf"], "OPENAI_API_KEY": SECRETS["openai"],
                             "AWS_ACCESS_KEY_ID": SECRETS["aws"],
                             "MODEL_URL": f"https://{IDENTIFYING['user']}:{SECRETS['url_password']}@hub.acme-ai.net/m"}
        deployment["serve_args"] = ["--api-key", SECRETS["flag_key"], "--host", IDENTIFYING["ips"][0]]
        deployment["headers"] = {"Authorization": f"Bearer {SECRETS['bearer']}"}
    (root / "deployment.yaml").write_text(yaml.safe_dump(deployment, sort_keys=False), encoding="utf-8")
    start = T0
    points, number = [], 0
    for depth in spec.depths:
        launches = []
        for _ in range(spec.launches_per_depth):
            number += 1
            launches.append(_launch(root, f"L{number:03d}", spec, rng, depth, start, number))
            start += 900.0
        points.append({"depth": depth, "launches": launches,  # acceptance rate per draft position
                       "per_position": [round((0.8 - 0.02 * depth) * 0.82 ** i, 3)
                                                      for i in range(depth)]})
    if len(spec.depths) > 1:
        best = max(points, key=lambda p: sum(l["delivered_tok_s"] for l in p["launches"]))
        _write_raw(root / "sweep.json", {
            "schema_version": 1, "kind": "sweep", "synthetic": True, "method": "ngram",
            "workload": spec.workloads[0], "depths": points,
            "decision": {"depth": best["depth"], "reason": "highest mean delivered tok/s"},
            "comparisons": _comparisons(points, best["depth"])})
    return root


def _comparisons(points: list[dict], chosen: int) -> list[dict]:
    """The chosen depth's Welch tests against depth 0 and the runner-up, as the sweep writes them
    (sweep.document `comparisons`), over the launches' delivered rates."""
    from sparktriage.stats.compare import welch
    rates = {p["depth"]: [l["delivered_tok_s"] for l in p["launches"]] for p in points}
    others = sorted((d for d in rates if d != chosen and rates[d]),
                    key=lambda d: -sum(rates[d]) / len(rates[d]))
    against = ([0] if 0 in others else []) + [d for d in others[:1] if d != 0]
    return [{"depth": chosen, "versus": d, "test": welch(rates[d], rates[chosen]).as_dict()}
            for d in against]


def planted_values() -> list[str]:
    """Every planted secret and identifying string that must not appear in any output."""
    return list(SECRETS.values())


def identifying_values() -> list[str]:
    return IDENTIFYING["hosts"] + IDENTIFYING["ips"] + [IDENTIFYING["user"], "acme-ai"]


if __name__ == "__main__":  # pragma: no cover - manual use: python -m ... DIR
    import sys

    print(json.dumps(str(make_run(Path(sys.argv[1]), SyntheticSpec(depths=(0, 1, 2), plant=True)))))
