"""The commands around a server that are not reproduced, as data in one place.

A launch script's other commands are listed with their line: shell bookkeeping not at all
(`QUIET`), output, waiting and looking as a note (`NOTED`), anything else (cleanup, installs,
sysctl, ...) as an unknowns row, since it may change the machine. A container's `sh -c` script
is read the same way with its own list (`NOTED_IN_CONTAINER`): there read-only probes such as
`nvidia-smi`, `ibv_devinfo` or `ray status` are common before the server, and `env`, `mkdir`
or `ulimit` act only inside the container. `NOT_LAUNCHERS` name a server in their arguments
without running it (`echo "vllm serve ..."`), so a serve command is never looked for there.
"""

from __future__ import annotations

# not listed as ignored: shell bookkeeping (tee: said in the piped command's note)
QUIET = frozenset({"set", "true", ":", "shopt", "tee", "exit", "break", "continue", "return",
                   "shift"})
# output, waiting and looking in a launch script: noted, not listed as unknown
NOTED = frozenset({"echo", "printf", "sleep", "wait", "cd", "pushd", "popd", "ls", "cat", "date",
                   "clear", "logger", "tput", "hostname", "whoami", "test", "[", "[[", "pwd",
                   "head", "tail", "grep", "ps", "watch"})
# the same in a container's script (a two-word entry is a command and its first argument)
NOTED_IN_CONTAINER = frozenset({"echo", "sleep", "cd", "set", "true", ":", "printf", "wait",
                                "trap", "ulimit", "nvidia-smi", "ray status", "ls", "cat",
                                "date", "env", "printenv", "mkdir", "ibv_devinfo", "ip",
                                "hostname"})
# commands whose arguments name a server without running it
NOT_LAUNCHERS = frozenset({"echo", "printf", "logger", "log", "info", "warn", "error", "print",
                           "cat", "tee", "grep", "pgrep", "pkill", "kill", "killall", "ps",
                           "man", "which", "type", "alias", "read", "test", "[", "[["})
