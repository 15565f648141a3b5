"""A recipe's own steps around the server, as sparkrun (0.4.2) runs them, as named steps of the
deployment (`Deployment.steps`; docs/reproduce.md "Client steps"):

- `pre_exec:N`: each `pre_exec` entry, in every server container before the server starts
  (sparkrun: `docker exec --user root C bash -c TEXT`, on every node). A string is shell text;
  a mapping with a `command` string the same; any other entry (a copy) cannot be run here.
- `mod:NAME`: each `mods` entry, after the recipe's own pre_exec: sparkrun copies the mod's
  folder into the container and runs its `run.sh` there. The folder is not part of the input,
  so the step is listed and cannot be run.
- `post_exec:N`: each `post_exec` entry, after the server is up; not planned.
- `build:eugr`: `build_args` asking eugr's build-and-copy.sh for a build (anything but the
  flags that only choose which prebuilt image is pulled); the named image is what the plan runs.

Every step is client code: launch runs none without the consultant's acceptance. Where launch
cannot run a step at all, the step says why and the input gets an unknowns row naming it.
"""

from __future__ import annotations

from typing import Any

from sparktriage.reproduce.importers.common import Ctx

# build-and-copy.sh flags that only choose which prebuilt image is pulled (no build)
PULL_ONLY = frozenset({"--tf5", "--pre-tf", "--pre-transformers", "--exp-b12x",
                       "--experimental-b12x"})
MAX_STEPS = 64
KEYS = {"mod": "mods", "pre_exec": "pre_exec", "post_exec": "post_exec", "build": "build_args"}


def _text(entry: Any, ctx: Ctx) -> str | None:
    """The entry's shell text, secrets replaced by placeholders (it is written out)."""
    if isinstance(entry, dict):
        entry = entry.get("command")
    return ctx.secrets.text(entry) if isinstance(entry, str) else None


def _listed(value: Any) -> list:
    if value is None:
        return []
    return list(value) if isinstance(value, list) else [value]


def recipe_steps(data: dict, marks: dict, ctx: Ctx) -> list[dict]:
    """The recipe's steps in sparkrun's order (image build, pre_exec, mods, post_exec), each
    reported: mapped where launch can run it once accepted, an unknowns row where not."""
    where = ctx.source
    steps: list[dict] = []
    build = [str(a) for a in _listed(data.get("build_args"))]
    line = marks.get(("build_args",))
    if build and any(a not in PULL_ONLY for a in build):
        steps.append({"name": "build:eugr", "kind": "build", "when": "image",
                      "run": ["build-and-copy.sh " + " ".join(build)],
                      "source": f"{where}:{line}", "runnable": False,
                      "why": "the recipe tool builds its image (eugr build-and-copy.sh "
                             f"{' '.join(build)}); launch runs the named image as it is"})
    elif build:
        ctx.note(f"line {line}: build_args {' '.join(build)}: choose which prebuilt image is "
                 "pulled (no build); the named image is used")
    line = marks.get(("pre_exec",))
    for index, entry in enumerate(_listed(data.get("pre_exec")), 1):
        text = _text(entry, ctx)
        steps.append({"name": f"pre_exec:{index}", "kind": "pre_exec", "when": "before-serve",
                      "run": [text] if text is not None else [],
                      "source": f"{where}:{line}", "runnable": text is not None,
                      "why": "" if text is not None else
                      "an entry that is not a command (a copy from the client's machine)"})
    line = marks.get(("mods",))
    for entry in _listed(data.get("mods")):
        name = str(entry).strip().strip("/")
        name = name[len("mods/"):] if name.startswith("mods/") else name
        steps.append({"name": f"mod:{name}", "kind": "mod", "when": "before-serve",
                      "run": [f"export WORKSPACE_DIR=$PWD && cd /workspace/mods/{name} && "
                              "chmod +x run.sh && ./run.sh"],
                      "source": f"{where}:{line}", "runnable": False,
                      "why": f"the mod's folder ({entry}: run.sh and its files) is not part of "
                             "the input; send it to run the step"})
    line = marks.get(("post_exec",))
    for index, entry in enumerate(_listed(data.get("post_exec")), 1):
        text = _text(entry, ctx)
        steps.append({"name": f"post_exec:{index}", "kind": "post_exec", "when": "after-serve",
                      "run": [text] if text is not None else [],
                      "source": f"{where}:{line}", "runnable": False,
                      "why": "a step after the server is up; launch does not plan one"})
    if len(steps) > MAX_STEPS:
        from sparktriage.errors import InputError
        raise InputError(f"{where}: more than {MAX_STEPS} pre-launch steps")
    for step in steps:
        named = f"{step['name']} ({KEYS[step['kind']]} entry)"
        if step["runnable"]:
            ctx.mapped.append(f"{step['source']}: {named} -> deployment step (client code: run "
                              "in each server container before the server, once accepted)")
        else:
            ctx.flag_unknown(named, f"{step['source']}: client step launch cannot run: "
                                    f"{step['why']}")
    return steps
