"""What a deployment runs on the lab by the client's choice: items the consultant accepts by name.

A reproduced launch runs what the client configured: its container image, a model repository's
own code (`trust_remote_code`), a container entrypoint, a vLLM or Ray program at a path the
client named, recipe mods, and environment variables that make a loader run other code than
the lab's. Each is a `ClientCode` item with a stable name `KIND:VALUE` (`image:nvcr.io/x:1`,
`env:LD_PRELOAD`, `trust-remote-code:org/model`). `client_code(deployment)` lists them: the
fields any deployment has (image, trust_remote_code, `--entrypoint`, loader variables in
`env`/`node_env`) and the items `reproduce` recorded in `client_code:` (recipe mods, pre-launch
scripts, the client's own program paths). `launch` and `session` refuse to start until each
name is accepted (docs/security.md).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from sparktriage.textsafe import escape_controls

# Variables that choose code a process (or a shell, or a library it loads) runs. Values are
# what each makes run, for the plan's line.
LOADER_ENV: dict[str, str] = {
    "LD_PRELOAD": "shared libraries loaded into every process first",
    "LD_LIBRARY_PATH": "where shared libraries are looked up first",
    "LD_AUDIT": "an audit library loaded into every process",
    "PYTHONPATH": "Python modules (a sitecustomize.py runs at start)",
    "PYTHONSTARTUP": "a Python file run by an interactive interpreter",
    "PYTHONHOME": "the Python standard library itself",
    "PYTHONUSERBASE": "the user site-packages (its .pth files run at start)",
    "PYTHONBREAKPOINT": "a callable run at every breakpoint()",
    "PATH": "which program each bare command name runs",
    "BASH_ENV": "a file every non-interactive bash sources",
    "ENV": "a file every sh/dash/ksh sources",
    "PERL5LIB": "Perl modules", "PERL5OPT": "Perl options (-M loads a module)",
    "RUBYLIB": "Ruby libraries", "RUBYOPT": "Ruby options (-r loads a library)",
    "NODE_OPTIONS": "Node.js options (--require loads a module)",
    "NODE_PATH": "Node.js modules",
    "JAVA_TOOL_OPTIONS": "JVM options (-javaagent loads code)",
    "GCONV_PATH": "glibc character-set modules (shared libraries)",
    "CUDA_INJECTION64_PATH": "a library the CUDA driver loads into the process",
    "NCCL_NET_PLUGIN": "an NCCL network plugin library",
    "NCCL_TUNER_PLUGIN": "an NCCL tuner plugin library",
    "NCCL_PROFILER_PLUGIN": "an NCCL profiler plugin library",
}
Kind = Literal["image", "trust-remote-code", "entrypoint", "program", "env", "mod", "pre-launch",
               "pre_exec", "post_exec", "build"]
NAME_MAX = 300


class ClientCode(BaseModel):
    """One thing the deployment runs that the client chose."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(max_length=NAME_MAX, pattern=r"^[a-z_-]+:[^\s].*\z",
                      description="KIND:VALUE, the name to accept it by.")
    kind: Kind
    what: str = Field(max_length=500, description="What it runs, in words.")
    cannot_run: str = Field("", max_length=500, exclude_if=lambda why: not why, description="Why launch cannot run it on the "
                            "lab even once accepted (a recipe step whose files the input lacks); "
                            "empty where it can.")


def item(kind: str, value: str, what: str) -> ClientCode:
    """The item for `value` (controls shown escaped, so that a name is one line to type)."""
    shown = escape_controls(value.strip(), keep_newlines=False) or "(empty)"
    return ClientCode(name=f"{kind}:{shown}"[:NAME_MAX], kind=kind,
                      what=escape_controls(what, keep_newlines=False)[:500])


def loader_env(env: dict[str, str]) -> list[str]:
    """The names in `env` that steer which code runs, in LOADER_ENV order."""
    return [name for name in LOADER_ENV if name in env]


def client_code(dep: Any) -> list[ClientCode]:
    """Every item a loaded `Deployment` runs by the client's choice, each once, in a stable
    order (typed loosely: the deployment model holds these items, so it imports this module)."""
    items: list[ClientCode] = []
    engine = dep.engine
    if engine.image:
        items.append(item("image", engine.image, f"the container image {engine.image}: every "
                                                 "process of the launch runs its code"))
    if dep.model.trust_remote_code:
        items.append(item("trust-remote-code", dep.model.path, "the model repository's own "
                          "Python code (trust_remote_code), run inside vLLM"))
    args = list(engine.container_args)
    for flag, value in zip(args, args[1:]):
        if flag == "--entrypoint" and value.strip():
            items.append(item("entrypoint", value, f"the container runs {value} first"))
    for word in args:
        if word.startswith("--entrypoint=") and word.split("=", 1)[1].strip():
            value = word.split("=", 1)[1]
            items.append(item("entrypoint", value, f"the container runs {value} first"))
    envs = [dep.env, *dep.node_env.values()]
    for name in LOADER_ENV:
        if any(name in env for env in envs):
            items.append(item("env", name, f"{name} chooses {LOADER_ENV[name]}"))
    items += dep.client_code
    for step in getattr(dep, "steps", ()):
        first = next((line.strip() for text in step.run for line in text.splitlines()
                      if line.strip()), "")
        what = f"a {step.kind} step of the client's recipe tool ({step.when})" + (
            f": {first[:200]}" if first else "")
        found = item(step.kind, step.name.split(":", 1)[-1], what)
        items.append(found.model_copy(update={"cannot_run": "" if step.runnable
                                              else escape_controls(step.why)[:500]}))
    seen: set[str] = set()
    return [i for i in items if not (i.name in seen or seen.add(i.name))]
