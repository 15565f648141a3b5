"""Benchmark: classify the stalls of an eight-node bundle of a one-hour startup.

    .venv/bin/python benchmarks/bench_stalls.py [--out benchmarks/results/stalls.json]

Builds (untimed) a synthetic evidence bundle in the format of docs/formats.md: 8 nodes, a
3600 s TP8 start whose node 3 crawls through its weight read (an mmap fault crawl) while the
other seven wait for it, samples every second (host, 2 disks, 3 interfaces, 4 processes with
16 threads each, 1 GPU) and py-spy dumps of 4 processes every 10 s. Then classifies it in a
fresh process, `sparktriage stalls` end to end (load, detect, score, document), and measures
wall time and peak RSS. In the same run it times a plain JSON pass over the same files (every
line parsed with the standard library) as the reference. Goal (docs/benchmarks.md): under
5 s and under 500 MB. Writes a JSON result and prints a one-line summary.
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

NODES = 8
DURATION_S = 3600
SLOW = 3
T0 = 1_790_000_000.0
GOAL_S, GOAL_MB = 5.0, 500.0


def _stamp(t: float) -> str:
    return time.strftime("%m-%d %H:%M:%S", time.gmtime(t))


def _line(t: float, proc: str, pid: int, msg: str) -> str:
    return f"({proc} pid={pid}) INFO {_stamp(t)} [bench.py:1] {msg}"


def _log(node: int) -> list[tuple[float, str]]:
    proc, pid = f"Worker_TP{node}", 5000 + node
    out = []
    if node == 0:
        out += [(0, _line(T0, "APIServer", 100, "vLLM server version 0.31.0, serving model /m")),
                (12, _line(T0 + 12, "APIServer", 100, "Resolved architecture: DeepseekV3ForCausalLM")),
                (25, _line(T0 + 25, "EngineCore", 200, "Initializing a V1 LLM engine (v0.31.0) with config: model='/m', tensor_parallel_size=8"))]
    out += [(40, _line(T0 + 40, proc, pid, f"world_size=8 rank={node} local_rank=0 distributed_init_method=tcp://10.0.0.1:29500 backend=nccl")),
            (45, _line(T0 + 45, proc, pid, "vLLM is using nccl==2.28.9")),
            (46, _line(T0 + 46, proc, pid, "Starting to load model /m...")),
            (46, _line(T0 + 46, proc, pid, "Filesystem type for checkpoints: EXT4. Checkpoint size: 100.00 GiB. Available RAM: 110.00 GiB."))]
    load_s = 3300 if node == SLOW else 90
    for i in range(1, 21):
        t = 46 + load_s * i / 20
        out.append((t, f"Loading safetensors checkpoint shards: {5 * i:3d}% Completed | {i}/20"))
    out.append((46 + load_s, _line(T0 + 46 + load_s, proc, pid, f"Loading weights took {load_s:.2f} seconds")))
    if node != SLOW:  # waiting at the first collective: vLLM's periodic shm warning
        for t in range(200, 3350, 60):
            out.append((t, _line(T0 + t, proc, pid, "No available shared memory broadcast block found in 60 seconds. This typically happens when some processes are hanging.")))
    out += [(3360, _line(T0 + 3360, proc, pid, "Model loading took 96.1 GiB memory and 3314.0 seconds")),
            (3362, _line(T0 + 3362, proc, pid, "Available KV cache memory: 12.5 GiB")),
            (3371, _line(T0 + 3371, proc, pid, "Graph capturing finished in 9 secs, took 0.52 GiB"))]
    if node == 0:  # the head; headless nodes never log that startup completed
        out += [(3380, _line(T0 + 3380, "EngineCore", 200, "init engine (profile, create kv cache, warmup model) took 20.31 s")),
                (3381, _line(T0 + 3381, "APIServer", 100, "Starting vLLM server on http://0.0.0.0:8000")),
                (3381, "INFO:     Application startup complete.")]
    return sorted(out)


def _threads(rng: random.Random, busy: float) -> list[dict]:
    threads = [{"tid": 9000 + i, "name": f"thread-{i}", "state": "S", "cpu_pct": round(rng.random(), 2)}
               for i in range(15)]
    return [{"tid": 9999, "name": "MainThread", "state": "R", "cpu_pct": busy}] + threads


def _write_node(root: Path, node: int) -> int:
    rng = random.Random(node)
    base = root / "nodes" / f"spark-{node:02d}"
    (base / "samples").mkdir(parents=True)
    (base / "logs").mkdir()
    (base / "clock.json").write_text(json.dumps({"offset_s": 0.0, "rtt_s": 0.0001, "method": "ssh"}))
    (base / "environment.json").write_text(json.dumps({"vllm": "0.31.0"}))
    with open(base / "logs" / "server.lines.jsonl", "w") as fh:
        for t, line in _log(node):
            fh.write(json.dumps({"t": T0 + t, "node": f"spark-{node:02d}", "stream": "stdout", "line": line}) + "\n")
    crawl = node == SLOW
    files = {k: open(base / "samples" / f"{k}.jsonl", "w") for k in ("host", "disk", "net", "procs", "gpu")}
    records = 0
    for s in range(DURATION_S):
        t = T0 + s + 0.5
        loading = 46 <= s <= 3346 and crawl
        files["host"].write(json.dumps({
            "t": t, "cpu": {"user": 3.0, "system": 8.0 if loading else 1.0, "iowait": 0.5, "idle": 88.5, "steal": 0.0},
            "ncpu": 20, "load1": 1.2, "mem": {"total": 130e9, "available": 80e9 - rng.random() * 1e9, "free": 50e9,
                                             "cached": 40e9, "dirty": 0, "writeback": 0, "swap_total": 16e9, "swap_free": 16e9},
            "swap_in_bps": 0.0, "swap_out_bps": 0.0, "pgmajfault_ps": 4000.0 if loading else 3.0,
            "psi": {"cpu_some": 1.0, "memory_some": 0.0, "memory_full": 0.0, "io_some": 0.4, "io_full": 0.0},
            "kswapd_cpu": 0.0}) + "\n")
        for dev in ("nvme0n1", "nvme1n1"):
            files["disk"].write(json.dumps({"t": t, "device": dev, "read_bps": 5.3e8 if loading and dev == "nvme0n1" else 0.0,
                                            "write_bps": 0.0, "reads_ps": 4000.0 if loading else 0.0, "busy_pct": 30.0 if loading else 1.0}) + "\n")
        for iface in ("enp1s0f0np0", "enP2p1s0f1np1", "eno1"):
            files["net"].write(json.dumps({"t": t, "iface": iface, "rx_bps": 2e4, "tx_bps": 2e4, "rx_pps": 20.0, "tx_pps": 20.0,
                                           "mtu": 9000, "oper_state": "up", "rdma": {"rx_bytes": 0.0, "tx_bytes": 0.0} if "np" in iface else None}) + "\n")
        procs = [("VLLM::Worker", "worker", 5000 + node, 95.0 if loading else 0.5),
                 ("VLLM::EngineCore", "engine-core", 200, 1.0), ("python3", "resource-tracker", 201, 0.0),
                 ("vllm", "api-server", 100, 0.5)]
        for name, role, pid, busy in procs:
            files["procs"].write(json.dumps({
                "t": t, "pid": pid, "ppid": 1, "name": name, "cmdline": "vllm serve /m --tensor-parallel-size 8", "role": role,
                "state": "R" if busy > 50 else "S", "cpu_user_pct": busy * 0.15, "cpu_system_pct": busy * 0.85, "cpu_iowait_pct": None,
                "rss": 4e9 + s * 1e6, "read_bps": 5.3e8 if busy > 50 else 0.0, "write_bps": 0.0, "read_chars_ps": 0.0,
                "majflt_ps": 4000.0 if busy > 50 else 0.0, "minflt_ps": 10.0, "ctx_vol_ps": 50.0, "ctx_invol_ps": 2.0,
                "num_threads": 40, "threads": _threads(rng, busy), "children": [], "rank": f"TP{node}",
                "read_bytes": int(s * 5.3e8), "starttime": 1000}) + "\n")
        files["gpu"].write(json.dumps({"t": t, "index": 0, "name": "NVIDIA GB10", "util_pct": 0.0, "mem_util_pct": 0.0,
                                       "power_w": 11.0, "sm_clock_mhz": 2400.0, "mem_clock_mhz": 0.0, "temp_c": 45.0,
                                       "mem_used": None, "mem_total": None, "mem_source": "unified-system", "throttle_reasons": []}) + "\n")
        records += 11
    for fh in files.values():
        fh.close()
    with open(base / "stacks.jsonl", "w") as fh:
        for s in range(0, DURATION_S, 10):
            for name, role, pid in (("VLLM::Worker", "worker", 5000 + node), ("VLLM::EngineCore", "engine-core", 200),
                                    ("python3", "resource-tracker", 201), ("vllm", "api-server", 100)):
                frames = [{"function": f"frame_{k}", "file": f"vllm/module_{k}.py", "line": k} for k in range(28)]
                if role == "worker" and node == SLOW and 46 <= s <= 3346:
                    frames = [{"function": "get_tensor", "file": "safetensors/torch.py", "line": 1},
                              {"function": "copy_", "file": "torch/_tensor.py", "line": 2}] + frames
                fh.write(json.dumps({"t": T0 + s + 0.7, "pid": pid, "role": role, "rank": f"TP{node}", "name": name,
                                     "threads": [{"tid": pid + k, "name": "MainThread" if k == 0 else f"t{k}", "active": k == 0,
                                                  "gil": False, "frames": frames} for k in range(3)], "error": None}) + "\n")
                records += 1
    with open(base / "dmesg.jsonl", "w") as fh:
        fh.write(json.dumps({"t": T0 - 100, "line": "Booting Linux", "level": "info", "kernel_t": 1.0}) + "\n")
    return records


def build_bundle(root: Path) -> dict:
    names = [f"spark-{n:02d}" for n in range(NODES)]
    records = sum(_write_node(root, n) for n in range(NODES))
    (root / "bundle.json").write_text(json.dumps({
        "schema_version": 1, "kind": "sparktriage-bundle", "created": T0, "tool_version": "bench",
        "origin": "launch", "target": {"deployment": "bench"}, "nodes": names, "interval_s": 1.0,
        "started": T0, "ended": T0 + DURATION_S, "outcome": "ready"}))
    with open(root / "manifest.jsonl", "w") as fh:
        for name in names:
            for collector in ("host", "disk", "net", "procs", "gpu", "stacks", "dmesg"):
                fh.write(json.dumps({"collector": collector, "node": name, "command": None, "started": T0,
                                     "ended": T0 + DURATION_S, "duration_s": DURATION_S, "rc": 0, "records": 1,
                                     "truncated": False, "skipped": None, "error": None}) + "\n")
    size = sum(p.stat().st_size for p in root.rglob("*") if p.is_file())
    return {"nodes": NODES, "duration_s": DURATION_S, "records": records, "bytes": size}


_CLASSIFY = """
import json, resource, sys, time
from pathlib import Path
start = time.perf_counter()
from sparktriage.stalls.analyze import analyze, load_rules
document, _ = analyze(Path(sys.argv[1]), load_rules())
elapsed = time.perf_counter() - start
usage = resource.getrusage(resource.RUSAGE_SELF)
peak = usage.ru_maxrss / 1024
print(json.dumps({"seconds": elapsed, "cpu_s": usage.ru_utime + usage.ru_stime, "peak_mb": peak, "findings": [
    [f["node"], f["kind"], f["verdict"]["id"], round(f["duration_s"])] for f in document["findings"]]}))
"""

_REFERENCE = """
import json, resource, sys, time
from pathlib import Path
start = time.perf_counter()
n = 0
for path in sorted(Path(sys.argv[1]).rglob("*.jsonl")):
    with open(path, "rb") as fh:
        for line in fh:
            json.loads(line); n += 1
usage = resource.getrusage(resource.RUSAGE_SELF)
print(json.dumps({"seconds": time.perf_counter() - start, "records": n,
                  "cpu_s": usage.ru_utime + usage.ru_stime, "peak_mb": usage.ru_maxrss / 1024}))
"""


def _child(code: str, bundle: Path) -> dict:
    out = subprocess.run([sys.executable, "-c", code, str(bundle)], capture_output=True,
                         text=True, timeout=600)
    if out.returncode != 0:
        raise SystemExit(f"benchmark child failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results/stalls.json"))
    parser.add_argument("--repeat", type=int, default=3, help="classification runs (best kept)")
    parser.add_argument("--keep", type=Path, help="build the bundle here and keep it (reused "
                        "when it exists)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-stalls-") as tmp:
        bundle = args.keep or Path(tmp) / "bundle"
        t = time.perf_counter()
        if (bundle / "bundle.json").exists():
            info = {"nodes": NODES, "duration_s": DURATION_S, "reused": str(bundle),
                    "records": None, "bytes": sum(p.stat().st_size for p in bundle.rglob("*")
                                                  if p.is_file())}
        else:
            bundle.mkdir(parents=True)
            info = build_bundle(bundle)
        info["build_s"] = round(time.perf_counter() - t, 2)
        runs = [_child(_CLASSIFY, bundle) for _ in range(args.repeat)]
        reference = _child(_REFERENCE, bundle)
    best = min(runs, key=lambda r: r["seconds"])
    result = {
        "schema_version": 1, "kind": "sparktriage-benchmark", "benchmark": "stalls",
        "bundle": info,
        "classify": {"seconds": [round(r["seconds"], 3) for r in runs], "best_s": round(best["seconds"], 3),
                     "cpu_s": [round(r["cpu_s"], 3) for r in runs],
                     "peak_mb": round(max(r["peak_mb"] for r in runs), 1), "findings": best["findings"]},
        "reference_json_pass": {"seconds": round(reference["seconds"], 3), "records": reference["records"],
                                "cpu_s": round(reference["cpu_s"], 3),
                                "peak_mb": round(reference["peak_mb"], 1)},
        "ratio_to_reference": round(best["seconds"] / reference["seconds"], 2),
        "goal": {"seconds": GOAL_S, "peak_mb": GOAL_MB},
        "ratio_to_goal": {"seconds": round(best["seconds"] / GOAL_S, 2),
                          "peak_mb": round(max(r["peak_mb"] for r in runs) / GOAL_MB, 2)},
    }
    result["met"] = result["ratio_to_goal"]["seconds"] < 1 and result["ratio_to_goal"]["peak_mb"] < 1
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"stalls: {reference['records']} records ({info['bytes'] / 1e6:.0f} MB), classified in "
          f"{best['seconds']:.2f} s (goal {GOAL_S} s), peak {result['classify']['peak_mb']:.0f} MB "
          f"(goal {GOAL_MB:.0f} MB), CPU {min(r['cpu_s'] for r in runs):.2f} s; "
          f"plain JSON pass {reference['seconds']:.2f} s "
          f"(ratio {result['ratio_to_reference']}); goal {'met' if result['met'] else 'NOT met'}")


if __name__ == "__main__":
    main()
