"""Compose files whose vLLM services are all behind profiles, and several vLLM services that
are separate servers, not nodes (importers/compose.py, cluster.kept_servers).

Minimal synthetic compose files written for these tests (the published case is corpus 40).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from reproduce_helpers import gb10_lab, run
from sparktriage.errors import InputError

SERVICE = """\
  {name}:
    profiles: [{profile}]
    image: img:{tag}
    command: [vllm, serve, {model}, --max-num-seqs, "{seqs}"{extra}]
"""


def _compose(tmp: Path, *services: str, name: str = "compose.yml") -> Path:
    path = tmp / name
    path.write_text("services:\n" + "".join(services))
    return path


def test_servers_all_behind_profiles_are_read_and_the_first_is_used(tmp_path: Path) -> None:
    path = _compose(tmp_path,
                    SERVICE.format(name="chat", profile="models", tag=1, model="org/a", seqs=4,
                                   extra=""),
                    SERVICE.format(name="coder", profile="models", tag=2, model="org/b",
                                   seqs=8, extra=""))
    r = run([path], tmp_path, gb10_lab(tmp_path, 2))
    d = r.deployment
    assert d["model"]["path"] == "org/a" and d["engine"]["image"] == "img:1"
    assert d["serve"]["max_num_seqs"] == 4
    assert d["parallelism"].get("nodes") in (None, 1)  # one node
    assert any("every vLLM service is in a profile none activates" in n for n in r.notes)
    rows = [u for u in r.unknown if u.text == "coder"]
    assert len(rows) == 1 and "another vLLM server" in rows[0].note
    assert rows[0].note.startswith("line 9: ") and "chat (line 5) is reproduced" in rows[0].note


def test_native_multi_node_services_stay_nodes(tmp_path: Path) -> None:
    node = ', --nnodes, "2", --node-rank, "{rank}", --master-addr, 198.51.100.1{more}'
    path = _compose(tmp_path,
                    SERVICE.format(name="n0", profile="p", tag=1, model="org/a", seqs=4,
                                   extra=node.format(rank=0, more="")
                                   + ', --tensor-parallel-size, "2"'),
                    SERVICE.format(name="n1", profile="p", tag=1, model="org/a", seqs=4,
                                   extra=node.format(rank=1, more=", --headless")
                                   + ', --tensor-parallel-size, "2"'))
    r = run([path], tmp_path, gb10_lab(tmp_path, 2))
    assert r.deployment["parallelism"]["nodes"] == 2
    assert not any("another vLLM server" in u.note for u in r.unknown)


def test_no_server_at_all_is_still_refused(tmp_path: Path) -> None:
    path = tmp_path / "compose.yml"
    path.write_text("services:\n  web:\n    profiles: [ui]\n    image: nginx\n")
    with pytest.raises(InputError, match="no service runs vLLM or Ray"):
        run([path], tmp_path, gb10_lab(tmp_path, 1))
