"""Every input read once and imported by the importer its content claims (importers/registry.py),
in the part it plays for the others (its importer's `role`): the client's env dumps first (a
script reads their variables), scripts another input runs read there (not on their own).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from sparktriage.errors import InputError, SourceLocation
from sparktriage.limits import LimitError
from sparktriage.reproduce import vllm_options
from sparktriage.reproduce.bash import read_script
from sparktriage.reproduce.bash.transcript import commands_of
from sparktriage.reproduce.read.detect import read
from sparktriage.reproduce.importers.common import Ctx
from sparktriage.reproduce.importers.compose_run import composes_run
from sparktriage.reproduce.importers.envdump import shell_syntax
from sparktriage.reproduce.importers.protocol import Importer, ReadInput
from sparktriage.reproduce.importers.registry import decide
from sparktriage.reproduce.importers.systemd import unit_script
from sparktriage.reproduce.model import Imported, InputRef
from sparktriage.reproduce.secrets import Placeholders


@dataclass
class Opened:
    """An input read and its kind decided (or the one-line error that refused it)."""

    path: Path
    source: ReadInput | None = None
    importer: Importer | None = None
    error: InputError | None = None

    @property
    def role(self) -> str | None:
        return self.importer.role if self.importer is not None else None


def open_input(path: Path) -> Opened:
    """`path` read (detect.read) and claimed (registry.decide), once; a refusal is kept."""
    try:
        source = read(path)
    except InputError as exc:
        return Opened(path, error=exc)
    try:
        return Opened(path, source, decide(source))
    except LimitError as exc:  # YAML past a bound: at the input's line
        return Opened(path, source, error=LimitError(exc.message, location=SourceLocation(
            str(path), exc.location.line if exc.location else None), hint=exc.hint))
    except InputError as exc:
        return Opened(path, source, error=InputError(f"{path}: {exc.message}"))


def import_opened(opened: Opened, secrets: Placeholders, given: dict[str, str] | None = None,
                  library: dict[str, str] | None = None, release: tuple[str, str] | None = None,
                  inputs: dict[str, ReadInput] | None = None) -> Imported:
    """One input by its importer; `given`: variables the client supplied (env dumps), which a
    shell script's `${VAR:-default}` and tests read; `library`: the other shell inputs by file
    name, read where a script runs them; `release`: the vLLM release a collect-env input says
    the client runs (its serve argv is read with that release's option rules); `inputs`: every
    input as read, by absolute path."""
    if opened.error is not None or opened.source is None or opened.importer is None:
        raise opened.error or InputError(f"{opened.path}: not read")
    ctx = Ctx(InputRef(path=str(opened.path), kind=opened.importer.kind), secrets,
              release=release, given=dict(given or {}), library=dict(library or {}),
              read=dict(inputs or {}))
    for note in opened.source.notes:
        ctx.note(note)
    return opened.importer.read(opened.source, ctx)


def import_input(path: Path, secrets: Placeholders, given: dict[str, str] | None = None,
                 library: dict[str, str] | None = None,
                 release: tuple[str, str] | None = None) -> Imported:
    """One input on its own (import_opened)."""
    return import_opened(open_input(Path(path)), secrets, given, library, release)


def import_all(inputs: list[Path], secrets: Placeholders) -> list[Imported]:
    """Every input read once and imported."""
    opened = [open_input(Path(p)) for p in inputs]
    read_inputs = {os.path.abspath(o.path): o.source for o in opened if o.source is not None}
    done: dict[int, Imported] = {}  # env dumps, imported first (their values feed the scripts)
    given: dict[str, str] = {}
    library: dict[str, str] = {}  # shell inputs by file name: a script may run another
    composes: set[str] = set()
    units: dict[str, str] = {}
    env_scripts: list[int] = []  # env files in shell syntax (envdump.shell_syntax)
    release: tuple[str, str] | None = None  # the vLLM release a collect-env names
    for index, one in enumerate(opened):  # the env dumps first: the scripts read them
        if one.error is not None or one.source is None:
            continue  # refused with its path below
        text, name = one.source.text, one.path.name
        if one.role == "values" and shell_syntax(text):
            library[name] = text  # `source`d by a script: read there as bash
            env_scripts.append(index)
        elif one.role == "values":
            done[index] = import_opened(one, secrets, inputs=read_inputs)
            facts = done[index].facts
            given.update({k: v for f in facts for k, v in f.env.items()})
            release = release or _release(facts, one.path)
        elif one.role == "script":
            library[name] = text
        elif one.role == "unit":  # a unit whose ExecStart runs an input script
            units[name] = _unit_text(text, one.path)
        elif one.role == "compose":
            composes.add(name)
    # scripts another script runs, and compose files a script's `docker compose run` reads
    paths = {o.path.name: str(o.path) for o in opened}
    called = _called(library, given, units, paths) | (
        composes_run(list(library.values())) & composes)
    for index in env_scripts:  # an env file no script sources: its values as a dump's
        if opened[index].path.name not in called:
            done[index] = import_opened(opened[index], secrets, inputs=read_inputs)
            given.update({k: v for f in done[index].facts for k, v in f.env.items()})
    imported = []
    for index, one in enumerate(opened):
        if one.path.name in called:
            continue  # read where another input script runs it (reproduce/bash)
        imported.append(done.get(index) or import_opened(one, secrets, given, library, release,
                                                         read_inputs))
    return imported


def _release(facts: list, path: Path) -> tuple[str, str] | None:
    """(covered release, why) from the vLLM version a collect-env reports."""
    for fact in facts:
        version = ((fact.versions or {}).get("vllm") or "").split(" ")[0]  # no "(git sha..)"
        covered = vllm_options.release_of(version)
        if covered is not None:
            same = "" if covered == version else f", read with {covered}'s options" + (
                "" if vllm_options.covers(version) else " (the oldest covered)")
            return covered, f"vLLM {version} in {path.name}{same}"
    return None


def _called(library: dict[str, str], given: dict[str, str],
            units: dict[str, str], paths: dict[str, str]) -> set[str]:
    """The input scripts another input script (or a unit's ExecStart) runs (read there, not
    on their own). Each is read as its import reads it (a terminal paste's commands, under
    its path), so that the parse and the walk are done once (bash/tree.py, bash/walk.py)."""
    called: set[str] = set()
    for name, text in library.items():
        try:
            called |= read_script(commands_of(text)[0], paths.get(name, name), given,
                                  library).ran - {name}
        except InputError:
            continue  # refused with its path when imported
    if called == set(library):
        called = set()  # every script runs another: none is the entry point
    for name, text in units.items():
        try:
            called |= read_script(text, name, given, library).ran
        except InputError:
            continue
    return called


def _unit_text(text: str, path: Path) -> str:
    """A unit as bash text, for finding the scripts it runs ("" when it cannot be read)."""
    try:
        return unit_script(text, path, Ctx(InputRef(path=str(path), kind="systemd"),
                                           Placeholders()))
    except InputError:
        return ""
