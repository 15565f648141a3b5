"""Container scripts (importers/container_script.py, container.py): variables the script sets
for later commands, and a cleared compose entrypoint. Minimal synthetic inputs (the published
case is corpus 42)."""

from __future__ import annotations

from pathlib import Path

from reproduce_helpers import gb10_lab, run
from sparktriage.reproduce.importers.common import Ctx
from sparktriage.reproduce.importers.container_script import split_script
from sparktriage.reproduce.model import InputRef
from sparktriage.reproduce.secrets import Placeholders


def _ctx() -> Ctx:
    return Ctx(InputRef(path="c.yml", kind="compose"), Placeholders())


def test_assignments_alone_set_variables_for_later_commands() -> None:
    script = ('N=3; SPEC="{\\"method\\":\\"mtp\\",\\"num_speculative_tokens\\":${N}}"; '
              'A=1 echo x; export B=2; C=4; export C; vllm serve m --speculative-config "$SPEC"')
    commands = split_script(script, _ctx(), 1)
    serve = commands[-1]
    assert serve.words == ["vllm", "serve", "m", "--speculative-config",
                           '{"method":"mtp","num_speculative_tokens":3}']
    assert serve.env == {"B": "2", "C": "4"}  # exported only; N, SPEC are the script's own
    assert commands[0].env == {"A": "1"}  # a prefix assignment is that command's alone


def test_a_cleared_compose_entrypoint_runs_the_server_program(tmp_path: Path) -> None:
    path = tmp_path / "compose.yml"
    path.write_text("""\
services:
  vllm:
    image: img:7
    entrypoint: []
    command:
      - bash
      - -lc
      - >
        K=4;
        exec /usr/local/bin/vllm serve /models
        --speculative-config "{\\"method\\":\\"dspark\\",\\"num_speculative_tokens\\":$${K}}"
""")
    r = run([path], tmp_path, gb10_lab(tmp_path, 1))
    d = r.deployment
    assert d["model"]["path"] == "/models"
    assert d["speculative"]["method"] == "dspark"
    assert d["speculative"]["num_speculative_tokens"] == 4
    assert d["engine"]["container_args"][:2] == ["--entrypoint", "/usr/local/bin/vllm"]
    assert d["engine"]["vllm"] == []
