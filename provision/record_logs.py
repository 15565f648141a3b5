"""Record real vLLM CPU logs as test fixtures (run once; outputs are committed).

    .venv/bin/python provision/record_logs.py tests/fixtures/logs/recorded [plain ngram killed failed]

Each scenario starts the test bed's real `vllm serve` (sparktriage.testbed.server, through the launch supervisor) and keeps its line
records (`<name>.lines.jsonl`: every stdout/stderr line with its receive time):

* plain   - the tiny model, 12 streamed requests, until two stats lines followed the traffic
            (and `/metrics` before and after the requests: tests/fixtures/metrics/plain-*.prom);
* ngram   - ngram speculative decoding on a repetitive prompt, with SpecDecoding lines (and
            `/metrics` before and after: ngram-*.prom);
* killed  - requests in flight, then SIGKILL to the worker process (the engine dies);
* failed  - a copy of the model with a truncated safetensors file (startup fails in load).

The tests parse these files (tests/logs/test_golden_recorded.py), so CI needs no extra
server starts for these scenarios.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx
import psutil

from sparktriage.testbed.paths import locate
from sparktriage.errors import LaunchError
from sparktriage.testbed.server import ServeSpec, TestbedServer, lines_of, served

NGRAM = json.dumps({"method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_max": 4,
                    "prompt_lookup_min": 2})


def _complete(base: str, prompt: str, max_tokens: int) -> int:
    body = {"model": "tiny", "prompt": prompt, "max_tokens": max_tokens, "temperature": 0,
            "ignore_eos": True, "stream": True}
    tokens = 0
    try:
        with httpx.stream("POST", base + "/v1/completions", json=body, timeout=60) as r:
            for line in r.iter_lines():
                if line.startswith("data: {"):
                    tokens += 1
    except httpx.HTTPError:
        pass
    return tokens


def _wait_for_lines(server: TestbedServer, needle: str, count: int, timeout: float) -> None:
    deadline = time.time() + timeout
    while time.time() < deadline:
        text = server.log_text()
        if text.count(needle) >= count:
            return
        time.sleep(0.5)


def _metrics(server: TestbedServer, target: Path) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(httpx.get(server.base_url + "/metrics", timeout=10).text)


def plain(out: Path, bed) -> None:
    with served(bed, ServeSpec(model=bed.model()), out / "work") as server:
        _metrics(server, out.parent.parent / "metrics" / "plain-before.prom")
        tokens = sum(_complete(server.base_url, f"Once upon a time number {i}", 96)
                     for i in range(12))
        _metrics(server, out.parent.parent / "metrics" / "plain-after.prom")
        print(f"plain: {tokens} chunks streamed", file=sys.stderr)
        _wait_for_lines(server, "Avg generation throughput", 2, 30)
    _keep(server.lines_path, out / "plain.lines.jsonl")


def ngram(out: Path, bed) -> None:
    spec = ServeSpec(model=bed.model(), speculative_config=NGRAM)
    with served(bed, spec, out / "work") as server:
        _metrics(server, out.parent.parent / "metrics" / "ngram-before.prom")
        for _ in range(8):
            _complete(server.base_url, "a b c d e f g " * 20, 128)
        _metrics(server, out.parent.parent / "metrics" / "ngram-after.prom")
        _wait_for_lines(server, "SpecDecoding metrics", 1, 30)
        _wait_for_lines(server, "Avg generation throughput", 2, 30)
    _keep(server.lines_path, out / "ngram.lines.jsonl")


def killed(out: Path, bed) -> None:
    with served(bed, ServeSpec(model=bed.model()), out / "work") as server:
        api = psutil.Process(server.pid)
        workers = [threading.Thread(target=_complete, args=(server.base_url, "Tell me", 400))
                   for _ in range(4)]
        for w in workers:
            w.start()
        time.sleep(1.5)
        victims = [p for p in api.children(recursive=True)
                   if "Worker" in " ".join([p.name()] + p.cmdline())]
        for p in victims[:1]:
            os.kill(p.pid, signal.SIGKILL)
        for w in workers:
            w.join(timeout=60)
        api.wait(timeout=60)  # the API server exits after its worker died
    _keep(server.lines_path, out / "killed-worker.lines.jsonl")


def failed(out: Path, bed) -> None:
    broken = Path(tempfile.mkdtemp(prefix="broken-model-"))
    try:
        model = broken / "tiny-llama"
        shutil.copytree(bed.model(), model)
        weights = next(model.glob("*.safetensors"))
        data = weights.read_bytes()
        weights.write_bytes(data[: len(data) // 3])
        try:
            with served(bed, ServeSpec(model=model), out / "work"):
                pass
        except LaunchError as exc:  # expected: the start fails
            print(f"failed start as intended: {exc.one_line()}", file=sys.stderr)
        _keep(lines_of(out / "work"), out / "failed-start.lines.jsonl")
    finally:
        shutil.rmtree(broken, ignore_errors=True)


def _keep(lines: Path, target: Path) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(lines, target)
    print(f"recorded {target} ({sum(1 for _ in target.open())} lines)", file=sys.stderr)


SCENARIOS = {"plain": plain, "ngram": ngram, "killed": killed, "failed": failed}


def main(argv: list[str]) -> None:
    out = Path(argv[0])
    names = argv[1:] or list(SCENARIOS)
    bed = locate().check()
    for name in names:
        SCENARIOS[name](out, bed)
        shutil.rmtree(out / "work", ignore_errors=True)


if __name__ == "__main__":
    main(sys.argv[1:])
