"""A bash script's syntax tree walked statically: every simple command it could run, expanded.

Assignments (`X=..`, `export`, `local`, `declare`, `readonly`, `typeset`, arrays, `+=`,
`unset`, `read`) update the variables in order; branches and loops are branches.py's.
Functions are followed where they are called (positional parameters bound; bounded depth,
never recursively), as are other scripts the client gave that this one runs (`bash x.sh ARGS`,
`source x.sh`); subshells keep their own variables; command and process substitutions are
never read as commands (they become placeholders, words.py). Bounds: tree depth, nodes
visited, seconds, and the byte budget of the values built (budget.py). `read_script`
(reading.py) is the entry point.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field

from sparktriage.errors import InputError
from sparktriage.limits import SCRIPT_MAX_COMMANDS, limit_hit
from sparktriage.reproduce.bash.branches import At as _At
from sparktriage.reproduce.bash.branches import Branches
from sparktriage.reproduce.bash.files import heredoc_targets, keep
from sparktriage.reproduce.bash.tree import Node, line, parse, text
from sparktriage.reproduce.bash.words import Expander, Hole, Scope
from sparktriage.reproduce.bash.writes import echo_write
from sparktriage.reproduce.budget import Budget, size_of

MAX_DEPTH = 120  # syntax-tree nesting followed
MAX_CALL_DEPTH = 8  # nested function calls followed
MAX_STEPS = 200_000  # statements and commands visited (function bodies count each call)
WALK_SECONDS = 5.0
# programs that run the command given after their own options (job launchers, container
# runners, privilege and process wrappers): only to follow another input script one of them
# runs. The shell's own notion, kept here so that this reader imports nothing of the meaning
# stage; the meaning stage's table (meaning/wrappers.py), which says where each one's command
# starts and what it gives, is checked to be covered by it (tests/reproduce/test_wrappers.py)
_RUNS_ITS_COMMAND = frozenset({
    "srun", "mpirun", "mpiexec", "apptainer", "singularity", "shifter", "sudo", "nohup", "time",
    "nice", "timeout", "exec", "setsid", "stdbuf", "taskset", "numactl", "command", "builtin",
    "unbuffer", "ionice", "chrt", "screen"})
# commands that take a script file as data, not to run it
_FILE_TOOLS = {"echo", "printf", "cat", "cp", "scp", "rsync", "chmod", "chown", "ls", "vi", "vim",
               "nano", "less", "more", "grep", "sed", "awk", "wc", "head", "tail", "tee", "rm",
               "mv", "git", "diff", "touch", "stat", "file", "dos2unix", "shellcheck", "test", "["}
_LOOPS = ("for_statement", "c_style_for_statement", "while_statement")
_SEQUENCES = ("program", "compound_statement", "do_group", "ERROR")


@dataclass(frozen=True)
class Simple:
    """One simple command the script could run, its words expanded."""

    line: int
    end_line: int
    words: tuple[str, ...]
    prefix: dict[str, str]  # `A=1 cmd`: the command's own environment
    exported: dict[str, str]  # what the script exported before it (its environment)
    branch: tuple[str, ...]  # the if/case branches it sits in, outermost first
    notes: tuple[str, ...]  # redirection, background, pipe
    source: str  # its text as written, one line
    function: str | None = None  # the function it was found in
    stdin: str | None = None  # the here-document fed to it (`bash <<EOF`), expanded
    file: str | None = None  # another input script it is in (its line is that file's)


@dataclass
class Script:
    commands: list[Simple] = field(default_factory=list)
    holes: list[Hole] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    errors: list[tuple[int, str]] = field(default_factory=list)  # syntax errors: line, text
    exports: list[int] = field(default_factory=list)  # lines of `export`/`declare -x`
    ran: set[str] = field(default_factory=set)  # other input scripts it runs (library names)
    files: dict[str, tuple[int, str]] = field(default_factory=dict)  # here-docs: path -> body


class Walker(Branches):
    def __init__(self, data: bytes, source: str, given: dict[str, str]) -> None:
        self.data, self.source = data, source
        self.script = Script()
        self.scope = Scope(given=dict(given), holes=self.script.holes, budget=Budget(source))
        self.functions: dict[str, Node] = {}
        self.library: dict[str, str] = {}  # other scripts the client gave, by file name
        self.file: str | None = None  # set while another input script is read
        self.steps = 0
        self.deadline = time.monotonic() + WALK_SECONDS

    # -- bookkeeping ---------------------------------------------------------------------------
    def _tick(self, node: Node, at: _At) -> bool:
        self.steps += 1
        if self.steps > MAX_STEPS or time.monotonic() > self.deadline:
            raise InputError(f"{self.source}:{line(node)}: reading the script statically took "
                             f"more than {MAX_STEPS} steps or {WALK_SECONDS:.0f} s (functions "
                             "called too often?); not a launch script a client sends")
        if at.depth > MAX_DEPTH:
            self.script.notes.append(f"line {line(node)}: nested more than {MAX_DEPTH} levels "
                                     "deep; not read further")
            return False
        return True

    def t(self, node: Node) -> str:
        return text(node, self.data)

    def short(self, node: Node) -> str:
        raw = " ".join(self.t(node).split())
        return raw if len(raw) <= 120 else raw[:117] + "..."

    # -- statements ----------------------------------------------------------------------------
    def statements(self, nodes: list[Node], at: _At) -> None:
        for node in nodes:
            self.statement(node, at)

    def statement(self, node: Node, at: _At) -> None:
        if not node.is_named or not self._tick(node, at):
            return
        kind = node.type
        if node.next_sibling is not None and node.next_sibling.type == "&":
            at = at.down(notes=at.notes + ("ran in the background ('&')",))
        if kind == "ERROR":
            self.script.errors.append((line(node), self.short(node)))
        if kind in _SEQUENCES:
            self.statements(node.children, at.down())
        elif kind == "subshell":
            saved = self.scope
            self.scope = saved.copy()
            self.statements(node.children, at.down())
            self.scope = saved
        elif kind == "command":
            self.command(node, at)
        elif kind in ("declaration_command", "variable_assignment", "variable_assignments",
                      "unset_command"):
            self.assignment(node, at)
        elif kind == "function_definition":
            name = node.child_by_field_name("name")
            body = node.child_by_field_name("body")
            if name is not None and body is not None:
                self.functions[self.t(name)] = body
        elif kind == "redirected_statement":
            self.redirected(node, at)
        elif kind == "pipeline":
            self.pipeline(node, at)
        elif kind == "list":
            self.list_(node, at)
        elif kind == "negated_command":
            self.statements(node.named_children, at.down())
        elif kind == "if_statement":
            self.if_(node, at)
        elif kind == "case_statement":
            self.case(node, at)
        elif kind in _LOOPS:
            self.loop(node, at)
        # comments, test commands alone, heredoc bodies: nothing runs the server there

    def redirected(self, node: Node, at: _At) -> None:
        notes = list(at.notes)
        for child in node.children_by_field_name("redirect") or [c for c in node.named_children
                                                                 if c.type.endswith("redirect")]:
            note = ("here-document not read" if child.type == "heredoc_redirect"
                    else "input redirection ignored" if self.t(child).lstrip("0123456789")
                    .startswith("<") else "output redirection ignored")
            if note not in notes:
                notes.append(note)
        body = node.child_by_field_name("body")
        stdin = self._heredoc(node)
        if stdin is not None:  # `cat > F <<EOF`: F's content, for a `--config F` (bash/files)
            keep(self.script.files, self.script.notes, heredoc_targets(node, self.data,
                                                                       self.scope),
                 line(node), stdin)
        elif (write := echo_write(node, self.data, self.scope)) is not None:
            keep(self.script.files, self.script.notes, write[0], line(node), write[1], write[2])
        if body is not None:
            self.statement(body, at.down(notes=tuple(notes), stdin=stdin))

    def _heredoc(self, node: Node) -> str | None:
        """The here-document of a redirected statement, as the command reads it: expanded
        unless its delimiter is quoted (`<<'EOF'`)."""
        for redirect in node.named_children:
            if redirect.type != "heredoc_redirect":
                continue
            start = next((c for c in redirect.named_children if c.type == "heredoc_start"), None)
            body = next((c for c in redirect.named_children if c.type == "heredoc_body"), None)
            if body is None:
                return ""
            if start is not None and self.t(start)[:1] in ("'", '"', "\\"):
                return self.t(body)
            return Expander(self.data, self.scope).heredoc(body)
        return None

    def pipeline(self, node: Node, at: _At) -> None:
        stages = [c for c in node.named_children]
        for index, stage in enumerate(stages):
            notes = at.notes
            if index + 1 < len(stages):
                nxt = self.t(stages[index + 1]).split()
                name = nxt[0] if nxt else "?"
                notes += ("output piped to tee; the pipe is not reproduced" if name == "tee"
                          else f"output piped into `{name}`; the pipe is not reproduced",)
            self.statement(stage, at.down(notes=notes))

    # -- assignments ---------------------------------------------------------------------------
    def assign(self, node: Node, export: bool = False) -> tuple[str, str] | None:
        name_node = node.child_by_field_name("name")
        if name_node is None:
            return None
        name = self.t(name_node)
        if name_node.type == "subscript":
            return None  # A[i]=x: arrays by element are not followed
        value_node = node.child_by_field_name("value")
        ex = Expander(self.data, self.scope, hint=name)
        append = any(c.type == "+=" for c in node.children)
        if value_node is not None and value_node.type == "array":
            items = ex.fields([c for c in value_node.named_children if c.type != "comment"])
            old = self.scope.lookup(name) if append else None
            kept = old if isinstance(old, list) else [old] if old else []
            self.scope.budget.charge(size_of(kept) + size_of(items), line(node),
                                     len(kept) + len(items))
            value: str | list[str] = kept + items
        else:
            value = ex.string(value_node) if value_node is not None else ""
            if append:
                old = self.scope.lookup(name)
                self.scope.budget.charge(size_of(old or "") + len(value), line(node))
                value = (old if isinstance(old, str) else " ".join(old or [])) + value
        self.scope.values[name] = value
        self.scope.unset.discard(name)
        if export:
            self.scope.exported.add(name)
        return name, value if isinstance(value, str) else " ".join(value)

    def assignment(self, node: Node, at: _At) -> None:
        kind = node.type
        if kind == "variable_assignment":
            self.assign(node)
        elif kind == "variable_assignments":
            for child in node.named_children:
                self.assign(child)
        elif kind == "unset_command":
            for child in node.named_children:
                name = self.t(child)
                self.scope.values.pop(name, None)
                self.scope.unset.add(name)
        else:
            keyword = node.children[0].type if node.children else ""
            flags = "".join(self.t(c).lstrip("-") for c in node.named_children
                            if c.type == "word" and self.t(c).startswith("-"))
            export = keyword == "export" or "x" in flags
            if export:
                self.script.exports.append(line(node))
            for child in node.named_children:
                if child.type == "variable_assignment":
                    self.assign(child, export)
                elif child.type == "variable_name" and export:
                    self.scope.exported.add(self.t(child))
                elif child.type in ("command_substitution", "simple_expansion", "expansion",
                                    "concatenation", "string"):
                    self.script.notes.append(
                        f"line {line(node)}: `{self.short(node)[:80]}` sets variables computed "
                        "at run time; they are not known (give that file as an env input)")

    # -- commands ------------------------------------------------------------------------------
    def command(self, node: Node, at: _At) -> None:
        prefix: dict[str, str] = {}
        for child in node.children:
            if child.type == "variable_assignment":
                name = child.child_by_field_name("name")
                value = child.child_by_field_name("value")
                if name is not None:
                    prefix[self.t(name)] = Expander(self.data, self.scope, self.t(name)).string(
                        value)
        name_node = node.child_by_field_name("name")
        if name_node is None:
            return
        notes = list(at.notes)
        if any(c.type.endswith("redirect") for c in node.children) and \
                "output redirection ignored" not in notes:
            notes.append("output redirection ignored")
        words = Expander(self.data, self.scope).fields(
            name_node.named_children + node.children_by_field_name("argument"))
        if not words:
            return
        if self._builtin(words, node, at):
            return
        exported = {}
        for var in sorted(self.scope.exported):
            value = self.scope.lookup(var)
            if value is not None:
                exported[var] = value if isinstance(value, str) else " ".join(value)
        # each command keeps the environment it runs with: charged, or many exports times
        # many commands would grow without a bound
        self.scope.budget.charge(sum(len(k) + len(v) for k, v in exported.items()), line(node),
                                 len(exported))
        if len(self.script.commands) >= SCRIPT_MAX_COMMANDS:
            raise limit_hit("the number of commands the script runs",
                            f"{SCRIPT_MAX_COMMANDS} commands", self.source, line(node))
        self.script.commands.append(Simple(
            line(node), node.end_point[0] + 1, tuple(words), prefix, exported, at.branch,
            tuple(sorted(notes, key=_note_order)), self.short(node),
            at.calls[-1] if at.calls else None, at.stdin, self.file))

    def _builtin(self, words: list[str], node: Node, at: _At) -> bool:
        """Functions called, `read`, `shift`, `mapfile`: handled here (True), not recorded."""
        name = words[0]
        if name in self.functions:
            if name in at.calls or len(at.calls) >= MAX_CALL_DEPTH:
                self.script.notes.append(f"line {line(node)}: function {name} called "
                                         f"{'recursively' if name in at.calls else 'too deep'}; "
                                         "not followed")
                return True
            saved = self.scope.positional
            # `main "$@"` with the script's own arguments unknown: still unknown inside
            forwards = saved is None and re.search(r"\$\{?[@*]", self.t(node)) is not None
            self.scope.positional = None if forwards and len(words) == 1 else words[1:]
            self.statement(self.functions[name], at.down(calls=at.calls + (name,)))
            self.scope.positional = saved
            return True
        called = self._script_called(words)
        if called is not None:
            self._run_script(*called, node, at)
            return True
        if name in ("read", "mapfile", "readarray"):
            for word in words[1:]:
                if not word.startswith("-") and word.isidentifier():
                    self.scope.values[word] = self.scope.hole(word, node, f"${word} is read at "
                                                              "run time (`read`)")
            return False
        if name == "shift" and self.scope.positional is not None:
            count = int(words[1]) if len(words) > 1 and words[1].isdigit() else 1
            self.scope.positional = self.scope.positional[count:]
        return False


    def _script_called(self, words: list[str]) -> tuple[str, list[str] | None, bool] | None:
        """(file name, arguments, sourced?) when the command runs another script the client
        gave: `bash X.sh ...`, `sh X.sh`, `./X.sh ...`, `source X.sh`, `. X.sh`."""
        head = words[0].rsplit("/", 1)[-1]
        if head in ("bash", "sh") and len(words) > 1 and not words[1].startswith("-"):
            target, args, sourced = words[1], words[2:], False
        elif head in ("source", ".") and len(words) > 1:
            target, args, sourced = words[1], words[2:], True
        elif "/" in words[0] and words[0].rsplit("/", 1)[-1] in self.library:
            target, args, sourced = words[0], words[1:], False
        elif head in _RUNS_ITS_COMMAND and (at := next(
                (i for i, w in enumerate(words[1:], 1) if w.rsplit("/", 1)[-1] in self.library
                 and not words[i - 1].startswith("-")), None)):
            # a job or container wrapper (`srun -N1 apptainer exec IMG ./x.sh ARGS`) runs the
            # script with the words after it as its arguments
            target, args, sourced = words[at], words[at + 1:], False
        elif head not in _FILE_TOOLS and (named := [w for w in words[1:] if
                                                  w.rsplit("/", 1)[-1] in self.library]):
            # a launcher not given that names another input script (`./launch-cluster.sh -n
            # a,b --launch-script x.sh`): taken to run it, its arguments unknown
            return named[0].rsplit("/", 1)[-1], None, False
        else:
            return None
        name = target.rsplit("/", 1)[-1]
        return (name, args, sourced) if name in self.library else None

    def _run_script(self, name: str, args: list[str] | None, sourced: bool, node: Node,
                    at: _At) -> None:
        """Another input script, read where it is run: with these arguments, and with this
        script's variables (`source`) or only its exported ones (`bash X.sh`)."""
        if name in at.calls or len(at.calls) >= MAX_CALL_DEPTH:
            self.script.notes.append(f"line {line(node)}: {name} run recursively or too deep; "
                                     "not followed")
            return
        self.script.ran.add(name)
        tree, data = parse(self.library[name], name)
        child = Walker(data, name, {})
        child.file = name
        child.script, child.library, child.deadline = self.script, self.library, self.deadline
        child.steps = self.steps
        if sourced:
            child.scope, child.functions = self.scope, self.functions
        else:
            exported = {v: self.scope.lookup(v) for v in self.scope.exported}
            child.scope = Scope(given={**self.scope.given, **{
                k: v if isinstance(v, str) else " ".join(v) for k, v in exported.items()
                if v is not None}}, holes=self.script.holes, file=name, budget=self.scope.budget)
        saved, origin = child.scope.positional, child.scope.budget.origin
        child.scope.positional = None if args is None else list(args)
        child.scope.budget.origin = name  # a refusal names the file its line is in
        child.statement(tree.root_node, at.down(calls=at.calls + (name,)))
        child.scope.positional, child.scope.budget.origin = saved, origin
        self.steps = child.steps
        how = (f"with {len(args)} argument(s)" if args is not None else
               f"(`{self.short(node)[:60]}`: a launcher not given; its arguments unknown)")
        self.script.notes.append(f"line {line(node)}: {name} read where it is run, {how}")


def _note_order(note: str) -> int:
    """Notes in the order a reader meets them: redirections, the pipe, the background."""
    return 0 if "redirection" in note else 1 if "piped" in note else 2
