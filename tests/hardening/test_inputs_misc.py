"""Issue 16: names, control characters, symlinks, line records and --until-ready."""

from __future__ import annotations

import re
import shutil
import socket
import sys
from pathlib import Path

import pytest

from sparktriage.config.deployment import load_deployment
from sparktriage.errors import ConfigError
from sparktriage.bundle.layout import check_name
from sparktriage.launch.attach_collect import endpoint_from_argv
from sparktriage.textsafe import escape_controls

from hardening_cli import REPO, cli, one_error

SRC = REPO / "src" / "sparktriage"


def _deployment(tmp_path: Path, extra: str = "", env: str = "", node: str = "local") -> Path:
    path = tmp_path / "dep.yaml"
    path.write_text(
        "schema_version: 1\nname: d\n"
        f"lab: {{nodes: [{{name: {node}, host: 127.0.0.1, gpu: none}}]}}\n"
        "model: {path: /models/m, name: tiny}\nengine: {vllm: /bin/vllm}\n"
        f"serve: {{host: 127.0.0.1, port: 8011{extra}}}\n" + env)
    return path


@pytest.mark.parametrize("env, node", [('env: {"FOO\\n": "1"}\n', "local"),
                                       ("", '"local\\n"')])
def test_names_with_a_trailing_newline_are_refused(tmp_path, env, node):
    # before: `$` accepted one trailing newline: FOO\n reached the child environment and
    # local\n made a bundle folder with a newline in its name
    with pytest.raises(ConfigError):
        load_deployment(_deployment(tmp_path, env=env, node=node))
    with pytest.raises(Exception, match="node name"):
        check_name("local\n")


def test_every_anchored_validation_pattern_ends_in_backslash_z():
    # the mechanism: no `^...$` pattern left that would accept "name\n"
    offenders = []
    for path in SRC.rglob("*.py"):
        for number, line in enumerate(path.read_text().splitlines(), 1):
            if re.search(r"""re\.(compile|match|fullmatch)\(r?["']\^.*\$["']""", line) \
                    and "MULTILINE" not in line:
                offenders.append(f"{path.relative_to(REPO)}:{number}")
    assert offenders == []


def test_dry_run_shows_control_characters_escaped(tmp_path):
    # before: ANSI sequences from the config reached the terminal and could hide a flag
    path = _deployment(tmp_path, extra=', extra_args: ["--x\\e[8m", "--trust-remote-code\\e[0m",'
                                       ' "a\\nb"]')
    result = cli("launch", str(path), "--dry-run")
    assert result.returncode == 0, result.stderr
    assert "\x1b" not in result.stdout
    assert "--x\\x1b[8m" in result.stdout and "--trust-remote-code\\x1b[0m" in result.stdout
    argv_lines = [line for line in result.stdout.splitlines() if "argv:" in line]
    assert len(argv_lines) == 1 and "a\\nb" in argv_lines[0]
    json_out = cli("launch", str(path), "--dry-run", "--json", "-")
    assert "\\u001b[8m" in json_out.stdout  # JSON keeps the data (escaped by JSON itself)
    assert escape_controls("ok\u202eevil\x07") == "ok\\u202eevil\\x07"


def test_report_refuses_symlinks_in_the_run_directory(report_run, tmp_path):
    # before: a deployment.yaml symlinked to a local file was copied into the report
    run = tmp_path / "run"
    shutil.copytree(report_run, run, symlinks=True)
    secret = tmp_path / "private.yaml"
    secret.write_text("ssh_private_key: TOP-SECRET-CONTENT\n")
    (run / "deployment.yaml").unlink(missing_ok=True)
    (run / "deployment.yaml").symlink_to(secret)
    result = cli("report", str(run), "--out", str(tmp_path / "r"), timeout=300)
    assert result.returncode == 2
    assert "deployment.yaml: a symbolic link in the run directory (not followed)" in one_error(result)
    assert not (tmp_path / "r").exists() or "TOP-SECRET" not in "".join(
        p.read_text(errors="ignore") for p in (tmp_path / "r").rglob("*") if p.is_file())


def test_logs_survive_an_escaped_surrogate_in_a_line_record(tmp_path):
    # before: the "\ud800" escape in a line record crashed `logs` while printing
    path = tmp_path / "server.lines.jsonl"
    path.write_text('{"t": 1.0, "node": "n", "stream": "stdout", "line": '
                    '"INFO 01-01 00:00:01 [api_server.py:1] odd \\ud800 text \\u001b[31m"}\n')
    result = cli("logs", str(path))
    assert result.returncode in (0, 1), result.stderr
    assert "Traceback" not in result.stderr and "internal error" not in result.stderr


def test_endpoint_comes_from_the_commands_own_address():
    assert endpoint_from_argv(["vllm", "serve", "m", "--port", "8123"]) == "http://127.0.0.1:8123"
    assert endpoint_from_argv(["vllm", "serve", "m", "--host=::1", "--port=9"]) == "http://[::1]:9"
    assert endpoint_from_argv(["vllm", "serve", "m", "--host", "0.0.0.0"]) == "http://127.0.0.1:8000"
    assert endpoint_from_argv(["python", "server.py"]) is None
    assert endpoint_from_argv(["vllm", "serve", "--port", "99999"]) is None


SERVER = """
import sys, http.server
port = int(sys.argv[sys.argv.index("--port") + 1])
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200 if self.path == "/health" else 404)
        self.send_header("Content-Length", "0")
        self.end_headers()
    def log_message(self, *a):
        print("request", self.path, flush=True)
print("listening", flush=True)
http.server.HTTPServer(("127.0.0.1", port), H).serve_forever()
"""


@pytest.mark.slow
def test_collect_until_ready_waits_on_the_commands_port(tmp_path):
    # before: it polled 127.0.0.1:8000 whatever the command's --port, and never stopped
    script = tmp_path / "server.py"
    script.write_text(SERVER)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    result = cli("collect", "--cmd", f"{sys.executable} {script} --port {port}", "--until-ready",
                 "--out", str(tmp_path / "b"), "--duration", "60", "--json", "-", timeout=120)
    assert result.returncode == 0, result.stderr
    assert '"outcome": "ready"' in result.stdout
    unknown = cli("collect", "--cmd", f"{sys.executable} {script}", "--until-ready",
                  "--out", str(tmp_path / "c"))
    assert unknown.returncode == 2
    assert "cannot tell which address" in one_error(unknown) and "--endpoint" in unknown.stderr


def test_bundle_readers_do_not_follow_symlinks(tmp_path):
    from sparktriage.bundle.reader import Bundle
    from sparktriage.errors import InputError
    from sparktriage.report.format import cell
    root = tmp_path / "b"
    (root / "nodes").mkdir(parents=True)
    (root / "bundle.json").write_text('{"schema_version": 1, "kind": "sparktriage-bundle", '
                                      '"nodes": []}')
    elsewhere = tmp_path / "elsewhere"
    (elsewhere / "logs").mkdir(parents=True)
    (root / "nodes" / "n").symlink_to(elsewhere, target_is_directory=True)
    private = tmp_path / "private.json"
    private.write_text('{"secret": "TOP-SECRET"}')
    with Bundle.open(root) as bundle:
        assert bundle.nodes() == []  # a linked node folder is not a node
        with pytest.raises(InputError, match="symbolic link"):
            bundle.node_dir("n")
        (root / "environment-diff.json").symlink_to(private)
        with pytest.raises(InputError, match="symbolic link"):
            bundle.environment_diff()
    assert cell("--flag\x1b[8m") == "--flag\\x1b[8m"  # report tables and Markdown
