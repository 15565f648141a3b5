"""Every input read: each by its detected kind, the client's env dumps first (a script reads
their variables), scripts another input runs read there (not on their own), a deployment
YAML's relative paths against its own folder.
"""

from __future__ import annotations

import os
from pathlib import Path

from sparktriage.errors import InputError, SourceLocation
from sparktriage.limits import LimitError
from sparktriage.reproduce import justfile, makefile, vllm_options
from sparktriage.reproduce.bash import read_script
from sparktriage.reproduce.bash.transcript import commands_of
from sparktriage.reproduce.detect import detect
from sparktriage.reproduce.detect import read_input as _read_file
from sparktriage.reproduce.importers.collect_env import import_collect_env
from sparktriage.reproduce.importers.common import Ctx
from sparktriage.reproduce.importers.compose import import_compose
from sparktriage.reproduce.importers.compose_run import composes_run
from sparktriage.reproduce.importers.deployment import import_deployment
from sparktriage.reproduce.importers import slurm
from sparktriage.reproduce.importers.envdump import import_env, shell_syntax
from sparktriage.reproduce.importers.kubernetes import import_kubernetes
from sparktriage.reproduce.importers.recipe import import_recipe
from sparktriage.reproduce.importers.serve import import_script
from sparktriage.reproduce.importers.systemd import import_unit, unit_script, written_unit
from sparktriage.reproduce.model import Imported, InputRef
from sparktriage.reproduce.secrets import Placeholders


def read_input(path: Path) -> str:
    """The input's text, bounded (detect.read_input); a Makefile or a justfile as the shell
    text of its recipes, line for line (makefile.py, justfile.py)."""
    return _read_make(path)[0]


def _read_make(path: Path) -> tuple[str, list[str]]:
    text = _read_file(path)
    if justfile.looks_like(Path(path)):
        return justfile.to_shell(text, str(path))
    if not makefile.looks_like(Path(path), text):
        return text, []
    return makefile.to_shell(text, str(path))


def import_input(path: Path, secrets: Placeholders, given: dict[str, str] | None = None,
                 library: dict[str, str] | None = None,
                 release: tuple[str, str] | None = None) -> Imported:
    """One input, by its detected kind; `given`: variables the client supplied (env dumps),
    which a shell script's `${VAR:-default}` and tests read; `library`: the other shell inputs
    by file name, read where a script runs them; `release`: the vLLM release a collect-env
    input says the client runs (its serve argv is read with that release's option rules)."""
    text, make_notes = _read_make(path)
    try:
        kind = detect(text)
    except LimitError as exc:  # YAML past a bound: at the input's line
        raise LimitError(exc.message, location=SourceLocation(
            str(path), exc.location.line if exc.location else None), hint=exc.hint) from None
    except InputError as exc:
        raise InputError(f"{path}: {exc.message}") from None
    ctx = Ctx(InputRef(path=str(path), kind=kind), secrets, release=release)
    for note in make_notes:
        ctx.note(note)
    if kind == "compose":
        return import_compose(path, ctx)
    if kind == "deployment":
        return import_deployment(path, ctx)
    if kind == "recipe":
        return import_recipe(path, ctx)
    if kind == "collect-env":
        return import_collect_env(text, ctx)
    if kind == "env":
        return import_env(text, ctx)
    if kind == "systemd":
        return import_unit(text, path, ctx, given, library)
    if kind == "kubernetes":
        return import_kubernetes(text, ctx)
    if kind == "slurm":
        return _import_job(text, ctx, given, library)
    try:
        return import_script(text, ctx, given, library)  # serve and docker scripts: bash/
    except InputError:
        unit = written_unit(text, str(path), given, library)
        if unit is None:
            raise
    # no server of its own, but a systemd unit it writes from a here-document and starts
    ctx = Ctx(InputRef(path=str(path), kind=kind), secrets, release=release)
    ctx.note(f"line {unit[2]}: the systemd unit written to {unit[1]} from a here-document is "
             "the server (read as a unit; the script's other commands are not listed)")
    return import_unit(unit[0], path, ctx, given, library)


def _import_job(text: str, ctx: Ctx, given: dict[str, str] | None,
                library: dict[str, str] | None) -> Imported:
    """A SLURM batch script: read as a script with the variables its `#SBATCH` header makes
    SLURM set (an env dump's values win), its shape the job's nodes and GPUs."""
    job = slurm.batch(text)
    values = {**job.variables(), **(given or {})}
    for name, value in sorted(job.variables().items()):
        ctx.mapped.append(f"#SBATCH -> {name}={value} (set by SLURM in every task)")
    part = import_script(text, ctx, values, library)
    if part.gpus_per_node is not None:  # the server's `srun` line asks for its own
        job = slurm.Batch(job.nodes, part.gpus_per_node, job.tasks_per_node, part.gpus_asked)
    update = {"shape": "a SLURM job", "shape_detail": job.shape_detail()}
    if job.gpus_per_node is not None:
        update.update(gpus_per_node=job.gpus_per_node, gpus_asked=f"#SBATCH {job.asked}"
                      if part.gpus_per_node is None else job.asked)
    return part.model_copy(update=update)


def _resolve_paths(dep: dict, base: Path) -> dict:
    """./ and ../ values of a deployment YAML input, against its folder (as launch does)."""
    def fix(value):
        if isinstance(value, str) and value.startswith(("./", "../")):
            return os.path.normpath(base / value)
        return value
    model = dict(dep.get("model") or {})
    if "path" in model:
        model["path"] = fix(model["path"])
    engine = dict(dep.get("engine") or {})
    vllm = engine.get("vllm")
    engine["vllm"] = [fix(v) for v in vllm] if isinstance(vllm, list) else fix(vllm)
    return {**dep, "model": model, "engine": engine}


def import_all(inputs: list[Path], secrets: Placeholders) -> list[Imported]:
    """Every input imported; a deployment YAML's relative paths against its own folder."""
    imported = []
    given: dict[str, str] = {}
    library: dict[str, str] = {}  # shell inputs by file name: a script may run another
    composes: set[str] = set()
    units: dict[str, str] = {}
    env_scripts: list[Path] = []  # env files in shell syntax (envdump.shell_syntax)
    release: tuple[str, str] | None = None  # the vLLM release a collect-env names
    for path in inputs:  # the client's env dumps first: the scripts read their variables
        try:
            text = read_input(Path(path))
            kind = detect(text)
        except InputError:
            continue  # refused with its path below
        if kind == "env" and shell_syntax(text):
            library[Path(path).name] = text  # `source`d by a script: read there as bash
            env_scripts.append(Path(path))
        elif kind in ("env", "collect-env"):
            facts = _facts(Path(path))
            given.update({k: v for f in facts for k, v in f.env.items()})
            release = release or _release(facts, Path(path))
        elif kind in ("serve", "docker", "slurm"):
            library[Path(path).name] = text
        elif kind == "systemd":  # a unit whose ExecStart runs an input script
            units[Path(path).name] = _unit_text(text, Path(path))
        elif kind == "compose":
            composes.add(Path(path).name)
    # scripts another script runs, and compose files a script's `docker compose run` reads
    paths = {Path(p).name: str(p) for p in inputs}
    called = _called(library, given, units, paths) | (
        composes_run(list(library.values())) & composes)
    for path in env_scripts:  # an env file no script sources: its values as a dump's
        if path.name not in called:
            given.update(_dumped(path))
    for path in inputs:
        if Path(path).name in called:
            continue  # read where another input script runs it (reproduce/bash)
        part = import_input(Path(path), secrets, given, library, release)
        if part.input.kind == "deployment":
            part = part.model_copy(update={"deployment": _resolve_paths(
                part.deployment, Path(os.path.abspath(path)).parent)})
        imported.append(part)
    return imported


def _dumped(path: Path) -> dict[str, str]:
    """The variables of an env dump (or collect-env) input, for the scripts to read."""
    return {k: v for f in _facts(path) for k, v in f.env.items()}


def _facts(path: Path) -> list:
    return import_input(path, Placeholders()).facts


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
