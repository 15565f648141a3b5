"""The Ray backend's pieces of a launch plan: `ray start` per node, the Ray watcher, the refusal.

Pure (no I/O). `ray start` gets every port pinned from `engine.ray_port` (so a firewall rule
or a lab can name them), the dashboard and usage stats off, an optional small object store and
per-node temp folder (`engine.ray_temp_dir/NODE`: nodes that share one filesystem, as the
network-namespace lab's do, must not share Ray's session folder), and the node's own extra
arguments (`engine.ray_node_args`, e.g. `--resources` on one node only).

The watcher is a short Python program (WATCH_SOURCE, this module's own text, run with the
node's interpreter as `python -c`) started beside `ray start` on every node: it follows Ray's
own logs in the node's session folder (RAY_LOGS, at most WATCH_MAX_BYTES per file) and, on the
head, prints `ray status` whenever its output changes. Its lines are the node's `ray-watch`
log in the bundle, recorded, bounded and redacted like any process output; each starts with
`ray-watch ` (so the stall detector counts none of them as startup progress,
rules/_vocabulary.yaml `ray_watch`).
"""

from __future__ import annotations

import re

from sparktriage.config.deployment import Engine
from sparktriage.config.lab import LabNode

# ports relative to engine.ray_port (the GCS port); worker processes get RAY_PORT+100..+199
PORT_OFFSETS = (("--node-manager-port", 1), ("--object-manager-port", 2),
                ("--runtime-env-agent-port", 3), ("--dashboard-agent-grpc-port", 4),
                ("--dashboard-agent-listen-port", 5), ("--metrics-export-port", 6),
                ("--min-worker-port", 100), ("--max-worker-port", 199))
RAY_LOGS = ("gcs_server.out", "raylet.out", "monitor.log")  # head; workers: raylet.out only
WATCH_MAX_BYTES = 2 << 20
WATCH_INTERVAL_S = 5.0

# vLLM's own words when the platform has no Ray device key (vllm/v1/executor/ray_utils.py)
REFUSAL = re.compile(r"current platform (\S+) does not support ray\.?")


def temp_dir(engine: Engine, node: LabNode) -> str | None:
    return f"{engine.ray_temp_dir.rstrip('/')}/{node.name}" if engine.ray_temp_dir else None


def start_argv(engine: Engine, node: LabNode, head: LabNode) -> list[str]:
    """`ray start` on `node` (the head when it is `head`), blocking, in the foreground."""
    port = engine.ray_port
    if node is head:
        argv = [engine.ray, "start", "--head", "--port", str(port), "--include-dashboard",
                "false"]
    else:
        argv = [engine.ray, "start", "--address", f"{head.host}:{port}"]
    argv += ["--node-ip-address", node.host, "--disable-usage-stats"]
    for flag, offset in PORT_OFFSETS:
        argv += [flag, str(port + offset)]
    if engine.ray_object_store_mb is not None:
        argv += ["--object-store-memory", str(engine.ray_object_store_mb * 1_000_000)]
    folder = temp_dir(engine, node)
    if folder:
        argv += ["--temp-dir", folder]
    return argv + list(engine.ray_args) + list(engine.ray_node_args.get(node.name, [])) + ["--block"]


def watch_argv(python: str, engine: Engine, node: LabNode, head: LabNode) -> list[str]:
    """The watcher on `node`: Ray's logs there, and `ray status` on the head."""
    folder = temp_dir(engine, node) or "/tmp/ray"
    logs = RAY_LOGS if node is head else ("raylet.out",)
    address = f"{head.host}:{engine.ray_port}" if node is head else ""
    return [python, "-c", WATCH_SOURCE, engine.ray, folder + "/session_latest/logs",
            ",".join(logs), address, str(WATCH_INTERVAL_S), str(WATCH_MAX_BYTES)]


def refusal(line: str) -> str | None:
    """The refusal sentence when a log line holds it."""
    found = REFUSAL.search(line)
    return found.group(0) if found else None


# Run on the node as `python -c WATCH_SOURCE RAY LOGDIR NAMES ADDRESS INTERVAL MAX_BYTES`: only
# the standard library, argv lists (no shell), every file read bounded; stops when killed.
WATCH_SOURCE = r'''
import os, subprocess, sys, time
ray, folder, names, address, interval, cap = sys.argv[1:7]
interval, cap = float(interval), int(cap)
offsets, last_status = {}, None
def out(text):
    sys.stdout.write(text + "\n")
while True:
    for name in names.split(","):
        path = os.path.join(folder, name)
        try:
            fh = open(path, "rb")
        except OSError:
            continue
        with fh:
            done = offsets.get(name, 0)
            if done >= cap:
                continue
            fh.seek(done)
            chunk = fh.read(cap - done)
            end = chunk.rfind(b"\n") + 1
            for raw in chunk[:end].splitlines():
                out("ray-watch " + name + " | " + raw.decode("utf-8", "replace")[:2000])
            offsets[name] = done + end
            if offsets[name] >= cap:
                out("ray-watch " + name + " | (capped at %d bytes)" % cap)
    if address:
        try:
            done = subprocess.run([ray, "status", "--address", address], stdin=subprocess.DEVNULL,
                                  capture_output=True, timeout=60)
            text = done.stdout.decode("utf-8", "replace")[-20000:]
        except (OSError, subprocess.TimeoutExpired) as exc:
            text = "failed: %s" % exc
        body = [l for l in text.splitlines() if not l.startswith("======== Autoscaler status")]
        if body != last_status:
            last_status = body
            for line in text.splitlines():
                out("ray-watch ray-status | " + line)
    sys.stdout.flush()
    time.sleep(interval)
'''
