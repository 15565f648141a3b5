"""A client's folder chooses nothing that the live capture runs (docs/security.md).

The folder holds everything a client could use to run code on the lab during `reproduce`: a
`sitecustomize.py` beside an `export PYTHONPATH=.`, exports of LD_PRELOAD, PATH and BASH_ENV
naming its own files, a script whose `vllm` is an absolute path with a `#!` pointing at a
canary, and a deployment.yaml bringing its own `lab:` (an SSH node, an ssh_config with a
ProxyCommand). `reproduce` runs with its default live capture, from inside that folder, with
an `ssh` first on PATH that would leave a canary too. Every canary must stay absent.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

CANARIES = ("site", "interp", "path-python", "path-env", "bash-env", "proxy", "ssh",
            "preload-script")


def _exe(path: Path, text: str) -> Path:
    path.write_text(text)
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return path


def _canary_script(canaries: Path, name: str) -> str:
    return f"#!/bin/sh\ntouch {canaries / name}\nexit 0\n"


@pytest.fixture()
def hostile(tmp_path: Path) -> dict:
    canaries = tmp_path / "canaries"
    canaries.mkdir()
    client = tmp_path / "client"
    (client / "bin").mkdir(parents=True)
    (client / "sitecustomize.py").write_text(
        f"open({str(canaries / 'site')!r}, 'w').write('ran')\n")
    _exe(client / "interp", _canary_script(canaries, "interp"))
    _exe(client / "bin" / "vllm", f"#!{client / 'interp'}\n")
    for name, canary in (("python3", "path-python"), ("python", "path-python"),
                         ("env", "path-env")):
        _exe(client / "bin" / name, _canary_script(canaries, canary))
    _exe(client / "bash_env.sh", f"touch {canaries / 'bash-env'}\n")
    _exe(client / "preload.sh", _canary_script(canaries, "preload-script"))
    (client / "run.sh").write_text(
        "#!/bin/bash\n"
        "export PYTHONPATH=.\n"
        f"export LD_PRELOAD={client / 'preload.sh'}\n"
        f"export PATH={client / 'bin'}:$PATH\n"
        f"export BASH_ENV={client / 'bash_env.sh'}\n"
        f"{client / 'bin' / 'vllm'} serve /models/tiny --port 8123\n")
    (client / "ssh_config").write_text(
        f"Host *\n  ProxyCommand /bin/sh -c 'touch {canaries / 'proxy'}'\n")
    (client / "lab.yaml").write_text(
        "name: client-lab\nssh_config: ssh_config\nnodes:\n"
        "  - {name: evil1, host: 10.9.9.9, ssh: root@evil.example, port: 2222,\n"
        "     identity_file: id_evil, python: ./bin/python3}\n")
    (client / "deployment.yaml").write_text(
        "schema_version: 1\nlab: lab.yaml\nmodel: {path: /models/tiny}\n"
        f"engine: {{vllm: {client / 'bin' / 'vllm'}}}\n"
        "env: {PYTHONPATH: ., PYTHONSTARTUP: ./sitecustomize.py}\n")
    # an `ssh` first on sparktriage's own PATH: any SSH connection attempt leaves a canary
    fake = tmp_path / "fakebin"
    fake.mkdir()
    _exe(fake / "ssh", _canary_script(canaries, "ssh"))
    return {"client": client, "canaries": canaries, "fakebin": fake, "tmp": tmp_path}


@pytest.mark.parametrize("inputs", [["run.sh"], ["deployment.yaml"]])
def test_live_capture_runs_nothing_the_client_sent(hostile: dict, inputs: list[str]) -> None:
    client, canaries = hostile["client"], hostile["canaries"]
    out = hostile["tmp"] / "out"
    env = {**os.environ, "PATH": f"{hostile['fakebin']}:{os.environ.get('PATH', '')}"}
    done = subprocess.run([sys.executable, "-m", "sparktriage", "reproduce", *inputs,
                           "--out", str(out), "--json", str(out / "result.json")],
                          cwd=client, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode in (0, 2), done.stderr[-3000:]
    assert sorted(p.name for p in canaries.iterdir()) == [], done.stderr[-3000:]
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads((out / "result.json").read_text())
    assert result["lab_capture"] == {"local": "live"}
    assert result["plan"]["lab"] == "this machine (no --lab given)"
    assert any("of this machine only" in s for s in result["plan"]["statements"])
    written = (out / "deployment.yaml").read_text()
    assert "evil" not in written and "2222" not in written and "ssh_config" not in written
    if inputs == ["deployment.yaml"]:
        row = next(u for u in result["unknown"] if u["text"] == "lab: lab.yaml")
        assert "ignored" in row["note"] and "--lab" in row["note"]
    # what the client's environment would load is named, not applied
    loader = {u["text"] for u in result["unknown"] if "runs client code" in u["note"]}
    expected = {"PYTHONPATH", "LD_PRELOAD", "PATH", "BASH_ENV"} if inputs == ["run.sh"] \
        else {"PYTHONPATH", "PYTHONSTARTUP"}
    assert expected <= loader, result["unknown"]


def test_capture_request_holds_only_the_labs_choices(hostile: dict) -> None:
    """The declared capture: the lab's interpreter in isolated mode, an allow-listed
    environment, a private folder, and none of the client's planned variables."""
    from sparktriage.config.lab import Lab
    from sparktriage.launch.plan import build_plan
    from sparktriage.config.deployment import load_deployment
    from sparktriage.reproduce.check.capture import LAB_ENV_ALLOW, capture_request

    dep_path = hostile["tmp"] / "dep.yaml"
    dep_path.write_text(
        "schema_version: 1\nlab: {nodes: [{name: local, env: {NCCL_DEBUG: INFO}}]}\n"
        "model: {path: /models/tiny}\n"
        f"engine: {{vllm: {hostile['client'] / 'bin' / 'vllm'}}}\n"
        "env: {PYTHONPATH: ., LD_PRELOAD: /x.so}\n")
    dep = load_deployment(dep_path)
    assert isinstance(dep.lab, Lab)
    req = capture_request(build_plan(dep), "local", dep.lab.nodes[0], hostile["tmp"] / "c")
    assert req.cmd[:3] == (sys.executable, "-I", "-c")
    assert str(hostile["client"]) not in " ".join(req.cmd)
    assert dict(req.env) == {"NCCL_DEBUG": "INFO"}
    assert req.private_cwd and req.env_allow == LAB_ENV_ALLOW
    assert not {"LD_PRELOAD", "PYTHONPATH"} & set(dict(req.env))
    options = next(c.options for c in req.plan.collectors if c.name == "environment")
    assert str(hostile["client"]) not in str(options.get("python"))


def test_capture_of_an_ssh_node_uses_the_lab_files_interpreters(tmp_path: Path) -> None:
    """Over SSH: the node's `python` runs the placeholder, `vllm_python` is whose packages are
    read, and the transport is the lab file's; the deployment's engine path plays no part."""
    from sparktriage.config.deployment import load_deployment
    from sparktriage.launch.plan import build_plan
    from sparktriage.reproduce.check.capture import capture_request

    (tmp_path / "lab.yaml").write_text(
        "nodes:\n  - {name: s1, host: 10.0.0.1, ssh: admin@s1, port: 2200,\n"
        "     python: /opt/lab/bin/python3, vllm_python: /opt/lab/vllm/bin/python}\n")
    (tmp_path / "dep.yaml").write_text(
        "schema_version: 1\nlab: lab.yaml\nmodel: {path: /m}\n"
        "engine: {vllm: /home/client/evil/vllm}\nenv: {PYTHONPATH: /home/client}\n")
    dep = load_deployment(tmp_path / "dep.yaml")
    req = capture_request(build_plan(dep), "s1", dep.lab.nodes[0], tmp_path / "c")
    assert req.cmd[:2] == ("/opt/lab/bin/python3", "-I") and req.python == "/opt/lab/bin/python3"
    assert (req.transport.destination, req.transport.port) == ("admin@s1", 2200)
    options = next(c.options for c in req.plan.collectors if c.name == "environment")
    assert options["python"] == "/opt/lab/vllm/bin/python"
    assert "/home/client" not in repr(req)
