"""`vllm serve --config FILE.yaml`: a vLLM config mapping onto the serve arguments it stands for.

Every key is a long option name (`tensor-parallel-size` or `tensor_parallel_size`); `true` is
the bare flag, `false` is left out, a mapping is the option's JSON, a list the option's values.
The file is the here-document the script wrote to that path (`cat > F <<EOF`, bash/files.py),
else found beside the input (by its path, its name, or through a container's binds); either is
read with the bounded YAML reader; one not given is an unknowns row and a `<supply:...>`.
Recipes (recipe.py) and the serve importer (serve_args.py) both read config files here.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import yaml

from sparktriage.errors import InputError
from sparktriage.limits import check_lines
from sparktriage.reproduce.importers.common import Ctx
from sparktriage.reproduce.importers.compose_vars import inside
from sparktriage.yamldoc import load_with_lines
from sparktriage.yamlsafe import load, read_text


def value_words(option: str, value: Any) -> list[str]:
    if value is True:
        return [option]
    if value is False or value is None:
        return []
    if isinstance(value, dict):
        return [option, json.dumps(value, separators=(",", ":"))]
    if isinstance(value, list):
        return [option] + [json.dumps(v) if isinstance(v, (dict, list)) else str(v)
                           for v in value]
    return [option, str(value)]


def config_args(data: dict, ctx: Ctx, where: str) -> list[str]:
    """A vLLM config mapping as argv (long option names; `model` first, as the positional)."""
    out: list[str] = []
    model = None
    for key, value in data.items():
        name = str(key).replace("_", "-")
        if name in ("model", "model-tag"):
            model = str(value)
            continue
        if name == "config":
            ctx.flag_unknown(f"config: {value}", f"{where}: a config file naming another; "
                             "vLLM does not read it")
            continue
        out += value_words("--" + name, value)
    ctx.mapped.append(f"{where}: {len(data)} key(s) -> vllm serve options")
    return ([model] if model else []) + out


def _written(candidates: list[str], ctx: Ctx) -> tuple[str, tuple[int, str]] | None:
    """The here-document the script wrote to one of these paths (its exact path, else the
    one file of that name it wrote), or None."""
    for candidate in candidates:
        path = os.path.normpath(candidate)
        if path in ctx.files:
            return path, ctx.files[path]
    names = [p for p in ctx.files if any(os.path.basename(p) == os.path.basename(c)
                                         for c in candidates)]
    return (names[0], ctx.files[names[0]]) if len(names) == 1 else None


def written_file(ref: str, ctx: Ctx) -> tuple[str, tuple[int, str]] | None:
    """The here-document the script wrote to `ref` (a path inside the container is read
    through the container's binds), or None: (host path, (line, text))."""
    on_host = [host.rstrip("/") + ref[len(folder.rstrip("/")):] for host, folder in ctx.mounts
               if ref.startswith(folder.rstrip("/") + "/")]
    on_host += [host for host, folder in ctx.mounts if folder.rstrip("/") == ref.rstrip("/")]
    return _written(on_host + [ref], ctx)


def read_config(ref: str, base: Path, ctx: Ctx, where: str) -> list[str] | None:
    """`--config FILE`: its options as argv (FILE beside the input, by its path or its name),
    or None with an unknowns row and a `<supply:...>` when it was not given."""
    target = None
    on_host = [host.rstrip("/") + ref[len(folder.rstrip("/")):] for host, folder in ctx.mounts
               if ref.startswith(folder.rstrip("/") + "/")]
    written = _written(on_host + [ref], ctx)
    if written is not None:
        path, (at, text) = written
        origin = f"{ctx.source}:{at} (here-document written to {path})"
        try:
            data, _ = load(text, origin)
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            raise InputError(f"{ctx.source}:{at}: the here-document written to {path} (read by "
                             f"--config) is not YAML"
                             + (f" (its line {mark.line + 1})" if mark else "")) from None
        if not isinstance(data, dict):
            raise InputError(f"{ctx.source}:{at}: the here-document written to {path} (read by "
                             "--config) is not a mapping of option names")
        ctx.mapped.append(f"--config {ref}: read from the here-document of line {at}")
        return config_args(data, ctx, f"--config {ref}")
    for candidate in on_host + [ref, Path(ref).name]:
        found = inside(base, candidate)
        if found is not None and found.is_file():
            target = found
            break
    if target is None:
        ctx.secrets.declare("VLLM_CONFIG_FILE", where)
        ctx.flag_unknown(f"--config {ref}", f"{where}: the config file was not given (give it "
                         "beside the input); its settings are missing, written as "
                         "<supply:VLLM_CONFIG_FILE>")
        return None
    check_lines(read_text(target), str(target))
    data, _ = load_with_lines(target)
    if not isinstance(data, dict):
        raise InputError(f"{target}: a vLLM config file is a mapping of option names")
    return config_args(data, ctx, f"--config {ref}")
