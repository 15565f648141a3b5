"""Bad input through the real command line: one line on stderr, the documented exit code."""

from __future__ import annotations

import re
import socket
import subprocess
import sys

import pytest


def cli(*args: str, cwd=None, env=None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "sparktriage", *args], capture_output=True, text=True,
                          timeout=120, cwd=cwd, env=env)


def one_error_line(result: subprocess.CompletedProcess) -> str:
    """The stderr line starting with `error:`; asserts there is exactly one and no traceback."""
    assert "Traceback" not in result.stderr and "Traceback" not in result.stdout
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, result.stderr
    return errors[0]


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_unreachable_endpoint_exits_3(tmp_path):
    port = closed_port()
    result = cli("bench", "--endpoint", f"http://127.0.0.1:{port}", "--out", str(tmp_path / "run"))
    assert result.returncode == 3
    assert re.fullmatch(rf"error: cannot connect to http://127\.0\.0\.1:{port}: connection refused "
                        r"\(hint: is the server running and ready\? vLLM refuses connections until "
                        r"startup completes\)", one_error_line(result))


@pytest.mark.parametrize("mode, what", [
    ("html", "returned an HTML page"),
    ("404", "answered HTTP 404: Not Found"),
])
def test_non_openai_server_exits_3(start_sim, tmp_path, mode, what):
    other = start_sim({"models_endpoint": mode})
    result = cli("bench", "--endpoint", other.base_url, "--out", str(tmp_path / "run"))
    assert result.returncode == 3
    assert one_error_line(result) == (f"error: {other.base_url} does not look like an OpenAI-compatible "
                                      f"server: GET /v1/models {what}")


def test_missing_api_key_exits_3_with_advice(start_sim, tmp_path):
    other = start_sim({"api_key": "k"})
    result = cli("bench", "--endpoint", other.base_url, "--out", str(tmp_path / "run"))
    assert result.returncode == 3
    assert one_error_line(result) == (f"error: {other.base_url} refused GET /v1/models (HTTP 401: "
                                      "Unauthorized) (hint: pass --api-key or set OPENAI_API_KEY)")


def test_404_model_exits_2(sim, tmp_path):
    result = cli("bench", "--endpoint", sim.base_url, "--model", "ghost", "--out", str(tmp_path / "run"))
    assert result.returncode == 2
    assert one_error_line(result) == (f"error: model 'ghost' is not served by {sim.base_url} "
                                      "(it lists: sim, strict)")


def workload_file(tmp_path, sim_override: str) -> str:
    path = tmp_path / "w.yaml"
    path.write_text("name: w\nprompt: hello\nmax_tokens: 24\nrequests: 2\nwarmup: 0\n"
                    f"extra_body:\n  sim: {sim_override}\n")
    return str(path)


def test_malformed_sse_at_once_exits_3(sim, tmp_path):
    workload = workload_file(tmp_path, "{faults: {malformed_at: 1}}")
    result = cli("bench", "--endpoint", sim.base_url, "--workload", workload, "--out", str(tmp_path / "run"))
    assert result.returncode == 3
    assert re.fullmatch(rf"error: {re.escape(sim.base_url)}/v1/completions could not stream a short "
                        r"test request: malformed SSE: event 2 is not a completion chunk: .+",
                        one_error_line(result))


def test_malformed_sse_mid_run_is_recorded_and_exits_1(sim, tmp_path):
    workload = workload_file(tmp_path, "{faults: {malformed_at: 10}}")
    result = cli("bench", "--endpoint", sim.base_url, "--workload", workload, "--out", str(tmp_path / "run"))
    assert result.returncode == 1 and "Traceback" not in result.stderr
    warning = [line for line in result.stderr.splitlines() if line.startswith("warning: w: 2 requests failed")]
    assert len(warning) == 1 and "malformed SSE: event 11 is not a completion chunk" in warning[0]
    assert not [line for line in result.stderr.splitlines() if line.startswith("error:")]


@pytest.mark.slow
def test_bad_workload_file_exits_2_with_file_and_line(tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text("name: bad\napi: completions\nprompt: hi\nmax_tokens: -3\n")
    result = cli("bench", "--endpoint", "http://127.0.0.1:1", "--workload", str(path))
    assert result.returncode == 2
    assert one_error_line(result) == (f"error: {path}:4: workload field 'max_tokens': must be at "
                                      "least 1")
    path.write_text("name: bad\nprompt: [oops\n")
    result = cli("bench", "--endpoint", "http://127.0.0.1:1", "--workload", str(path))
    assert result.returncode == 2
    assert re.fullmatch(rf"error: {re.escape(str(path))}:3: not valid YAML \(.+\)", one_error_line(result))


def test_bad_simulator_schedule_exits_2(tmp_path):
    path = tmp_path / "s.yaml"
    path.write_text("scenarios:\n  m:\n    ttft_s: -1\n")
    result = cli("simulate", "--schedule", str(path), "--port", "0")
    assert result.returncode == 2
    assert one_error_line(result) == (f"error: {path}:3: simulator configuration field "
                                      "'scenarios.m.ttft_s': must be at least 0")


@pytest.mark.parametrize("args, message", [
    (["bench"], "error: missing option --endpoint (or --rebuild RUN_DIR)"),
    (["bench", "--endpoint", "x", "--rebuild", "y"], "error: --rebuild works offline: do not give --endpoint with it"),
    (["bench", "--requests", "0", "--endpoint", "x"],
     "error: Invalid value for '--requests': must be at least 1 (see sparktriage bench --help)"),
    (["simulate", "--stall", "abc", "--port", "0"], "error: --stall 'abc': expected TOKENS:SECONDS, e.g. 100:2.5"),
    (["simulate", "--rate", "5", "--gap", "0.1", "--port", "0"], "error: give --rate or --gap, not both"),
    (["simulate", "--tokens-per-chunk", "0", "--port", "0"],
     "error: invalid scenario option: tokens per chunk must be 1..4096, and a list must not be empty"),
    (["nosuchcommand"], "error: No such command 'nosuchcommand'. (see sparktriage --help)"),
])
def test_usage_errors_exit_2(args, message):
    result = cli(*args)
    assert result.returncode == 2
    assert one_error_line(result) == message


def test_rebuild_of_a_missing_run_exits_2(tmp_path):
    result = cli("bench", "--rebuild", str(tmp_path / "absent"))
    assert result.returncode == 2
    assert one_error_line(result) == f"error: {tmp_path / 'absent' / 'run.json'}: no such file"


def test_simulator_port_in_use_exits_2():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        result = cli("simulate", "--port", str(port))
    assert result.returncode == 2
    assert one_error_line(result).startswith(f"error: cannot listen on 127.0.0.1:{port}: ")
