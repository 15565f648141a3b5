"""Serve the test bed's models through the product's own launch path.

A `ServeSpec` (what to serve) becomes a one-node deployment (`deployment()`), and `served()`
runs it with `launch.run.launched`: the launch supervisor starts `vllm serve` under its node
agent with the collectors, waits for readiness (the first `GET /health` answering 200), and
tears the process tree down at the end. So the real-vLLM tests of bench, probe, report and
the demo exercise the supervisor, readiness and teardown that users get. The server's line
records (receive time, stream, line) are the bundle's `nodes/local/logs/server.lines.jsonl`.
"""

from __future__ import annotations

import json
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

import yaml

from sparktriage.config.deployment import load_deployment
from sparktriage.bundle import layout
from sparktriage.collect.plan import COLLECTORS
from sparktriage.launch.plan import build_plan
from sparktriage.launch.run import Launched, launched
from sparktriage.store.rundir import RunDir
from sparktriage.testbed.paths import Testbed
from sparktriage.testbed.ports import free_port

NODE = "local"
# The CPU build's defaults fail on small NUMA nodes (docs/testbed.md); nothing may phone home.
SERVE_ENV = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "VLLM_CPU_KVCACHE_SPACE": "1",
             "VLLM_NO_USAGE_STATS": "1", "DO_NOT_TRACK": "1"}
# The engine's model runs inside the engine-core process (vLLM's uniprocess executor) instead of
# a worker process of its own: one fewer Python that imports torch and vLLM, so a start is
# shorter, but decoding is slower (docs/testbed.md). For servers that answer a few short probes
# (the garbage variants); the shared servers, the demo and every lab deployment keep vLLM's
# multiprocess layout.
ONE_PROCESS = {"VLLM_ENABLE_V1_MULTIPROCESSING": "0"}


@dataclass(frozen=True)
class ServeSpec:
    """What to serve and how (the deployment is built from this; no shell ever sees it)."""

    model: Path
    served_name: str = "tiny"
    max_model_len: int = 512
    enforce_eager: bool = True
    speculative_config: str | None = None  # JSON, as `--speculative-config` takes it
    extra_args: tuple[str, ...] = ()
    env: dict = field(default_factory=dict)
    engine: tuple[str, ...] | None = None  # argv prefix instead of the test bed's `vllm`
    collectors: bool = True  # False: the launch runs no collector (benchmarks of collection)


def cache_env(bed: Testbed, scratch: Path) -> dict[str, str]:
    """Where a server keeps its compile and model-information caches: the bed's shared folder
    when it has one (warm after the first start, as on a lab node), else fresh in `scratch`."""
    root = bed.cache or scratch
    return {"VLLM_CACHE_ROOT": str(root / "vllm-cache"),
            "TORCHINDUCTOR_CACHE_DIR": str(root / "inductor-cache")}


def temp_env(bed: Testbed) -> dict[str, str]:
    """With a shared cache folder, a server's temporary files go under it too: vLLM leaves a
    `vllm_dist_*` rendezvous file per start, and Inductor builds its precompiled header (about
    150 MB) under the temporary folder whatever its cache variable says. Kept there, they are
    shared by the bed's servers and removed with the folder instead of piling up in /tmp."""
    if bed.cache is None:
        return {}
    folder = bed.cache / "tmp"
    folder.mkdir(parents=True, exist_ok=True)
    return {"TMPDIR": str(folder)}


def deployment(bed: Testbed, spec: ServeSpec, port: int, scratch: Path,
               startup_s: float = 420.0) -> dict:
    """The deployment document (docs/launch.md) of one local test-bed server."""
    doc: dict = {
        "schema_version": 1, "name": f"testbed-{spec.served_name}",
        "lab": {"nodes": [{"name": NODE, "host": "127.0.0.1", "gpu": "none"}]},
        "model": {"path": str(spec.model), "name": spec.served_name},
        "engine": {"vllm": list(spec.engine) if spec.engine else str(bed.vllm)},
        "serve": {"host": "127.0.0.1", "port": port, "max_model_len": spec.max_model_len,
                  "dtype": "float32", "enforce_eager": spec.enforce_eager,
                  "extra_args": list(spec.extra_args)},
        "env": {**SERVE_ENV, **cache_env(bed, scratch), **temp_env(bed), **spec.env},
        "timeouts": {"startup_s": startup_s, "teardown_grace_s": 15},
        # light collection: the servers are shared by tests that measure them
        "collect": {"interval_s": 2.0, "stacks_interval_s": None,
                    "disable": [] if spec.collectors else list(COLLECTORS)},
    }
    if spec.speculative_config:
        extra = json.loads(spec.speculative_config)
        doc["speculative"] = {"method": extra.pop("method", "ngram"),
                              "num_speculative_tokens": extra.pop("num_speculative_tokens", 1),
                              "model": extra.pop("model", None), "extra": extra}
    return doc


@dataclass
class TestbedServer:
    """A test-bed server held ready by the launch supervisor."""

    __test__ = False  # not a pytest test class

    handle: Launched
    started_unix: float

    @property
    def base_url(self) -> str:
        return self.handle.endpoint

    @property
    def port(self) -> int:
        return int(self.base_url.rsplit(":", 1)[1])

    @property
    def launch_dir(self) -> Path:
        return self.handle.launch.path

    @property
    def lines_path(self) -> Path:
        """The server's line records in the launch's bundle (written as they arrive)."""
        return self.launch_dir / "bundle" / layout.NODES_DIR / NODE / layout.log_file("server")

    @property
    def ready_unix(self) -> float:
        return self.started_unix + float(self.handle.supervisor.ready_s or 0.0)

    @property
    def pid(self) -> int | None:
        """The `vllm serve` process (its API server)."""
        return self.handle.server_pid()

    def log_text(self) -> str:
        """The server's output so far, one line per record."""
        from sparktriage.store.documents import read_records
        return "".join(str(r.get("line", "")) + "\n" for r in read_records(self.lines_path))


def lines_of(folder: Path) -> Path:
    """Where `served(..., folder)` keeps the server's line records (also after a failed start)."""
    return (folder / "run" / "launches" / "L001" / "bundle" / layout.NODES_DIR / NODE
            / layout.log_file("server"))


@contextmanager
def served(bed: Testbed, spec: ServeSpec, folder: Path, port: int | None = None,
           startup_s: float = 420.0) -> Iterator[TestbedServer]:
    """Launch `spec` into the run directory `folder/run` (launch L001), ready; tear down after."""
    folder.mkdir(parents=True, exist_ok=True)
    scratch = folder / "scratch"
    scratch.mkdir(exist_ok=True)
    doc = deployment(bed, spec, port or free_port(), scratch, startup_s)
    path = folder / "deployment.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
    plan = build_plan(load_deployment(path))
    run = RunDir.create(folder / "run", ["sparktriage-testbed", spec.served_name])
    started = time.time()
    with launched(plan, run.next_launch()) as handle:
        yield TestbedServer(handle, handle.supervisor.started or started)
