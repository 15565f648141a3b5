"""Shared fixtures: the real vLLM CPU test bed (one server per configuration per session,
started through the product's launch path: deployment, supervisor, readiness, teardown)."""

from __future__ import annotations

import datetime as dt
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import pytest

from sparktriage.report.build import execute, plan_report
from sparktriage.signing.signing import SignSpec
from sparktriage.testbed.paths import locate
from sparktriage.testbed.server import ServeSpec, served
from sparktriage.testbed.synthetic_run import SyntheticSpec, make_run
from workergroups import longest_first, scope_of, undeclared_groups, worker_groups

REPO = Path(__file__).resolve().parents[1]
NGRAM_SPEC = json.dumps({"method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_max": 4,
                         "prompt_lookup_min": 2})


# --- two workers (scripts/test.sh): each has its own temporary folder ----------------------

_WORKER_TMP = pytest.StashKey[str]()  # the worker's folder, removed at the end


def pytest_configure(config):
    """Under pytest-xdist every worker, and every process it starts, writes temporary files to
    its own folder (TMPDIR), so a test that checks what vLLM left in the temporary folder
    (tests/cli/test_demo.py) never sees the other worker's servers. Removed at the end.

    An xdist worker ignores SIGINT (SIG_IGN), and an ignored signal stays ignored in every
    process it starts: a test's Ctrl-C to a launch or a session would then be lost. A worker
    takes Python's own handler back, as a one-process run has it."""
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    if worker:
        signal.signal(signal.SIGINT, signal.default_int_handler)
        folder = tempfile.mkdtemp(prefix=f"st-{worker}-")
        os.environ["TMPDIR"] = folder
        tempfile.tempdir = None  # gettempdir() reads TMPDIR again
        config.stash[_WORKER_TMP] = folder


def pytest_unconfigure(config):
    folder = config.stash.get(_WORKER_TMP, None)
    if folder:
        shutil.rmtree(folder, ignore_errors=True)


# --- the fast tier: `bash scripts/test.sh -m "not slow"` (docs/testbed.md) -------------------

ALWAYS_SLOW = ("vllm", "netns", "fuzz")  # a real vLLM, a namespace lab, the bounded fuzz job


def pytest_collection_modifyitems(config, items):
    """Every test of the real test bed (marked vllm, or using the `testbed` fixture), every
    namespace-lab test and the fuzz job are also `slow`, so `-m "not slow"` leaves them all
    out; a test that uses the real test bed without its `vllm` mark is a collection error. So
    are modules that must share a worker (`worker_groups`) but are not declared in JOINED."""
    _mark_slow(items)
    undeclared = undeclared_groups(worker_groups(items))
    if undeclared:
        raise pytest.UsageError(
            "tests/workergroups.py JOINED: these modules build the namespace lab or read one "
            f"session recording and must share a worker: {', '.join(undeclared)}")


def _mark_slow(items) -> None:
    unmarked = []
    for item in items:
        marks = {m.name for m in item.iter_markers()}
        if "testbed" in getattr(item, "fixturenames", ()) and "vllm" not in marks:
            unmarked.append(item.nodeid)
        if marks & set(ALWAYS_SLOW) and "slow" not in marks:
            item.add_marker(pytest.mark.slow)
    if unmarked:
        raise pytest.UsageError("tests use the real vLLM test bed without @pytest.mark.vllm: "
                                + ", ".join(unmarked))


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    """Under xdist (not `--dist each`), work goes out a `scope_of` at a time (tests/workergroups.py)."""
    if config.getvalue("dist") == "each":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class ModuleGroups(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return scope_of(nodeid)

        def _assign_work_unit(self, node) -> None:
            for scope in longest_first(list(self.workqueue)):  # the longest unit goes out next
                self.workqueue.move_to_end(scope)
            super()._assign_work_unit(node)

    return ModuleGroups(config, log)


def _real_vllm() -> Path | None:
    """The installed test bed's `vllm` (None without one)."""
    try:
        return locate().vllm.resolve()
    except Exception:  # noqa: BLE001 - no test bed here: nothing real to start
        return None


@pytest.fixture(autouse=True)
def _fast_tier_starts_no_vllm(request, monkeypatch):
    """A test outside `slow` whose server start (testbed.server.served, testbed.repro.record)
    would run the installed test bed's real `vllm` fails at once, before starting it: the fast
    tier stays fast and honest. Fake beds and the simulator as engine pass."""
    if request.node.get_closest_marker("slow") is not None:
        return
    import sparktriage.testbed.repro as repro
    import sparktriage.testbed.server as server

    def refuse_real(argv) -> None:
        real = _real_vllm()
        named = [str(a) for a in argv if "=" not in str(a) and "vllm" in Path(str(a)).name]
        if real is not None and any(Path(a).resolve() == real for a in named):
            pytest.fail(f"{request.node.nodeid} starts the test bed's real vLLM but is not "
                        "marked slow: mark it vllm", pytrace=False)

    def deployment(*args, **kwargs):
        doc = server_deployment(*args, **kwargs)
        engine = doc["engine"]["vllm"]
        refuse_real([engine] if isinstance(engine, str) else engine)
        return doc

    def serve_argv(*args, **kwargs):
        argv = repro_serve_argv(*args, **kwargs)
        refuse_real(argv)
        return argv

    server_deployment, repro_serve_argv = server.deployment, repro.serve_argv
    monkeypatch.setattr(server, "deployment", deployment)
    monkeypatch.setattr(repro, "serve_argv", serve_argv)


@pytest.fixture(scope="session", autouse=True)
def vllm_ipc_folder():
    """vLLM leaves its ZMQ IPC sockets (one file per engine channel, named by a UUID) in the
    temporary folder when it is stopped; every local server the suite starts inherits this
    variable and puts them in one short-named folder (socket paths are limited to 107 bytes),
    removed after the session. Deployments whose nodes are reached over SSH carry it in their
    environment (tests/launch/launchkit.ipc_env)."""
    folder = tempfile.mkdtemp(prefix="st-ipc-")
    before = os.environ.get("VLLM_RPC_BASE_PATH")
    os.environ["VLLM_RPC_BASE_PATH"] = folder
    try:
        yield Path(folder)
    finally:
        if before is None:
            os.environ.pop("VLLM_RPC_BASE_PATH", None)
        else:
            os.environ["VLLM_RPC_BASE_PATH"] = before
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(scope="session", autouse=True)
def vllm_caches(tmp_path_factory):
    """One folder of compile and model-information caches for every test-bed server of the
    session, in this process and in the commands it starts (SPARKTRIAGE_TESTBED_CACHE, read by
    `testbed.paths.locate`): every start after the first skips vLLM's model-inspection
    subprocess and the Inductor kernel builds, as on a lab node that keeps its caches. The
    stall reproductions, whose point is a cold start, make fresh ones (testbed/repro.py)."""
    folder = tmp_path_factory.mktemp("vllm-caches")
    before = os.environ.get("SPARKTRIAGE_TESTBED_CACHE")
    os.environ["SPARKTRIAGE_TESTBED_CACHE"] = str(folder)
    try:
        yield folder
    finally:
        if before is None:
            os.environ.pop("SPARKTRIAGE_TESTBED_CACHE", None)
        else:
            os.environ["SPARKTRIAGE_TESTBED_CACHE"] = before


@pytest.fixture(scope="session")
def testbed():
    """The installed test bed (its servers share the session's caches); fails (not skips) when
    it is missing: run provision/setup.sh."""
    try:
        return locate().check()
    except Exception as exc:  # noqa: BLE001 - surfaced as a test failure with the reason
        pytest.fail(f"vLLM test bed unavailable: {exc}")


@pytest.fixture(scope="session")
def vllm_server(testbed, tmp_path_factory):
    """A real `vllm serve` of the tiny model, eager mode, shared by the whole session."""
    with served(testbed, ServeSpec(model=testbed.model()), tmp_path_factory.mktemp("vllm-plain")) as server:
        yield server


@pytest.fixture(scope="session")
def vllm_ngram_server(testbed, tmp_path_factory):
    """A real `vllm serve` with ngram speculative decoding (3 draft tokens)."""
    spec = ServeSpec(model=testbed.model(), speculative_config=NGRAM_SPEC)
    with served(testbed, spec, tmp_path_factory.mktemp("vllm-ngram")) as server:
        yield server


@dataclass(frozen=True)
class DemoSession:
    """One finished `sparktriage demo` run (read-only: its tests only look)."""

    work: Path  # its working folder: every byte the command wrote lies under it
    run: Path  # its run directory (work/run)
    result: subprocess.CompletedProcess  # stdout and stderr as bytes
    tokens: int  # --max-tokens
    temp_left: frozenset[str]  # what vLLM left in the machine's temporary folder


DEMO_TOKENS = 96


def vllm_temp_files() -> set[str]:
    """What vLLM leaves in the machine's temporary folder when it runs there: rendezvous files
    and IPC sockets (UUID-named)."""
    uuid = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")
    return {p.name for p in Path(tempfile.gettempdir()).iterdir()
            if p.name.startswith("vllm_dist_") or uuid.match(p.name)}


@pytest.fixture(scope="session")
def demo_session(testbed, tmp_path_factory) -> DemoSession:
    """The session's one real `sparktriage demo` (three launches of the tiny MoE, probe,
    protocol, sweep, signed md+pdf report), shared by tests/cli/test_demo.py, which checks what
    it did, and the redaction conformance test (tests/redact/test_conformance.py), which greps
    everything it wrote for the secrets planted in its environment (the conformance test's
    `_env()`: OPENAI_API_KEY, HF_TOKEN, AWS keys). It runs from its own working folder."""
    from redact.test_conformance import _env

    work = tmp_path_factory.mktemp("demo")
    run = work / "run"
    before = vllm_temp_files()
    result = subprocess.run([sys.executable, "-m", "sparktriage", "demo", "--requests", "3",
                             "--max-tokens", str(DEMO_TOKENS), "--out", str(run), "--json", "-"],
                            capture_output=True, env=_env(), cwd=work, timeout=1200)
    return DemoSession(work, run, result, DEMO_TOKENS, frozenset(vllm_temp_files() - before))


@dataclass(frozen=True)
class ColdStart:
    """One recorded cold-storage start, watched live as it ran (read-only)."""

    bundle: Path  # the evidence bundle `collect` wrote
    result: dict  # collect's result
    live: list[dict]  # the live watcher's verdicts, as it reported them
    live_path: Path  # the watcher's own record of them (JSON lines)


@pytest.fixture(scope="session")
def cold_storage_start(testbed, tmp_path_factory) -> ColdStart:
    """The cold-storage fault, started once for the session: a 280 MB checkpoint (4 shards) on a
    cold loop volume read through a blkio limit of 8 MB/s, served by the real CPU vLLM under the
    real collectors, with the session's live stall watcher (session.live.StallWatcher) on the
    bundle as it is written, as `session run` watches a launch. Read by
    tests/stalls/test_reproductions.py::test_cold_storage (the recorded bundle's classification)
    and tests/session/test_live_stall.py (the live verdicts). Needs root, as CI has."""
    from sparktriage.session.live import StallWatcher
    from sparktriage.testbed.faults import LoopVolume, ReadThrottle
    from sparktriage.testbed.repro import ServeRun, record

    if os.geteuid() != 0:
        pytest.fail("the stall reproductions need root (cgroup v1 and loop devices), as CI has")
    root = tmp_path_factory.mktemp("cold-storage")
    model = root / "big"
    subprocess.run([str(testbed.python), str(REPO / "provision" / "make_big_model.py"),
                    str(testbed.model()), str(model), "--mb", "280", "--shards", "4"],
                   check=True, capture_output=True, timeout=300)
    bundle, live_path = root / "bundle", root / "live-stalls.jsonl"
    seen: list[dict] = []
    with LoopVolume(root, 450) as volume:
        shutil.copytree(model, volume.mount / "model")
        volume.make_cold()  # remount: nothing of the checkpoint is cached any more
        with ReadThrottle(volume.device, 8_000_000) as throttle:  # 8 MB/s, like a slow share
            run = ServeRun(str(volume.mount / "model"), root / "scratch", wrap=throttle.wrap,
                           max_s=480)
            with StallWatcher(bundle, live_path, lambda event, details: seen.append(details)):
                _, result = record(testbed, run, bundle)
    return ColdStart(bundle, result, seen, live_path)


@pytest.fixture
def run_dir(tmp_path) -> Path:
    return tmp_path / "run"


# --- report tests (issue 7): SYNTHETIC run directories, stock ssh-keygen keys, built reports ---

REPORT_TIME = dt.datetime(2026, 3, 1, 12, 0, 0, tzinfo=dt.timezone.utc)
REPORT_SPEC = SyntheticSpec(depths=(0, 2), launches_per_depth=2, requests=5, warmup=1,
                            max_tokens=48, plant=True, stall_every=2)


def report_keygen(folder: Path, name: str, comment: str = "consultant@example.com",
                  passphrase: str = "") -> Path:
    """A fresh Ed25519 key pair made by ssh-keygen; returns the private key path."""
    folder.mkdir(parents=True, exist_ok=True)
    key = folder / name
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", passphrase, "-C", comment,
                    "-f", str(key)], check=True)
    return key


@pytest.fixture(scope="session")
def report_keys(tmp_path_factory) -> dict[str, Path]:
    """Ed25519 keys made by the stock ssh-keygen: main, other, and a passphrase-protected one."""
    folder = tmp_path_factory.mktemp("keys")
    return {"main": report_keygen(folder, "id_main"),
            "other": report_keygen(folder, "id_other", "someone@else"),
            "encrypted": report_keygen(folder, "id_enc", passphrase="s3cret-pass")}


@pytest.fixture(scope="session")
def report_run(tmp_path_factory) -> Path:
    """A planted synthetic run (secrets and identifying names in every kind of place)."""
    return make_run(tmp_path_factory.mktemp("synthetic") / "run", REPORT_SPEC)


def report_build_fn(run: Path, out: Path, key: Path | None = None, anonymize: bool = True,
                    now: dt.datetime = REPORT_TIME, formats: str = "md,pdf",
                    map_path: Path | None = None):
    """Build a report at a fixed time (REPORT_TIME unless given)."""
    plan = plan_report(run, out, formats, SignSpec(str(key)) if key else None, anonymize,
                       map_path, now)
    return execute(plan)


@pytest.fixture(scope="session")
def report_build():
    """report_build_fn as a fixture, for test modules outside tests/."""
    return report_build_fn


@pytest.fixture(scope="session")
def report_built(report_run, report_keys, tmp_path_factory) -> Path:
    """One signed, anonymized report of the synthetic run (read-only: copy before changing)."""
    out = tmp_path_factory.mktemp("built") / "report"
    report_build_fn(report_run, out, report_keys["main"])
    return out


@pytest.fixture
def report_copy(report_built, tmp_path) -> Path:
    """A private copy of the built report that a test may tamper with."""
    target = tmp_path / "report"
    shutil.copytree(report_built, target)
    return target


# --- the simulated OpenAI-compatible server (src/sparktriage/sim) --------------------------

SIM_SCENARIOS = {
    # The default model: fast, every source supported. Tests shape single requests with the
    # body field `"sim": {...}` (scenario overrides), so one process serves the whole session.
    "sim": {"ttft_s": 0.005, "gap_s": 0.0005},
    "strict": {"ttft_s": 0.005, "gap_s": 0.0005, "strict_fields": True},
}


@pytest.fixture(scope="session")
def sim(tmp_path_factory):
    """A simulator in its own process, shared by the session (models: sim, strict)."""
    from sparktriage.sim.process import SimProcess

    process = SimProcess({"scenarios": SIM_SCENARIOS}, tmp_path_factory.mktemp("sim"))
    process.start()
    yield process
    process.stop()


@pytest.fixture
def start_sim(tmp_path):
    """Start extra simulators with their own configuration; all are stopped after the test."""
    from sparktriage.sim.process import SimProcess

    started = []

    def start(config: dict, name: str = "sim"):
        process = SimProcess(config, tmp_path / f"{name}-{len(started)}")
        started.append(process)
        return process.start()

    yield start
    for process in started:
        process.stop()
