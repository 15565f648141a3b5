"""vLLM's own config files and recipe YAML files, onto the serve arguments they stand for.

- A `vllm serve --config FILE.yaml` file (or such a file given as an input): every key is a
  long option name (`tensor-parallel-size` or `tensor_parallel_size`); `true` is the bare
  flag, `false` is left out, a mapping is the option's JSON (`speculative-config: {method:
  eagle3, num_speculative_tokens: 7}`), a list is the option's several values. vLLM lays the
  command line over the file: `config_args` comes first in the argv so the command line wins.
- A recipe: `model`, `args` / `serve_args` / `vllm_args` (a list of argv words or a mapping as
  above), `env`, `container`/`image`; sparkrun's shape (`defaults` substituted into the
  `command` template's `{key}`s, `min_nodes`, `runtime`, `metadata`).

Files are read with the bounded YAML reader; every key is mapped, noted or an unknowns row.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from sparktriage.errors import InputError
from sparktriage.reproduce import flags as F
from sparktriage.reproduce.importers.cluster import Member, assemble_cluster
from sparktriage.reproduce.importers.common import Ctx
from sparktriage.reproduce.importers.compose_vars import Interpolator
from sparktriage.reproduce.importers.container_script import pick, split_script
from sparktriage.reproduce.importers.serve import env_block, find_serve
from sparktriage.reproduce.importers.serve_args import parse_serve
from sparktriage.reproduce.model import Imported
from sparktriage.yamldoc import load_with_lines

ARGS_KEYS = ("args", "serve_args", "vllm_args", "extra_args", "arguments")
IMAGE_KEYS = ("container", "image", "docker_image")
NOTED = {"metadata": "descriptive", "description": "descriptive", "name": "descriptive",
         "maintainer": "descriptive", "recipe_version": "recipe format",
         "sparkrun_version": "recipe format", "mode": "topology (see min_nodes)",
         "max_nodes": "topology", "solo_only": "topology", "cluster_only": "topology",
         "runtime_config": "runtime-specific", "hardware": "descriptive",
         "tags": "descriptive", "notes": "descriptive"}
SPARKRUN_DEFAULTS = {"tensor_parallel": "tensor-parallel-size",
                     "pipeline_parallel": "pipeline-parallel-size"}
MAX_PASSES = 5


def looks_like_vllm_config(data: Any) -> bool:
    """A mapping whose keys are (nearly) all `vllm serve` long options."""
    if not isinstance(data, dict) or not data:
        return False
    known = sum(1 for k in data if isinstance(k, str) and F.is_known(F.canonical("--" + k)))
    return known >= max(2, int(0.8 * len(data)))


def looks_like_recipe(data: Any) -> bool:
    if not isinstance(data, dict) or not isinstance(data.get("model"), str):
        return looks_like_vllm_config(data)
    return any(k in data for k in ARGS_KEYS + ("defaults", "command", "container", "env",
                                              "runtime")) or looks_like_vllm_config(data)


def _value_words(option: str, value: Any) -> list[str]:
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
    """A vLLM config mapping as argv (long option names; `model` as the positional)."""
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
        out += _value_words("--" + name, value)
    ctx.mapped.append(f"{where}: {len(data)} key(s) -> vllm serve options")
    return ([model] if model else []) + out


def read_config(ref: str, base: Path, ctx: Ctx, where: str) -> list[str] | None:
    """`--config FILE`: its options as argv, or None (unknowns row) when it cannot be read."""
    from sparktriage.reproduce.importers.compose_vars import inside
    target = inside(base, ref) or inside(base, Path(ref).name)
    if target is None or not target.is_file():
        alt = inside(base, Path(ref).name)
        target = alt if alt is not None and alt.is_file() else None
    if target is None:
        ctx.secrets.declare("VLLM_CONFIG_FILE", where)
        ctx.flag_unknown(f"--config {ref}", f"{where}: the config file was not given (give it "
                         "beside the input); its settings are missing, written as "
                         "<supply:VLLM_CONFIG_FILE>")
        return None
    data, _ = load_with_lines(target)
    if not isinstance(data, dict):
        raise InputError(f"{target}: a vLLM config file is a mapping of option names")
    return config_args(data, ctx, f"--config {ref}")


def _substitute(template: str, values: dict[str, Any]) -> str:
    for _ in range(MAX_PASSES):
        new = re.sub(r"\{([A-Za-z_][A-Za-z0-9_]*)\}",
                     lambda m: str(values[m.group(1)]) if m.group(1) in values else m.group(0),
                     template)
        if new == template:
            break
        template = new
    return template


def import_recipe(path: Path, ctx: Ctx) -> Imported:
    data, marks = load_with_lines(path)
    if not isinstance(data, dict):
        raise InputError(f"{ctx.source}: a recipe is a YAML mapping")
    interp = Interpolator({}, ctx)
    if not isinstance(data.get("model"), str) or looks_like_vllm_config(data) and not any(
            k in data for k in ARGS_KEYS + ("command", "defaults")):
        argv = config_args(data, ctx, "vLLM config file")
        return _one(["vllm", "serve"] + argv, {}, {}, ctx, 1, 1)
    engine: dict = {}
    env: dict[str, str] = {}
    argv: list[str] = []
    command_argv: list[str] | None = None
    nodes = 1
    defaults = data.get("defaults") if isinstance(data.get("defaults"), dict) else {}
    for key, value in data.items():
        line = marks.get((key,))
        where = f"line {line}"
        if key == "model":
            ctx.mapped.append(f"{where}: model -> model.path")
        elif key in IMAGE_KEYS and isinstance(value, str):
            engine = {"image": value, "runtime": "docker", "container_args": []}
            ctx.mapped.append(f"{where}: {key} -> engine.image")
        elif key in ARGS_KEYS:
            if isinstance(value, dict):
                argv += config_args(value, ctx, f"{where}: {key}")
            elif isinstance(value, (list, str)):
                words = value if isinstance(value, list) else split_script(value, ctx, where)[0].words
                argv += [str(w) for w in words]
                ctx.mapped.append(f"{where}: {key} -> vllm serve options")
            else:
                raise InputError(f"{ctx.source}:{line}: {key} must be a list or a mapping")
        elif key == "env" and isinstance(value, dict):
            env.update({str(k): interp.text(str(v), where) for k, v in value.items()})
            ctx.mapped.append(f"{where}: env -> env")
        elif key == "defaults":
            ctx.mapped.append(f"{where}: defaults -> the command template's values")
        elif key == "command" and isinstance(value, str):
            text = _substitute(value, {"model": data["model"], **defaults})
            for left in sorted(set(re.findall(r"\{([A-Za-z_][A-Za-z0-9_]*)\}", text))):
                ctx.flag_unknown(f"{{{left}}}", f"{where}: template value not in defaults")
            serve, _ = pick(split_script(text, ctx, where), find_serve, ctx, where)
            if serve is None:
                raise InputError(f"{ctx.source}:{line}: the recipe's command runs no vllm serve "
                                 f"(runtime {data.get('runtime', '?')})")
            command_argv = serve.words
            env.update(serve.env)
        elif key == "runtime":
            if str(value) not in ("vllm", "eugr-vllm"):
                raise InputError(f"{ctx.source}:{line}: runtime {value} is not vLLM")
            ctx.mapped.append(f"{where}: runtime {value} -> vllm")
        elif key == "min_nodes" and isinstance(value, int):
            nodes = max(1, value)
            ctx.mapped.append(f"{where}: min_nodes {value} -> {nodes} node(s)")
        elif key == "model_revision":
            argv += ["--revision", str(value)]
            ctx.mapped.append(f"{where}: model_revision -> --revision")
        elif key in NOTED:
            ctx.note(f"{where}: {key}: {NOTED[key]}, not needed to reproduce")
        else:
            ctx.flag_unknown(str(key), f"{where}: recipe key not reproduced")
    if command_argv is None:
        command_argv = ["vllm", "serve", data["model"]]
        for key, value in defaults.items():
            option = SPARKRUN_DEFAULTS.get(key, key.replace("_", "-"))
            if F.is_known(option):
                command_argv += _value_words("--" + option, value)
            else:
                ctx.flag_unknown(f"defaults.{key}", "not a vllm serve option; not reproduced")
    else:
        ctx.mapped.append("command template (defaults substituted) -> vllm serve")
    return _one(command_argv + argv, env, engine, ctx, marks.get(("command",), 1), nodes,
                data["model"])


def _one(words: list[str], env: dict, engine: dict, ctx: Ctx, line: int, nodes: int,
         model: str | None = None) -> Imported:
    """One serve command (the recipe's) as the input's deployment; `nodes` from min_nodes.
    The recipe's model is the positional when the command names none."""
    found = find_serve(words if words[:1] and find_serve(words) else ["vllm", "serve"] + words)
    prefix, form, args = found
    if model and not (args and not args[0].startswith("-")) and "--model" not in args:
        args = [model] + args
    serve = parse_serve(list(prefix), form, args, ctx)
    serve.line = line
    if nodes > 1:
        serve.nnodes = serve.nnodes or nodes
    result = assemble_cluster([Member(serve, None, env_block(env, ctx, "recipe env"), line)], ctx)
    if engine:
        deployment = dict(result.deployment)
        deployment["engine"] = {**deployment.get("engine", {}), **engine}
        result = result.model_copy(update={"deployment": deployment})
    return result
