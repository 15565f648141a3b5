"""Redaction conformance: every command, run with planted secrets, writes none of them anywhere.

A table of command cases (CASES): each runs the real `sparktriage` program in a subprocess with
secrets planted where real ones turn up (an `--api-key` flag, OPENAI_API_KEY/HF_TOKEN/AWS
variables, credentials in an endpoint URL, a bearer header in a log, Hugging Face, AWS and
OpenAI-style tokens, a private key block in a log whose every line carries a vLLM prefix), then
greps every byte it produced: stdout, stderr, every file under the case's folder, the members
of every archive (.tar.gz, .zip) and the text of every PDF (pdftotext). Zero hits.

Servers are the simulator (src/sparktriage/sim, in its own process); `demo` is the one command
that runs the real CPU vLLM (marked `vllm`): its case greps the session's one demo run
(tests/conftest.py `demo_session`, run with the same planted environment; tests/cli/test_demo.py
checks what that run did). The test is
parametrized over the commands the program registers: a command without a case fails, so a new
command cannot ship without being checked (add its case to CASES).
"""

from __future__ import annotations

import base64
import io
import json
import os
import shutil
import signal
import subprocess
import sys
import tarfile
import time
import urllib.request
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import pytest
import yaml

from sparktriage.testbed.synthetic_run import SECRETS as SYNTHETIC_SECRETS
from sparktriage.testbed.synthetic_run import SyntheticSpec, make_run

REPO = Path(__file__).resolve().parents[2]
FIXTURE_LOG = REPO / "tests" / "fixtures" / "logs" / "vllm-cpu-startup.log"
SIM_ENGINE = ["-m", "sparktriage.sim.vllm"]  # the simulator as `vllm serve` (docs/simulator.md)
PYSPY = REPO / ".venv" / "bin" / "py-spy"

# The planted secrets (made up, in the shapes of real ones).
FLAG_KEY = "flagkey-Zq8Lm3Vt6Xb1Nc9Rk4Wd7"          # --api-key (no known shape: the flag finds it)
ENV_KEY = "envkey-Hs3Jp5Ty0Qw2Er4Ui6Op8"            # OPENAI_API_KEY in the environment
OPENAI = "sk-proj-Q7mZt4Lx9Vb2Nc8Rk1Wd5Hs3"
HF = "hf_Zq8Lm3Vt6Xb1Nc9Rk4Wd7Hs2Jp5Ty0"
AWS_ID = "AKIAZ7QW3RT5YU2IO9PX"
AWS_SECRET = "wJalrXUtnFEMIzK7MDENGzbPxRfiCYzq8Tk3Lm2N"
URL_PASSWORD = "Ur1P4ssw0rdZq8Lm"
BEARER = "bEaReR7tok3nZq8Lm3Vt6Xb1Nc9"
_KEY_BODY = base64.b64encode(bytes(range(7, 7 + 200)) * 2).decode()
KEY_LINES = [_KEY_BODY[i:i + 64] for i in range(0, len(_KEY_BODY), 64)]
PLANTED = [FLAG_KEY, ENV_KEY, OPENAI, HF, AWS_ID, AWS_SECRET, URL_PASSWORD, BEARER,
           *[line for line in KEY_LINES if len(line) >= 12]]
ENV = {"OPENAI_API_KEY": ENV_KEY, "HF_TOKEN": HF, "AWS_ACCESS_KEY_ID": AWS_ID,
       "AWS_SECRET_ACCESS_KEY": AWS_SECRET}


def planted_log_lines() -> list[str]:
    """vLLM log lines carrying every kind of secret (each line with vLLM's prefix)."""
    pre = "(APIServer pid=4242) {level} 11-29 20:53:{s:02d} [api_server.py:1] "
    out = [pre.format(level="INFO", s=20) + "non-default args: {'model': '/srv/models/model', "
           f"'api_key': ['{FLAG_KEY}'], 'hf_token': '{HF}'}}",
           pre.format(level="WARNING", s=21) + f"retrying https://admin:{URL_PASSWORD}@hub.example.com/v1",
           pre.format(level="WARNING", s=22) + f"upstream said 401 to Authorization: Bearer {BEARER}",
           pre.format(level="ERROR", s=23) + f"AWS credentials {AWS_ID} rejected; OPENAI key {OPENAI}",
           pre.format(level="ERROR", s=24) + "cannot load key: -----BEGIN OPENSSH PRIVATE KEY-----"]
    out += [pre.format(level="ERROR", s=24) + line for line in KEY_LINES]
    out.append(pre.format(level="ERROR", s=24) + "-----END OPENSSH PRIVATE KEY-----")
    return out


def write_planted_log(path: Path) -> Path:
    lines = FIXTURE_LOG.read_text(encoding="utf-8").split("\n")
    cut = next(i for i, line in enumerate(lines) if "Application startup complete" in line)
    path.write_text("\n".join(lines[:cut] + planted_log_lines() + lines[cut:]) + "\n",
                    encoding="utf-8")
    return path


# -- what a case produced ------------------------------------------------------------------------
def _pdftotext(data: bytes) -> bytes:
    out = subprocess.run(["pdftotext", "-layout", "-", "-"], input=data, capture_output=True,
                         check=True, timeout=120)
    return out.stdout


def _expand(name: str, data: bytes) -> list[tuple[str, bytes]]:
    """The file itself and what is inside it (archive members, PDF text), recursively."""
    found = [(name, data)]
    if name.endswith((".tar.gz", ".tgz", ".tar")):
        with tarfile.open(fileobj=io.BytesIO(data)) as tar:
            for member in tar.getmembers():
                if member.isfile():
                    found += _expand(f"{name}!{member.name}", tar.extractfile(member).read())
    elif name.endswith(".zip"):
        with zipfile.ZipFile(io.BytesIO(data)) as zf:
            for member in zf.namelist():
                found += _expand(f"{name}!{member}", zf.read(member))
    elif name.endswith(".pdf"):
        found.append((f"{name}!text", _pdftotext(data)))
    return found


def leaks(outputs: list[tuple[str, bytes]], secrets: list[str]) -> list[str]:
    hits = []
    for name, data in outputs:
        for secret in secrets:
            if secret.encode() in data:
                hits.append(f"{name}: {secret[:12]}...")
    return hits


# -- the cases -----------------------------------------------------------------------------------
@dataclass
class Ctx:
    """What a case can use: its folder, the planted log, a simulator, a signing key."""

    tmp: Path  # what the command writes: every byte under it is grepped
    inputs: Path  # what the test hands it (planted on purpose; not grepped)
    log: Path
    request: pytest.FixtureRequest
    extra_secrets: list[str] = field(default_factory=list)
    background: list[subprocess.Popen] = field(default_factory=list)

    @property
    def sim_url(self) -> str:
        return self.request.getfixturevalue("sim").base_url

    def sim_url_with_credentials(self) -> str:
        scheme, rest = self.sim_url.split("://", 1)
        return f"{scheme}://admin:{URL_PASSWORD}@{rest}"

    def key(self) -> Path:
        return self.request.getfixturevalue("report_keys")["main"]

    def planted_run(self) -> Path:
        """A run directory with secrets in it (as a hand-edited or older one could have)."""
        self.extra_secrets += [v for v in SYNTHETIC_SECRETS.values() if len(v) >= 8]
        return make_run(self.inputs / "planted-run", SyntheticSpec(depths=(0,), plant=True))


@dataclass(frozen=True)
class Case:
    name: str
    argv: Callable[[Ctx], list[str]]
    timeout_s: float = 180
    vllm: bool = False  # runs the real CPU vLLM (under the shared lock)
    shared: str | None = None  # a session fixture that already ran the command (DemoSession)
    slow: bool = False  # over a few seconds on CI's 2 cores: left out of the fast tier
    netns: bool = False  # builds the namespace lab (root)
    ok: tuple[int, ...] = (0, 1)  # exit codes that mean "it ran" (1: findings)


def _rules_file(ctx: Ctx) -> list[str]:
    """A rules folder whose one rule is invalid and quotes secrets (errors echo what they read)."""
    folder = ctx.inputs / "rules"
    folder.mkdir()
    (folder / "leaky.yaml").write_text(yaml.safe_dump({
        "schema_version": 1, "id": f"leaky-{HF}", "phase": f"token {OPENAI}",
        "description": f"Authorization: Bearer {BEARER}"}))
    return ["rules", "check", "--rules", str(folder), "--no-fixtures", "--json", "-"]


def _deployment(ctx: Ctx) -> Path:
    """A local deployment of a stand-in engine that prints the planted log lines first."""
    engine = ctx.inputs / "planted_engine.py"
    engine.write_text(
        "import os, sys\n"
        f"for line in {planted_log_lines()!r}:\n"
        "    print(line, flush=True)\n"
        f"os.execv(sys.executable, [sys.executable, *{SIM_ENGINE!r}, *sys.argv[1:]])\n")
    import socket
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    doc = {"schema_version": 1, "name": "planted",
           "lab": {"nodes": [{"name": "local", "host": "127.0.0.1", "pyspy": str(PYSPY)}]},
           "model": {"path": "/models/planted", "name": "planted"},
           "engine": {"vllm": [sys.executable, str(engine)]},
           "serve": {"host": "127.0.0.1", "port": port,
                     "extra_args": ["--api-key", FLAG_KEY, f"--hf-token={HF}"]},
           "env": {"HF_TOKEN": HF, "MY_SERVICE_PASSWORD": URL_PASSWORD,
                   "SPARKTRIAGE_SIM": '{"startup_s": {"weight_read": 0.5}}'},
           "timeouts": {"startup_s": 60, "teardown_grace_s": 3, "link_s": 20},
           "collect": {"interval_s": 0.5, "stacks_interval_s": 5.0}}
    path = ctx.inputs / "deployment.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def _lab_up_down(ctx: Ctx) -> list[str]:
    """A one-node namespace lab (root, as in CI) brought up with planted secrets in the
    environment; the case itself is its teardown. Both runs' output is grepped."""
    up = run(ctx, ["testbed", "lab", "up", "1", "--dir", str(ctx.tmp / "lab"), "--json", "-"], 120)
    assert up.returncode == 0, up.stderr.decode()[-2000:]
    return ["testbed", "lab", "down", "--dir", str(ctx.tmp / "lab")]


def _collect(ctx: Ctx) -> list[str]:
    script = ctx.inputs / "planted_server.py"
    script.write_text("import sys, time\n"
                      f"for line in {planted_log_lines()!r}:\n"
                      "    print(line, flush=True)\n"
                      "time.sleep(3)\n")
    return ["collect", "--cmd", f"{sys.executable} {script} --api-key {FLAG_KEY} --token={OPENAI}",
            "--duration", "2", "--interval", "0.5", "--stacks", "0", "--log", str(ctx.log),
            "--out", str(ctx.tmp / "bundle"), "--export", str(ctx.tmp / "bundle.tar.gz"),
            "--json", "-"]


def _report(ctx: Ctx) -> list[str]:
    return ["report", str(ctx.planted_run()), "--out", str(ctx.tmp / "report"),
            "--format", "md,pdf", "--sign", str(ctx.key()), "--json", "-"]


def _schema_check(ctx: Ctx) -> list[str]:
    """A document whose wrong fields and unknown key are secrets: the one-line refusal (exit 2)
    must name the field without echoing them."""
    path = ctx.inputs / "stalls.json"
    path.write_text(json.dumps({"schema_version": 1, "kind": OPENAI, "phases": HF,
                                "findings": [], FLAG_KEY: AWS_SECRET}))
    return ["schema", "stalls", "--check", str(path)]


def _verify(ctx: Ctx) -> list[str]:
    run(ctx, _report(ctx))  # what it verifies (its bytes are grepped too)
    return ["verify", str(ctx.tmp / "report"), "--key", str(ctx.key()) + ".pub", "--json", "-"]


def _simulate(ctx: Ctx) -> list[str]:
    """`simulate` serves until stopped: started in the background, asked once with the key,
    then interrupted; the case's command itself is a no-op `--help` of it."""
    ready = ctx.tmp / "ready"
    proc = subprocess.Popen(
        [sys.executable, "-m", "sparktriage", "simulate", "--port", "0", "--ready-file", str(ready),
         "--api-key", FLAG_KEY, "--trace", str(ctx.tmp / "trace.jsonl")],
        stdout=open(ctx.tmp / "simulate.stdout", "wb"), stderr=open(ctx.tmp / "simulate.stderr", "wb"),
        env=_env(), cwd=ctx.tmp)
    ctx.background.append(proc)
    deadline = time.monotonic() + 60
    while not (ready.is_file() and ready.read_text().strip()) and time.monotonic() < deadline:
        time.sleep(0.1)
    url = ready.read_text().strip()
    body = json.dumps({"model": "sim", "prompt": f"say {HF}", "max_tokens": 4}).encode()
    req = urllib.request.Request(url + "/v1/completions", data=body, headers={
        "Authorization": f"Bearer {FLAG_KEY}", "Content-Type": "application/json"})
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    with opener.open(req, timeout=30) as response:
        assert response.status == 200
    proc.send_signal(signal.SIGINT)
    proc.wait(timeout=30)
    return ["simulate", "--help"]


def _reproduce(ctx: Ctx) -> list[str]:
    """Client inputs carrying secrets: a serve script, a docker line, an env dump (captured live)."""
    serve = ctx.inputs / "serve.sh"
    serve.write_text(f"export HF_TOKEN={HF}\nexport OPENAI_API_KEY={ENV_KEY}\n"
                     f"export HF_ENDPOINT=https://admin:{URL_PASSWORD}@hub.example.com\n"
                     f"vllm serve /models/m --api-key {FLAG_KEY} --served-model-name m "
                     f"--hf-overrides '{{\"token\": \"{OPENAI}\"}}' --header 'Authorization: Bearer {BEARER}'\n")
    docker = ctx.inputs / "docker.sh"
    docker.write_text(f"docker run -e AWS_SECRET_ACCESS_KEY={AWS_SECRET} -e AWS_ACCESS_KEY_ID="
                      f"{AWS_ID} img:1 vllm serve /models/m\n")
    dump = ctx.inputs / "client.env"
    dump.write_text(f"PATH=/usr/bin\nHF_TOKEN={HF}\nVLLM_API_KEY={FLAG_KEY}\n")
    return ["reproduce", str(serve), str(docker), str(dump), "--out", str(ctx.tmp / "repro"), "--json", "-"]


CASES: dict[str, list[Case]] = {
    "reproduce": [Case("client-inputs", _reproduce, slow=True)],
    "logs": [Case("file", lambda c: ["logs", str(c.log), "--json", str(c.tmp / "logs.json")]),
             Case("stdout", lambda c: ["logs", str(c.log), "--json", "-"])],
    "stalls": [Case("file", lambda c: ["stalls", str(c.log), "--json", str(c.tmp / "stalls.json")])],
    "bench": [Case("sim", lambda c: [
        "bench", "--endpoint", c.sim_url_with_credentials(), "--api-key", FLAG_KEY,
        "--model", "sim", "--requests", "1", "--warmup", "0", "--max-tokens", "4",
        "--workload", "code", "--out", str(c.tmp / "run"), "--log", str(c.log), "--log-wait", "0",
        "--json", "-"])],
    "probe": [Case("sim", lambda c: [
        "probe", "--endpoint", c.sim_url_with_credentials(), "--api-key", FLAG_KEY,
        "--model", "sim", "--out", str(c.tmp / "run"), "--json", str(c.tmp / "probe.json")])],
    "selfcheck": [Case("sim", lambda c: [
        "selfcheck", "--endpoint", c.sim_url_with_credentials(), "--api-key", FLAG_KEY,
        "--model", "sim", "--quick", "--workload", "code", "--no-probe", "--log", str(c.log),
        "--format", "md", "--out", str(c.tmp / "run"), "--json", "-"], timeout_s=300, slow=True)],
    "collect": [Case("cmd", _collect)],
    "launch": [Case("planted-engine", lambda c: [
        "launch", str(_deployment(c)), "--out", str(c.tmp / "run"), "--hold", "1",
        "--json", "-"], ok=(0, 1, 3), slow=True)],
    "report": [Case("planted-run", _report, slow=True)],
    "verify": [Case("report", _verify)],
    "simulate": [Case("served", _simulate)],
    "sweep": [Case("planted-engine", lambda c: [
        "sweep", str(_deployment(c)), "--depths", "0,1", "--max-launches", "2", "--requests", "1",
        "--max-tokens", "8", "--workload", "code", "--out", str(c.tmp / "sweep"), "--json", "-"],
        timeout_s=300, slow=True)],
    "session": [Case("planted-engine", lambda c: [
        "session", "run", str(_deployment(c)), "--out", str(c.tmp / "session"), "--launches", "1",
        "--depths", "0", "--requests", "1", "--max-tokens", "8", "--workload", "code",
        "--no-probe", "--format", "md", "--json", "-"], timeout_s=300, slow=True)],
    "testbed": [Case("lab-up-down", _lab_up_down, netns=True)],
    "schema": [Case("check-planted", _schema_check, ok=(2,))],
    "rules": [Case("check", _rules_file, ok=(0, 1, 2))],
    # the session's one demo run (tests/conftest.py `demo_session`, also checked by
    # tests/cli/test_demo.py): run with _env()'s planted secrets from its own working folder
    "demo": [Case("real-vllm", lambda c: [], vllm=True, shared="demo_session")],
}


def _env() -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SPARKTRIAGE_SIM",))}
    env.update(ENV)
    env["NO_PROXY"] = env["no_proxy"] = "127.0.0.1,localhost"
    return env


def run(ctx: Ctx, argv: list[str], timeout_s: float = 300) -> subprocess.CompletedProcess:
    out = subprocess.run([sys.executable, "-m", "sparktriage", *argv], capture_output=True,
                         env=_env(), cwd=ctx.tmp, timeout=timeout_s, check=False)
    (ctx.tmp / f".out-{len(list(ctx.tmp.glob('.out-*')))}").write_bytes(out.stdout + b"\n" + out.stderr)
    return out


def registered_commands() -> list[str]:
    from sparktriage.cli.registry import COMMANDS

    return sorted(command.name for command in COMMANDS)


def _params():
    for command in registered_commands():
        cases = CASES.get(command)
        if not cases:
            yield pytest.param(command, None, id=f"{command}-NO-CASE")
            continue
        for case in cases:
            marks = ([pytest.mark.vllm] if case.vllm else []) + (
                [pytest.mark.slow] if case.slow else []) + ([pytest.mark.netns] if case.netns else []) + (
                [pytest.mark.shares(case.shared)] if case.shared else [])
            yield pytest.param(command, case, id=f"{command}-{case.name}", marks=marks)


@pytest.mark.parametrize("command,case", list(_params()))
def test_no_planted_secret_in_anything_a_command_writes(command, case, tmp_path, request):
    assert case is not None, (f"`sparktriage {command}` has no redaction case: add one to CASES "
                              "in tests/redact/test_conformance.py")
    inputs = tmp_path / "inputs"
    inputs.mkdir()
    ctx = Ctx(tmp_path / "work", inputs, write_planted_log(inputs / "planted.log"), request)
    ctx.tmp.mkdir()
    try:
        if case.shared:  # already run, with the same environment (_env) and its own folder
            done = request.getfixturevalue(case.shared)
            ctx.tmp, result = done.work, done.result
        else:
            result = run(ctx, case.argv(ctx), case.timeout_s)
    finally:
        for proc in ctx.background:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    assert result.returncode in case.ok, (result.returncode, result.stderr.decode()[-2000:])
    outputs = [("stdout", result.stdout), ("stderr", result.stderr)]
    for path in sorted(ctx.tmp.rglob("*")):
        if path.is_file() and not path.is_symlink():
            outputs += _expand(str(path.relative_to(ctx.tmp)), path.read_bytes())
    found = leaks(outputs, PLANTED + ctx.extra_secrets)
    assert not found, "\n".join(found[:40])
    written = [name for name, _ in outputs if not name.startswith(("std", ".out-"))]
    # logs, rules and schema print only; the lab's files go with its own teardown (what `lab up`
    # printed, its lab description as JSON, is in the grepped .out files)
    assert written or command in ("logs", "rules", "schema", "testbed"), \
        "the case wrote nothing to check"


def test_the_planted_secrets_reach_the_commands():
    """The plant is real: the log carries every secret, the detector is what removes them."""
    text = "\n".join(planted_log_lines())
    for secret in (FLAG_KEY, HF, OPENAI, AWS_ID, URL_PASSWORD, BEARER, *KEY_LINES):
        assert secret in text
    assert all(secret in _env().values() for secret in (ENV_KEY, HF, AWS_ID, AWS_SECRET))
