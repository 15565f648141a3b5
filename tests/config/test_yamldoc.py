"""The one YAML loader (`sparktriage.yamldoc`): one walk gives every key's line and every duplicate
key; the three families of callers (models with `file:line: WHAT field`, config `ConfigError`s,
rule `Problem`s) read the same walk."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import BaseModel, ConfigDict

from sparktriage import yamldoc
from sparktriage.errors import ConfigError
from sparktriage.stalls.loader import read_yaml

TEXT = """\
# a comment first
name: x
server:
  port: 80
  hosts:
    - a
    - {name: b, port: 2}
"""


class Server(BaseModel):
    model_config = ConfigDict(extra="forbid")
    port: int
    hosts: list
    user: str


class Doc(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str
    server: Server


def test_one_walk_gives_the_line_of_every_key_path():
    document = yamldoc.parse(TEXT, "t.yaml")
    assert document.data["server"]["hosts"][1] == {"name": "b", "port": 2}
    assert document.lines[()] == 2
    assert document.lines[("name",)] == 2
    assert document.lines[("server",)] == 3
    assert document.lines[("server", "hosts", 0)] == 6
    assert document.lines[("server", "hosts", 1, "port")] == 7
    assert document.duplicates == ()


def test_key_line_is_the_deepest_key_the_file_has_and_value_line_the_value_itself():
    document = yamldoc.parse(TEXT, "t.yaml")
    assert document.key_line(("server", "user")) == 3  # the `server:` key
    assert document.value_line(("server", "user")) == 4  # the mapping under it
    assert document.key_line(("server", "port")) == document.value_line(("server", "port")) == 4
    assert document.key_line(("nothing", "here")) == 2  # the document itself
    assert yamldoc.key_line({}, ("a",)) is None


def test_duplicate_keys_are_found_once_with_the_line_given_before():
    document = yamldoc.parse("a: 1\nb:\n  c: 1\n  c: 2\n  c: 3\na: 2\n", "d.yaml")
    assert [(d.path, d.line, d.previous) for d in document.duplicates] == [
        (("b", "c"), 4, 3), (("b", "c"), 5, 4), (("a",), 6, 1)]


def test_the_three_callers_word_the_same_walk(tmp_path: Path):
    path = tmp_path / "d.yaml"
    path.write_text(TEXT)
    with pytest.raises(ConfigError) as model_style:
        yamldoc.load_yaml(path, Doc, "thing")
    assert str(model_style.value) == f"{path}:4: thing field 'server.user': required key missing"
    with pytest.raises(ConfigError) as config_style:
        yamldoc.load_model(Doc, path)
    assert config_style.value.one_line() == f"{path}:3: server.user: required key missing"
    path.write_text(TEXT + "name: y\n")
    with pytest.raises(ConfigError) as duplicate:
        yamldoc.load_with_lines(path)
    assert duplicate.value.one_line() == f"{path}:8: name: duplicate key (first at line 2)"
    _, _, problems = read_yaml(path)
    assert [str(p) for p in problems] == [f"{path}:8: error: duplicate key name [yaml]"]
