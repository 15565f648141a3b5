"""The commands around a server that are not reproduced, as one table of data.

A launch script's and a container's script's other commands are listed with their line, each
by what it does, in one table (`HARMLESS`: command -> category):

- `BOOKKEEPING`: the shell's own (`set`, `true`, `shift`, `tee`: said in the piped command's
  note): not listed in a launch script; a note in a container's script.
- `ENDS`: ends the script early (`exit`, `return`): not listed in a launch script, where every
  branch is read and the server found whatever guard calls it; an unknowns row in a container's
  script, whose one line (`[ -f /opt/patch.sh ] || exit 1; ... vllm serve`) it may end before
  the server starts. This is the one place where a command is said differently in the two
  places without acting on a machine: merged into `BOOKKEEPING`, the published compose file of
  tests/reproduce/corpus/42 would lose its rows for the `exit 1` of
  `python3 hotfix.py || exit 1` and its other guards.
- `LOOKING`: output, waiting and looking (`echo`, `sleep`, `cd`, `ls`, `grep`, `ibv_devinfo`,
  `ray status`): a note wherever it is.
- `CONTAINED`: acts on the machine it runs on (`mkdir`, `env`, `ulimit`, `trap`, `ip`,
  `nvidia-smi`, which may set clocks or persistence mode): a note inside a container, where
  it changes only that container, and an unknowns row in a launch script on the host, where
  it may change the machine the lab would have to match.

Anything else (cleanup, installs, sysctl, ...) is an unknowns row wherever it is. A two-word
entry is a command and its first argument (`ray status`, unlike `ray start`).

`ARGUMENTS_NOT_RUN` is another property of a command: it names a server in its arguments
without running it (`echo "vllm serve ..."`, `pkill -f "vllm serve"`), so a serve command is
never looked for there.
"""

from __future__ import annotations

import os

BOOKKEEPING, ENDS, LOOKING, CONTAINED = "bookkeeping", "ends", "looking", "contained"

HARMLESS: dict[str, str] = {
    **dict.fromkeys(("set", "true", ":", "shopt", "tee", "break", "continue", "shift"),
                    BOOKKEEPING),
    **dict.fromkeys(("exit", "return"), ENDS),
    **dict.fromkeys(("echo", "printf", "sleep", "wait", "cd", "pushd", "popd", "ls", "cat",
                     "date", "clear", "logger", "tput", "hostname", "whoami", "test", "[", "[[",
                     "pwd", "head", "tail", "grep", "ps", "watch", "printenv", "ibv_devinfo",
                     "ray status"), LOOKING),
    **dict.fromkeys(("trap", "ulimit", "env", "mkdir", "ip", "nvidia-smi"), CONTAINED),
}

# commands whose arguments name a server without running it
ARGUMENTS_NOT_RUN = frozenset({
    "echo", "printf", "logger", "log", "info", "warn", "error", "print", "cat", "tee", "grep",
    "pgrep", "pkill", "kill", "killall", "ps", "man", "which", "type", "alias", "read", "test",
    "[", "[["})

# what each category is where: not listed (None), a note, or (absent) an unknowns row
_IN_SCRIPT = {BOOKKEEPING: None, ENDS: None, LOOKING: "note"}
_IN_CONTAINER = {BOOKKEEPING: "note", LOOKING: "note", CONTAINED: "note"}


def category(words: list[str] | tuple[str, ...]) -> str | None:
    """The table's category of a command (its program, or its program and first argument)."""
    if not words:
        return None
    base = os.path.basename(words[0])
    return HARMLESS.get(" ".join([base, *words[1:2]])) or HARMLESS.get(base)


def in_script(words: list[str] | tuple[str, ...]) -> str:
    """How a launch script's command that is not the server is said: `quiet` (not at all),
    `note`, or `unknown` (an unknowns row)."""
    said = _IN_SCRIPT.get(category(words) or "", "unknown")
    return "quiet" if said is None else said


def in_container(words: list[str] | tuple[str, ...]) -> str:
    """How a container's script's command that is not the server is said: `note` or
    `unknown`."""
    return _IN_CONTAINER.get(category(words) or "", "unknown")
