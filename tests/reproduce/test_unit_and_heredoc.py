"""Here-document config files (bash/files.py) and systemd units (importers/systemd.py).

Minimal synthetic inputs written for these tests (the published cases are corpus 27 and 28).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from reproduce_helpers import cli, gb10_lab, run
from sparktriage.errors import InputError
from sparktriage.reproduce.read.detect import detect


def _write(tmp: Path, name: str, text: str) -> Path:
    path = tmp / name
    path.write_text(text)
    return path


def test_a_heredoc_written_config_is_the_config_file(tmp_path: Path) -> None:
    script = _write(tmp_path, "run.sh", """\
TP=2
CFG=/tmp/vllm.yaml
cat > "$CFG" <<YAML
tensor-parallel-size: $TP
max_num_seqs: 6
speculative_config: {method: mtp, num_speculative_tokens: 2}
YAML
vllm serve org/m --config $CFG --max-num-seqs 8
""")
    r = run([script], tmp_path, gb10_lab(tmp_path, 2))
    d = r.deployment
    assert d["parallelism"]["tp"] == 2  # the body is expanded ($TP), as bash writes it
    assert d["serve"]["max_num_seqs"] == 8  # the command line wins over the file
    assert d["speculative"]["method"] == "mtp" and d["speculative"]["num_speculative_tokens"] == 2
    assert "--config /tmp/vllm.yaml: read from the here-document of line 3" in r.mapped
    assert r.placeholders == [] and not any("--config" in u.text for u in r.unknown)


@pytest.mark.parametrize("writer", [
    "cat <<'EOF' > /srv/cfg/serve.yaml\n{body}EOF\n",
    "tee /srv/cfg/serve.yaml >/dev/null <<'EOF'\n{body}EOF\n",
    "cat <<'EOF' | sudo tee /srv/cfg/serve.yaml\n{body}EOF\n",
])
def test_heredoc_writers_and_a_container_bind(tmp_path: Path, writer: str) -> None:
    body = "max-model-len: 4096\nserved_model_name: $NAME\n"  # quoted delimiter: no expansion
    script = _write(tmp_path, "run.sh", writer.format(body=body)
                    + "docker run --gpus all -v /srv/cfg:/cfg img vllm serve org/m "
                      "--config /cfg/serve.yaml\n")
    r = run([script], tmp_path)
    assert r.deployment["serve"]["max_model_len"] == 4096
    assert r.deployment["model"]["name"] == "$NAME"  # and the model stays org/m
    assert r.deployment["model"]["path"] == "org/m"


def test_the_last_heredoc_written_to_a_path_wins(tmp_path: Path) -> None:
    script = _write(tmp_path, "run.sh", "cat > c.yaml <<EOF\nmax-model-len: 1000\nEOF\n"
                    "cat > ./c.yaml <<EOF\nmax-model-len: 2000\nEOF\n"
                    "cat > other.yaml <<EOF\nmax-model-len: 3000\nEOF\n"
                    "vllm serve org/m --config c.yaml\n")
    assert run([script], tmp_path).deployment["serve"]["max_model_len"] == 2000


def test_a_heredoc_config_that_is_not_yaml_is_one_line(tmp_path: Path) -> None:
    script = _write(tmp_path, "run.sh", "cat > c.yaml <<EOF\nmax-model-len: [1, 2\nEOF\n"
                    "vllm serve org/m --config c.yaml\n")
    with pytest.raises(InputError) as err:
        run([script], tmp_path)
    assert f"{script}:1: the here-document written to c.yaml (read by --config) is not YAML" \
        in err.value.one_line()
    done = cli("reproduce", str(script), "--no-capture", "--out", str(tmp_path / "o"))
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1


UNIT = """\
[Unit]
Description=vLLM
After=network-online.target

[Service]
Type=simple
User=svc
Environment="NCCL_DEBUG=INFO" "HF_TOKEN=hf_xxxUnitTestTokenValue0000000"
Environment=MODEL=org/big-moe LEN=8192
EnvironmentFile=-/etc/vllm/vllm.env
EnvironmentFile=/etc/vllm/missing.env
WorkingDirectory=/opt/vllm
ExecStartPre=-/usr/bin/nvidia-smi -pm 1
ExecStart=/opt/venv/bin/vllm serve ${MODEL} \\
    --tensor-parallel-size 2 --max-model-len $LEN \\
    --served-model-name "big moe;v2" --gpu-memory-utilization ${GMU}
Restart=on-failure

[Install]
WantedBy=multi-user.target
"""


def test_a_systemd_unit_is_a_launch_input(tmp_path: Path) -> None:
    unit = _write(tmp_path, "vllm.service", UNIT)
    _write(tmp_path, "vllm.env", "GMU=0.78\nVLLM_LOGGING_LEVEL=DEBUG\n")
    assert detect(UNIT) == "systemd"
    r = run([unit], tmp_path, gb10_lab(tmp_path, 2))
    d = r.deployment
    assert r.inputs[0].kind == "systemd"
    assert d["model"]["path"] == "org/big-moe"  # ${MODEL} from Environment=
    assert d["parallelism"]["tp"] == 2 and d["serve"]["max_model_len"] == 8192
    assert d["model"]["name"] == "big moe;v2"  # `;` is not a separator in a unit
    assert d["serve"]["gpu_memory_utilization"] == 0.78  # ${GMU} from EnvironmentFile=
    assert d["engine"]["vllm"] == "/opt/venv/bin/vllm"
    assert d["env"]["NCCL_DEBUG"] == "INFO" and d["env"]["VLLM_LOGGING_LEVEL"] == "DEBUG"
    assert d["env"]["HF_TOKEN"] == "<supply:HF_TOKEN>" and r.placeholders == ["HF_TOKEN"]
    assert "hf_xxxUnitTest" not in (tmp_path / "out" / "deployment.yaml").read_text()
    rows = {u.text: u.note for u in r.unknown}
    assert rows["EnvironmentFile=/etc/vllm/missing.env"].startswith("line 11: the file was not "
                                                                      "given")
    assert "line 13: ignored: not a server command" in rows["/usr/bin/nvidia-smi -pm 1"]
    assert any(n.endswith("line 17: Restart=on-failure (a setting of the unit, not of the "
                          "server)") for n in r.notes)
    assert "line 14: ExecStart= -> the server command" in r.mapped


def test_a_unit_running_a_given_script_reads_it_there(tmp_path: Path) -> None:
    unit = _write(tmp_path, "serve.service", "[Service]\nEnvironment=TP=4\n"
                  "ExecStart=/bin/bash /opt/vllm/start.sh\n")
    script = _write(tmp_path, "start.sh", "exec vllm serve org/m -tp ${TP:-1}\n")
    r = run([unit, script], tmp_path, gb10_lab(tmp_path, 4))
    assert [i.path for i in r.inputs] == [str(unit)]  # the script is read where the unit runs it
    assert r.deployment["parallelism"]["tp"] == 4  # with the unit's environment
    assert len(r.client_nodes) == 4


def test_a_unit_with_bash_c_and_an_execstart_reset(tmp_path: Path) -> None:
    unit = _write(tmp_path, "a.service", "[Service]\nExecStart=/usr/bin/vllm serve old/m\n"
                  "ExecStart=\n"
                  "ExecStart=/bin/bash -lc 'source /opt/env.sh; exec vllm serve new/m -tp 1'\n")
    r = run([unit], tmp_path)
    assert r.deployment["model"]["path"] == "new/m"
    assert any(u.text.startswith("source /opt/env.sh") for u in r.unknown)


def test_what_a_unit_cannot_say_is_one_line(tmp_path: Path) -> None:
    bad = _write(tmp_path, "bad.service", "[Service]\nEnvironment=A=1\n"
                 "ExecStart=/usr/bin/vllm serve org/m --served-model-name \"open\n")
    done = cli("reproduce", str(bad), "--no-capture", "--out", str(tmp_path / "o"))
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert f"{bad}:3: unbalanced quote in ExecStart=" in done.stderr
    empty = _write(tmp_path, "empty.service", "[Service]\nExecStart=\n")
    with pytest.raises(InputError, match="has no ExecStart= command"):
        run([empty], tmp_path)



INSTALLER = """\
#!/bin/bash
set -e
MODEL_NAME=org/moe-fp4
docker pull vllm/vllm-openai:latest
cat > /etc/systemd/system/other.service <<'END'
[Service]
ExecStart=/usr/bin/sleep infinity
END
cat > /etc/systemd/system/vllm.service << SVC
[Unit]
Description=vLLM
[Service]
Restart=always
ExecStart=/usr/bin/docker run --rm --gpus all vllm/vllm-openai:latest \\\\
  --model $MODEL_NAME --gpu-memory-utilization 0.9
SVC
systemctl daemon-reload
systemctl enable --now vllm
"""


def test_a_script_that_installs_a_unit_reads_that_unit(tmp_path: Path) -> None:
    """Read, never run: the unit the script writes and starts is the server."""
    script = _write(tmp_path, "install.sh", INSTALLER)
    assert detect(INSTALLER) != "systemd"  # a script writing a unit is a script
    r = run([script], tmp_path)
    d = r.deployment
    assert d["model"]["path"] == "org/moe-fp4"  # the unit systemctl starts, expanded
    assert d["serve"]["gpu_memory_utilization"] == 0.9
    assert d["engine"]["image"] == "vllm/vllm-openai:latest"
    assert any("line 9: the systemd unit written to /etc/systemd/system/vllm.service" in n
               for n in r.notes)
    assert any(n.endswith("line 13: Restart=always (a setting of the unit, not of the server)")
               for n in r.notes)  # the unit's lines are the script's lines


def test_heredoc_files_are_kept_in_memory_and_bounded(tmp_path: Path) -> None:
    target = tmp_path / "written-by-the-script.yaml"
    many = "".join(f"cat > /tmp/f{i}.yaml <<EOF\nx: {i}\nEOF\n" for i in range(70))
    script = _write(tmp_path, "run.sh", many + f"cat > {target} <<EOF\nmax-model-len: 512\nEOF\n"
                    f"vllm serve org/m --config {target}\n")
    r = run([script], tmp_path)
    assert not target.exists()  # read as data: nothing the script names is written
    # past 64 files the rest are not kept: the config is then a file not given
    assert any("more than 64 files written from here-documents" in n for n in r.notes)
    assert any(u.text == f"--config {target}" and "the config file was not given" in u.note
               for u in r.unknown)
    assert r.deployment["serve"].get("max_model_len") is None
