"""The bounded fuzz job (issue 16): every outside input, a few thousand examples each.

Each target feeds hypothesis-made inputs (random bytes, and mutations of a valid seed: cuts,
splices, repeats) to the reader of one outside input and accepts only a value or a
`SparktriageError` (which the CLI turns into a documented exit code); anything else is a crash.
Examples per target: `FUZZ_EXAMPLES` (env `SPARKTRIAGE_FUZZ_EXAMPLES`, default 2000). The
counts are printed in the terminal summary (tests/hardening/conftest.py).
"""

from __future__ import annotations

import atexit
import io
import json
import os
import tarfile
import shutil
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from sparktriage.bench.client import _decode, _Stream, new_record
from sparktriage.bench.sse import SSEDecoder, SSEError
from sparktriage.bench.workload import _parse as parse_workload
from sparktriage.bundle.envdiff import diff_environments, flatten
from sparktriage.bundle import archive
from sparktriage.bundle.reader import Bundle
from sparktriage.config.deployment import load_deployment
from sparktriage.config.lab import Lab
from sparktriage.yamldoc import load_model
from sparktriage.errors import SparktriageError
from sparktriage.logs.document import analyze
from sparktriage.logs.parser import parse_bytes
from sparktriage.logs.sources import source_from_bytes
from sparktriage.metrics.prometheus import parse_text
from sparktriage.stalls.loader import load_rule
from sparktriage.store.documents import RecordWriter, loads_bounded, read_records

from hardening_cli import REPO

pytestmark = pytest.mark.fuzz

FUZZ_EXAMPLES = int(os.environ.get("SPARKTRIAGE_FUZZ_EXAMPLES", "2000"))
COUNTS: dict[str, int] = {}
FUZZ = settings(max_examples=FUZZ_EXAMPLES, deadline=None, database=None, derandomize=True,
                suppress_health_check=list(HealthCheck))
WORK = Path(tempfile.mkdtemp(prefix="sparktriage-fuzz-"))
atexit.register(shutil.rmtree, WORK, True)


def mutations(seed: bytes) -> st.SearchStrategy[bytes]:
    """Random bytes, or the seed cut, spliced with random bytes, or with a piece repeated."""
    n = len(seed)
    cut = st.integers(0, n).map(lambda i: seed[:i])
    splice = st.tuples(st.integers(0, n), st.integers(0, n), st.binary(max_size=40)).map(
        lambda t: seed[:min(t[0], t[1])] + t[2] + seed[max(t[0], t[1]):])
    repeat = st.tuples(st.integers(0, n), st.integers(0, 64), st.integers(1, 30)).map(
        lambda t: seed[:t[0]] + seed[t[0]:t[0] + t[1]] * t[2] + seed[t[0]:])
    text = st.text(max_size=200).map(lambda s: s.encode("utf-8", "surrogatepass"))
    return st.one_of(st.binary(max_size=300), text, cut, splice, repeat,
                     st.tuples(splice, splice).map(b"".join))


def _count(name: str) -> None:
    COUNTS[name] = COUNTS.get(name, 0) + 1


def _file(name: str, data: bytes) -> Path:
    path = WORK / name
    path.write_bytes(data)
    return path


def _quiet(call, *args):
    try:
        return call(*args)
    except SparktriageError:
        return None


DEPLOYMENT = (REPO / "examples" / "tiny-local.yaml").read_bytes()
RULE = (REPO / "rules" / "cold-storage.yaml").read_bytes()
WORKLOAD = (REPO / "src/sparktriage/bench/workloads/prose.yaml").read_bytes()
LAB = b"nodes:\n  - {name: a, host: 10.0.0.1, ssh: me@a}\n  - {name: b, host: 10.0.0.2}\n"
LOG = b"".join(
    f"INFO 01-01 00:00:{i:02d} [loader.py:{i}] Loading weights took {i}.5 seconds\n".encode()
    for i in range(6)) + b"(EngineCore pid=12) INFO 01-01 00:00:09 [core.py:1] ready\n"
RECORDS = b"".join(json.dumps({"t": 1.0 + i, "node": "n", "stream": "stdout",
                               "line": f"INFO 01-01 00:00:0{i} [a.py:1] x"}).encode() + b"\n"
                   for i in range(4))
METRICS = (b"# HELP vllm:generation_tokens_total n\n# TYPE vllm:generation_tokens_total counter\n"
           b'vllm:generation_tokens_total{model_name="m"} 12.0\n'
           b'vllm:e2e_request_latency_seconds_bucket{le="0.5"} 3\n')
SSE = (b'data: {"id":"c","choices":[{"index":0,"delta":{"content":"hi"},"finish_reason":null}]}'
       b'\n\ndata: {"id":"c","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\n'
       b"data: [DONE]\n\n")
ENV = json.dumps({"python": {"version": "3.11"}, "packages": {"vllm": "0.32", "torch": "2.9"},
                  "env": {"CUDA_VISIBLE_DEVICES": "0"}}).encode()


def _tar_bytes(members: list[tuple[str, bytes]]) -> bytes:
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w:gz") as tar:
        for name, data in members:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return out.getvalue()


BUNDLE = _tar_bytes([
    ("b/bundle.json", json.dumps({"schema_version": 1, "kind": "sparktriage-bundle",
                                  "nodes": ["n"]}).encode()),
    ("b/nodes/n/logs/server.lines.jsonl", RECORDS),
    ("b/nodes/n/samples/host.jsonl", b'{"t": 1, "cpu": 0.5}\n')])


@FUZZ
@given(mutations(DEPLOYMENT))
def test_fuzz_deployment_yaml(data):
    _count("deployment YAML")
    _quiet(load_deployment, _file("deployment.yaml", data))


@FUZZ
@given(mutations(LAB))
def test_fuzz_lab_yaml(data):
    _count("lab YAML")
    _quiet(load_model, Lab, _file("lab.yaml", data))


@FUZZ
@given(mutations(RULE))
def test_fuzz_rule_yaml(data):
    _count("rules YAML")
    _quiet(load_rule, _file("rule.yaml", data))


@FUZZ
@given(mutations(WORKLOAD))
def test_fuzz_workload_yaml(data):
    _count("workload YAML")
    _quiet(parse_workload, data.decode("utf-8", "replace"), "workload.yaml")


@FUZZ
@given(mutations(LOG))
def test_fuzz_logs(data):
    _count("logs")
    _quiet(lambda: analyze(parse_bytes(data)))


@FUZZ
@given(mutations(RECORDS))
def test_fuzz_line_records(data):
    _count("line records")
    source = source_from_bytes(data, records=True)
    _quiet(lambda: [line.text.encode("utf-8") for line in source.lines()])
    _quiet(lambda: list(read_records(_file("r.jsonl", data))))


@FUZZ
@given(mutations(BUNDLE))
def test_fuzz_bundle_archives(data):
    _count("bundles and archives")
    path = _file("b.tar.gz", data)

    def read():
        with Bundle.open(path) as bundle:
            for node in bundle.nodes():
                list(bundle.log_lines(node))
                list(bundle.host_samples(node))
    try:
        _quiet(read)
    finally:
        archive.release()


@FUZZ
@given(mutations(METRICS))
def test_fuzz_metrics_pages(data):
    _count("metrics pages")
    _quiet(parse_text, data.decode("utf-8", "replace"))


@FUZZ
@given(mutations(SSE), st.integers(1, 64))
def test_fuzz_sse_streams(data, piece):
    _count("SSE streams")
    record = new_record("/v1/chat/completions", {"max_tokens": 8})
    pieces = [(float(i), data[i:i + piece]) for i in range(0, len(data), piece)]
    _decode(_Stream(record), pieces, 0.0)  # faults are recorded, never raised
    with RecordWriter(WORK / "requests.jsonl") as writer:
        writer.append(record)
    decoder = SSEDecoder()
    try:
        for _, part in pieces:
            decoder.feed(part)
        decoder.close()
    except SSEError:
        pass


@FUZZ
@given(mutations(ENV))
def test_fuzz_env_dumps(data):
    _count("collect-env and env dumps")
    try:
        doc = loads_bounded(data.decode("utf-8", "replace"), "environment.json")
    except (ValueError, SparktriageError):
        return
    if isinstance(doc, dict):
        flatten(doc)
        diff_environments({"a": doc, "b": {"packages": {"vllm": "0.31"}}})


REPRO_INPUTS = Path(__file__).parents[1] / "reproduce" / "inputs"
REPRO_SEEDS = {name: (REPRO_INPUTS / name).read_bytes() for name in
               ("multinode.sh", "docker.sh", "compose.yaml", "gb10.collect-env.txt", "client.env",
                "lws.yaml", "job.sbatch", "justfile")}


@FUZZ
@given(st.sampled_from(sorted(REPRO_SEEDS)).flatmap(
    lambda name: st.tuples(st.just(name), mutations(REPRO_SEEDS[name]))))
def test_fuzz_reproduce_client_inputs(case):
    """What a client sends (serve scripts, docker lines, compose files, collect-env output, env
    dumps), mutated: each is detected and imported as data or refused with an input error."""
    from sparktriage.reproduce.core import import_input
    from sparktriage.reproduce.secrets import Placeholders
    name, data = case
    _count("reproduce client inputs")
    path = _file("client-" + name, data)
    try:
        import_input(path, Placeholders())
    except SparktriageError:
        pass


# the readers of client scripts cost milliseconds an example: a quarter of the examples each
FUZZ_READERS = settings(FUZZ, max_examples=max(50, FUZZ_EXAMPLES // 4))
BASH_WALK = (b'A=xxxx\nA=${A//x/$A}\nB=(a "$A" c)\nB+=("${B[@]}")\nf() { echo "$1${B[1]}"; }\n'
             b'for x in "${B[@]}"; do f "$x"; done\ncase "$A" in x*) M=/m;; esac\n'
             b'cat > c.yaml <<EOF\nport: ${P:-8000}\nEOF\nvllm serve ${M:-/m} --port $((8000+1))\n')
MAKEFILE = (b"A := xx\nB = $(A)$(A)\nexport PORT ?= 8000\nserve:\n\t@vllm serve /m --port "
            b"$(PORT) --served-model-name $(B)\nhead: serve\n\tray start --head $$X\n")
UNIT = (b"[Unit]\nDescription=vllm\n[Service]\nEnvironment=A=1 \"B=2 3\"\n"
        b"ExecStart=/usr/bin/vllm serve /m \\\n  --port 8000 --served-model-name $A\n"
        b"Restart=always\n[Install]\nWantedBy=multi-user.target\n")
COMPOSE_INCLUDE = (b"include:\n  - other.yaml\n  - ../up.yaml\n  - path: [/etc/hosts, x.yaml]\n"
                   b"services:\n  vllm:\n    image: vllm/vllm-openai:v0.32.0\n"
                   b"    env_file: vllm.env\n    command: vllm serve /m --port 8000\n")


@FUZZ_READERS
@given(mutations(BASH_WALK))
def test_fuzz_bash_walk(data):
    """The static bash walk (expansions, arrays, functions, loops, here-documents) on mutated
    scripts: a script read or an input error, never a crash or unbounded growth."""
    from sparktriage.reproduce.bash import read_script
    _count("bash walk")
    _quiet(read_script, data.decode("utf-8", "replace"), "fuzz.sh")


@FUZZ_READERS
@given(mutations(MAKEFILE))
def test_fuzz_makefile(data):
    from sparktriage.reproduce.bash import read_script
    from sparktriage.reproduce.read.makefile import to_shell
    _count("Makefile")
    shell = _quiet(to_shell, data.decode("utf-8", "replace"), "Makefile")
    if shell is not None:
        _quiet(read_script, shell[0], "Makefile")


@FUZZ_READERS
@given(mutations(UNIT))
def test_fuzz_systemd_unit(data):
    from sparktriage.reproduce.core import import_input
    from sparktriage.reproduce.secrets import Placeholders
    _count("systemd unit")
    _quiet(import_input, _file("vllm.service", data), Placeholders())


COMPOSE_DIR = WORK / "compose" / "in"
COMPOSE_DIR.mkdir(parents=True)
(COMPOSE_DIR / "other.yaml").write_bytes(b"services:\n  side:\n    image: x\n")
(COMPOSE_DIR / "vllm.env").write_bytes(b"A=1\n")
(COMPOSE_DIR.parent / "up.yaml").write_bytes(b"services: {up: {image: x}}\n")


@FUZZ_READERS
@given(mutations(COMPOSE_INCLUDE))
def test_fuzz_compose_include(data):
    """Compose files with `include:` entries (beside, `..`, absolute), mutated."""
    from sparktriage.reproduce.core import import_input
    from sparktriage.reproduce.secrets import Placeholders
    _count("compose include")
    path = COMPOSE_DIR / "compose.yaml"
    path.write_bytes(data)
    _quiet(import_input, path, Placeholders())
