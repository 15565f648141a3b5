"""Terminal pastes: the commands of a shell session copied with its prompts and output.

A client often sends what their terminal showed (`user@spark-01:~/dir$ ./launch.sh ...`
followed by the program's output) rather than a script. Read as bash the prompt is a word
and the output lines are commands (`Detected Local IP: 10.0.0.2 (10.0.0.2/16)` is a syntax
error), so a text with prompts is first reduced to the commands typed at them:

- a transcript is a text with at least one line starting with a full prompt
  (`user@host:path$ `, `user@host:path# `, `[user@host path]$ `, optionally after a
  `(venv) ` tag), or whose first command line starts with a bare `$ ` prompt;
- on a prompt line the prompt is taken off and the rest is the command; a line that follows
  a kept line ending in `\\` (a continuation), or that starts with the `> ` secondary prompt
  (a quoted string or here-document still open), is kept too (`> ` taken off);
- every other line is output and becomes an empty line, so line numbers stay those of the
  paste.

Nothing else changes: a text without prompts is returned as it is. Only whole-line prompts at
the start of a line are recognised (a `$` inside a command is never touched). Pure text work,
linear in the input's size.
"""

from __future__ import annotations

import re

_FULL = re.compile(r"^(?:\([\w.@+-]+\)\s+)?(?:[\w.+-]+@[\w.-]+:[^\s$#]*|\[[\w.+-]+@[\w.-]+"
                   r"(?: [^\]\n]*)?\])[$#] ?")
_BARE = re.compile(r"^\$ ")
_PS2 = re.compile(r"^> ?")


def is_transcript(text: str) -> bool:
    """Does the text carry shell prompts (see the module doc)?"""
    lines = text.splitlines()
    if any(_FULL.match(line) for line in lines):
        return True
    first = next((ln for ln in lines if ln.strip() and not ln.lstrip().startswith("#")), "")
    return bool(_BARE.match(first))


def commands_of(text: str) -> tuple[str, int]:
    """(the typed commands with output lines blanked, how many prompt lines were read);
    the text unchanged and 0 when it is not a transcript."""
    if not is_transcript(text):
        return text, 0
    out: list[str] = []
    prompts = 0
    keeping = False  # the previous kept line continues (ends in a backslash) or was typed
    for line in text.split("\n"):
        prompt = _FULL.match(line) or _BARE.match(line)
        if prompt:
            command = line[prompt.end():]
            prompts += 1
        elif keeping and _PS2.match(line):
            command = line[_PS2.match(line).end():]
        elif keeping and out and out[-1].rstrip().endswith("\\"):
            command = line
        else:
            out.append("")
            keeping = False
            continue
        out.append(command)
        keeping = True
    return "\n".join(out), prompts
