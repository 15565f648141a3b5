"""Record what sparkrun itself renders for recipe files: per node, the serve command, and the
pre-launch steps (mods, pre_exec) it would run. The fixtures under
tests/reproduce/recipes_rendered/ are this script's output.

Runs in a Python 3.12 virtual environment holding the sparkrun wheel (never in the project's
own environment; see docs/reproduce.md "Recipes as sparkrun renders them"):

    /tmp/srvenv/bin/python scripts/sparkrun_render.py OUT_DIR RECIPE.yaml...

Each recipe goes through sparkrun's own `run --dry-run` on eight documentation addresses, in
process, offline (no registry, no model lookup). The runtime methods that produce each node's
command are wrapped only to record what they return, and the hook logger's lines record the
pre-launch steps; nothing sparkrun computes is changed. HOME points at an empty folder so no
user configuration takes part.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import sys
import tempfile
from pathlib import Path

HOSTS = [f"10.0.0.{i}" for i in range(1, 9)]
ARGS = ["--dry-run", "--hosts", ",".join(HOSTS), "--no-auto-detect", "--offline", "--trust"]


_CALLS: list = []
_WRAPPED: list = []


class _Hooks(logging.Handler):
    """Keeps the hook logger's `pre_exec[...]` lines of the head node (rank 0)."""

    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        text = record.getMessage().strip()
        if text.startswith("pre_exec[") and HOSTS[0] in text:
            self.lines.append(text)


def _wrap(cls, name: str, calls: list) -> None:
    original = getattr(cls, name)

    def recorded(self, *args, **kwargs):
        result = original(self, *args, **kwargs)
        calls.append({"method": name, "runtime": self.runtime_name,
                      "node_rank": kwargs.get("node_rank"),
                      "is_cluster": kwargs.get("is_cluster", args[2] if len(args) > 2 else None),
                      "text": result})
        return result

    setattr(cls, name, recorded)


def render(recipe: Path) -> dict:
    from click.testing import CliRunner
    from sparkrun.application import main  # noqa: F401  (loads the CLI's plugins)
    from sparkrun.cli import main as cli
    from sparkrun.runtimes.vllm_distributed import VllmDistributedRuntime
    from sparkrun.runtimes.vllm_ray import VllmRayRuntime

    calls = _CALLS
    calls.clear()
    if not _WRAPPED:
        _WRAPPED.append(True)
        for cls in (VllmDistributedRuntime, VllmRayRuntime):
            for name in ("generate_command", "generate_node_command"):
                if name in cls.__dict__:
                    _wrap(cls, name, calls)
    hooks = _Hooks()
    logging.getLogger("sparkrun.orchestration.hooks").addHandler(hooks)
    logging.getLogger("sparkrun.orchestration.hooks").setLevel(logging.INFO)
    result = CliRunner().invoke(cli, ["run", str(recipe)] + ARGS)
    logging.getLogger("sparkrun.orchestration.hooks").removeHandler(hooks)
    return {"exit_code": result.exit_code, "calls": list(calls), "pre_exec": hooks.lines,
            "output_tail": result.output[-2000:] if result.exit_code else ""}


def main(argv: list[str]) -> int:
    import importlib.metadata as md

    out = Path(argv[0])
    out.mkdir(parents=True, exist_ok=True)
    version = md.version("sparkrun")
    os.environ["HOME"] = tempfile.mkdtemp(prefix="sparkrun-home-")
    for name in argv[1:]:
        path = Path(name)
        record = render(path)
        record.update({
            "recipe": name,
            "recipe_sha256": hashlib.sha256(path.read_bytes()).hexdigest(),
            "sparkrun": version,
            "command": f"sparkrun run {name} " + " ".join(ARGS),
            "hosts": HOSTS,
        })
        target = out / (path.parent.name + "--" + path.stem + ".json")
        target.write_text(json.dumps(record, indent=1, ensure_ascii=False) + "\n")
        print(f"{target}: exit {record['exit_code']}, {len(record['calls'])} command(s)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
