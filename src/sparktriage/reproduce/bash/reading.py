"""`read_script`: a bash script walked statically (walk.py), once per way of reading it.

One command reads the same script the same way more than once (to find the scripts another
runs, to import it, to look for a unit it writes): the last few readings (scripts and
refusals) are kept, bounded in count and in commands, so the walk's time bound holds for the
input, not for each reading (the parse is kept the same way, tree.py).
"""

from __future__ import annotations

from collections import OrderedDict

from sparktriage.errors import InputError
from sparktriage.reproduce.bash.branches import At
from sparktriage.reproduce.bash.tree import first_error, line, parse
from sparktriage.reproduce.bash.walk import Script, Walker

_KEPT = 4  # readings kept
_KEPT_COMMANDS = 100_000  # and at most this many commands in them (memory)
_read: OrderedDict[tuple, Script | InputError] = OrderedDict()


def read_script(text_: str, source: str, given: dict[str, str] | None = None,
                library: dict[str, str] | None = None, args_unknown: bool = False) -> Script:
    """Every simple command of a bash script, statically (see the module doc); `library`:
    other scripts the client gave (file name -> text), read where this one runs them;
    `args_unknown`: the script's own `$1..` are unknown values (every branch they choose is
    read), not absent."""
    key = (text_, source, tuple(sorted((given or {}).items())),
           tuple(sorted((library or {}).items())), args_unknown)
    if key not in _read:
        try:
            _read[key] = _walk(text_, source, given, library, args_unknown)
        except InputError as exc:
            _read[key] = exc
        while len(_read) > _KEPT or (len(_read) > 1 and sum(
                len(s.commands) for s in _read.values() if isinstance(s, Script))
                > _KEPT_COMMANDS):
            _read.popitem(last=False)
    _read.move_to_end(key)
    done = _read[key]
    if isinstance(done, InputError):
        raise done
    return done


def _walk(text_: str, source: str, given: dict[str, str] | None,
          library: dict[str, str] | None, args_unknown: bool) -> Script:
    tree, data = parse(text_, source)
    walker = Walker(data, source, given or {})
    walker.scope.args_unknown = args_unknown
    walker.library = dict(library or {})
    try:
        walker.statement(tree.root_node, At())
    except RecursionError:  # the depth bounds keep well below it; this guards the guard
        raise InputError(f"{source}: the shell text nests too deeply to read; not a launch "
                         "script a client sends") from None
    if tree.root_node.has_error and not walker.script.errors:
        bad = first_error(tree.root_node)
        if bad is not None:
            walker.script.errors.append((line(bad), walker.short(bad) or "missing text"))
    return walker.script
