"""The shell scanner's policy (docs/reproduce.md), case by case: what ends a command with a
note, what is refused with which one-line error, and which line a command starts on."""

from __future__ import annotations

import pytest

from sparktriage.errors import InputError
from sparktriage.reproduce.shell import logical_commands, split_words

SERVE = ["vllm", "serve", "/m"]
JOINS = "joins commands; reproduce reads one command per line (split it, or remove what follows)"


@pytest.mark.parametrize("text, words, notes", [
    ("vllm serve /m 2>&1 > log.txt", SERVE, ["output redirection ignored"]),
    ("vllm serve /m | tee -a out.log &", SERVE,
     ["output piped to tee; the pipe is not reproduced", "ran in the background ('&')"]),
    ("nohup vllm serve /m &", ["nohup", *SERVE], ["ran in the background ('&')"]),
    ("echo '$(id)' \"a;b\" 'c|d'", ["echo", "$(id)", "a;b", "c|d"], []),
])
def test_commands_and_notes(text: str, words: list[str], notes: list[str]) -> None:
    (command,) = logical_commands(text, "in.sh")
    assert (command.line, command.words, command.notes) == (1, words, notes)


def test_comments_continuations_and_lines() -> None:
    text = "# a comment\nA=1 \\\n  vllm serve /m --x \"a b\"  # trailing\n\nexport B=2\n"
    found = [(c.line, c.words) for c in logical_commands(text, "in.sh")]
    assert found == [(2, ["A=1", *SERVE, "--x", "a b"]), (5, ["export", "B=2"])]


@pytest.mark.parametrize("text, message", [
    ("vllm serve /m; echo done", f"shell operator ';' {JOINS}"),
    # after a redirection the rest of the command is skipped, but an operator still refuses it
    ("vllm serve /m > log; echo done", f"shell operator ';' {JOINS}"),
    ("vllm serve /m > log && echo", f"shell operator '&&' {JOINS}"),
    ("vllm serve /m || echo", f"shell operator '||' {JOINS}"),
    ("case x in a) ;; esac", f"shell operator ';;' {JOINS}"),
    ("vllm serve /m & echo", "shell operator '&' joins commands; reproduce reads one command "
                             "per line"),
    ("vllm serve /m | grep x", "a pipe ('|') would run a second command; reproduce reads one "
                               "command per line (only a final '| tee FILE' is ignored)"),
    ("(vllm serve /m)", "a subshell '(' would run commands; not reproduced"),
    ('echo "$(id)"', "command substitution ($(...) or backticks) would run a command; replace "
                     "it with its value"),
    ("echo `id`", "command substitution ($(...) or backticks) would run a command; replace it "
                  "with its value"),
    ("vllm serve /m --chat-template '\nx'", "a quoted value contains a newline or a control "
                                           "character; write it on one line"),
])
def test_refused(text: str, message: str) -> None:
    with pytest.raises(InputError) as caught:
        logical_commands(text, "in.sh")
    assert caught.value.one_line() == f"in.sh:1: {message}"


def test_unbalanced_quote_names_the_command_line() -> None:
    with pytest.raises(InputError) as caught:
        logical_commands("export A=1\nvllm serve /m --x 'oops\n", "in.sh")
    assert caught.value.one_line() == "in.sh:2: unbalanced ' quote"


def test_split_words() -> None:
    assert split_words("vllm serve\n/m --port 1", "c.yaml") == [*SERVE, "--port", "1"]
    assert split_words("", "c.yaml") == []
