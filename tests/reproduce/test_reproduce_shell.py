"""The shell interface the importers use (reproduce/shell.py): commands of a script with their
line, words and notes; a compose-style command string split without shell semantics."""

from __future__ import annotations

import pytest

from sparktriage.errors import InputError
from sparktriage.reproduce.shell import logical_commands, split_words

SERVE = ["vllm", "serve", "/m"]


@pytest.mark.parametrize("text, words, notes", [
    ("vllm serve /m 2>&1 > log.txt", SERVE, ["output redirection ignored"]),
    ("vllm serve /m | tee -a out.log &", SERVE,
     ["output piped to tee; the pipe is not reproduced", "ran in the background ('&')"]),
    ("nohup vllm serve /m &", ["nohup", *SERVE], ["ran in the background ('&')"]),
    ("echo '$(id)' \"a;b\" 'c|d'", ["echo", "$(id)", "a;b", "c|d"], []),
])
def test_commands_and_notes(text: str, words: list[str], notes: list[str]) -> None:
    command = logical_commands(text, "in.sh")[0]
    assert (command.line, command.words, command.notes) == (1, words, notes)


def test_comments_continuations_and_lines() -> None:
    text = "# a comment\nA=1 \\\n  vllm serve /m --x \"a b\"  # trailing\n\nexport B=2\nls\n"
    found = [(c.line, c.words) for c in logical_commands(text, "in.sh")]
    assert found == [(2, ["A=1", *SERVE, "--x", "a b"]), (6, ["B=2", "ls"])]


def test_operators_join_commands_that_are_all_read() -> None:
    text = "cleanup && vllm serve /m; echo done || true\n"
    assert [c.words[0] for c in logical_commands(text, "in.sh")] == ["cleanup", "vllm", "echo",
                                                                     "true"]


def test_unparseable_names_its_line() -> None:
    with pytest.raises(InputError) as caught:
        logical_commands("export A=1\nvllm serve /m --x 'oops\n", "in.sh")
    assert caught.value.one_line().startswith("in.sh:2: cannot parse `'oops")


def test_split_words() -> None:
    assert split_words("vllm serve\n/m --port 1", "c.yaml") == [*SERVE, "--port", "1"]
    assert split_words("vllm serve /m --x $HOME", "c.yaml") == [*SERVE, "--x", "$HOME"]
    assert split_words("", "c.yaml") == []


@pytest.mark.parametrize("text, message", [
    ("vllm serve /m; echo done", "more than one command"),
    ("vllm serve /m && echo", "a shell operator ('&&', '||') joins commands"),
    ("vllm serve /m | grep x", "a pipe ('|') would run a second command"),
    ('vllm serve "$(id)"', "command substitution ($(...) or backticks) would run a command"),
    ("vllm serve /m > log", "a redirection is shell syntax"),
])
def test_split_words_refuses_shell_syntax(text: str, message: str) -> None:
    with pytest.raises(InputError) as caught:
        split_words(text, "c.yaml")
    assert caught.value.one_line().startswith(f"c.yaml:1: {message}")
