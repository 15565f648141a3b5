"""vLLM's own config files and recipe YAML files, onto the serve arguments they stand for.

- A `vllm serve --config FILE.yaml` file (inside a container: read through its binds, on the
  host side, when that lies in the input's folder): every key is a long option name
  (`tensor-parallel-size` or `tensor_parallel_size`); `true` is the bare flag, `false` is left
  out, a mapping is the option's JSON (`speculative-config: {method: eagle3, ...}`), a list the
  option's values. vLLM lays the command line over the file, so `config_args` come first in
  the argv and the command line wins. Given as an input of its own without a `model`, such a
  file is read through the serve command's `--config` that names it (noted, no node).
- Recipes in three published shapes: sparkrun / eugr (`model`, `container`, `defaults`
  filled into the `command` template exactly as sparkrun renders it, with what sparkrun adds
  and its choice of native multi-node or Ray: recipe_render.py; `env`; `min_nodes`,
  `cluster_only`; `build_args`, `pre_exec`, `mods`, `post_exec` as the deployment's named
  steps: recipe_steps.py), vllm-project/recipes model files (`model.model_id`, `base_args`,
  `base_env`, `features` on unless listed in `opt_in_features`, `variants.default`; the
  `guide` text is documentation), and a plain `model` + `args`/`serve_args` (list or mapping)
  + `env`.

Files are read with the bounded YAML reader; every key is mapped, noted or an unknowns row.
"""

from __future__ import annotations

import json
import re
from typing import Any

from sparktriage.errors import InputError
from sparktriage.reproduce import flags as F
from sparktriage.reproduce.importers import recipe_render as R
from sparktriage.reproduce.importers.cluster import Member, assemble_cluster
from sparktriage.reproduce.importers.common import Ctx
from sparktriage.reproduce.importers.compose_vars import Interpolator
from sparktriage.reproduce.importers.container_script import pick, split_script
from sparktriage.reproduce.importers.recipe_steps import recipe_steps
from sparktriage.reproduce.importers.nodes import env_block, find_serve
from sparktriage.reproduce.importers.protocol import ReadInput
from sparktriage.reproduce.importers.serve_args import parse_serve
from sparktriage.reproduce.importers.vllm_config import config_args, value_words
from sparktriage.reproduce.model import Imported

ARGS_KEYS = ("args", "serve_args", "vllm_args", "extra_args", "arguments")
IMAGE_KEYS = ("container", "image", "docker_image")
NOTED = {"metadata": "descriptive", "description": "descriptive", "name": "descriptive",
         "maintainer": "descriptive", "recipe_version": "recipe format",
         "sparkrun_version": "recipe format", "mode": "topology (the ranks decide the nodes)",
         "max_nodes": "topology", "solo_only": "topology",
         "cluster_only": "topology (the ranks decide the nodes)",
         "runtime_config": "runtime-specific", "hardware": "descriptive", "tags": "descriptive",
         "notes": "descriptive", "meta": "descriptive",
         "guide": "documentation; its commands are examples, not the recipe's settings",
         "compatible_strategies": "descriptive",
         "strategy_overrides": "per-strategy options, none chosen",
         "hardware_overrides": "per-hardware options, none chosen"}
STEP_KEYS = ("build_args", "pre_exec", "mods", "post_exec")
SPARKRUN_DEFAULTS = {"tensor_parallel": "tensor-parallel-size",
                     "pipeline_parallel": "pipeline-parallel-size",
                     "data_parallel": "data-parallel-size"}


def looks_like_vllm_config(data: Any) -> bool:
    """A mapping whose keys are (nearly) all `vllm serve` long options."""
    if not isinstance(data, dict) or not data:
        return False
    known = sum(1 for k in data if isinstance(k, str) and F.is_known(F.canonical("--" + k)))
    return known >= max(2, int(0.8 * len(data)))


def _model_card(data: dict) -> bool:
    return isinstance(data.get("model"), dict) and isinstance(data["model"].get("model_id"), str)


def looks_like_recipe(data: Any) -> bool:
    if not isinstance(data, dict):
        return False
    if _model_card(data) or any(k in data for k in ("recipe_version", "sparkrun_version")):
        return True
    if isinstance(data.get("command"), str) and ("defaults" in data or any(
            k in data for k in IMAGE_KEYS)) and "vllm" in data["command"]:
        return True
    if isinstance(data.get("model"), str) and any(
            k in data for k in ARGS_KEYS + ("defaults", "command", "env", "runtime")
            + IMAGE_KEYS):
        return True
    return looks_like_vllm_config(data)


class RecipeImporter:
    """A recipe (sparkrun, vllm-project/recipes) or a vLLM `--config` file (module doc)."""

    kind = "recipe"
    role = "alone"

    def claims(self, source: ReadInput) -> bool:
        return isinstance(source.data, dict) and looks_like_recipe(source.data)

    def read(self, source: ReadInput, ctx: Ctx) -> Imported:
        return _recipe(*source.with_lines(), ctx)


def _recipe(data, marks: dict, ctx: Ctx) -> Imported:
    if not isinstance(data, dict):
        raise InputError(f"{ctx.source}: a recipe is a YAML mapping")
    try:
        return _read(data, marks, ctx)
    except (TypeError, AttributeError, ValueError) as exc:  # a shape no recipe tool takes
        raise InputError(f"{ctx.source}: a recipe value of an unexpected type "
                         f"({type(exc).__name__}: {exc})") from None


def _mapping(data: dict, key: str, marks: dict, ctx: Ctx) -> dict:
    value = data.get(key)
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise InputError(f"{ctx.source}:{marks.get((key,))}: {key} must be a mapping")
    return value


def _read(data: dict, marks: dict, ctx: Ctx) -> Imported:
    for key in ("features", "variants", "defaults", "env"):
        _mapping(data, key, marks, ctx)
    if _model_card(data):
        return _card(data, marks, ctx)
    if looks_like_vllm_config(data) and not any(
            k in data for k in ARGS_KEYS + ("command", "defaults") + IMAGE_KEYS):
        argv = config_args(data, ctx, "vLLM config file")
        if "model" not in data and "model_tag" not in data:
            ctx.note("a vLLM --config file naming no model: its settings apply where a serve "
                     "command's --config names it (read there, under the command line)")
            return ctx.result()
        return _one(["vllm", "serve"] + argv, {}, {}, ctx, 1, 1)
    return _template(data, marks, ctx)


def _template(data: dict, marks: dict, ctx: Ctx) -> Imported:
    """sparkrun / eugr recipes and `model` + `args` recipes."""
    interp = Interpolator({}, ctx)
    engine: dict = {}
    env: dict[str, str] = {}
    argv: list[str] = []
    command_argv: list[str] | None = None
    nodes = 1
    command_text = ""
    cleared = False  # executor_config.entrypoint: "" (the image's entrypoint cleared)
    defaults = data.get("defaults") if isinstance(data.get("defaults"), dict) else {}
    model = data.get("model") if isinstance(data.get("model"), str) else None
    for key, value in data.items():
        line = marks.get((key,))
        where = f"line {line}"
        if key == "model" and model:
            ctx.mapped.append(f"{where}: model -> model.path (unless the command names one)")
        elif key in IMAGE_KEYS and isinstance(value, str):
            engine = {"image": value, "runtime": "docker", "container_args": []}
            ctx.mapped.append(f"{where}: {key} -> engine.image")
        elif key in ARGS_KEYS:
            argv += _args(value, ctx, where, line)
        elif key == "env" and isinstance(value, dict):
            env.update({str(k): interp.text(str(v), where) for k, v in value.items()})
            ctx.mapped.append(f"{where}: env -> env")
        elif key == "env" and value is None:
            continue
        elif key == "defaults" and isinstance(value, dict):
            ctx.mapped.append(f"{where}: defaults -> the command template's values")
        elif key == "command" and isinstance(value, str):
            values = R.values_of(data)
            for left in sorted(set(R.placeholders(value)) - {k for k, v in values.items()
                                                              if v is not None}):
                # given on the recipe tool's command line, not known here
                values[left] = ctx.secrets.declare(left.upper(), f"{where}: template {{{left}}}")
                ctx.flag_unknown(f"{{{left}}}", f"{where}: template value not in defaults; "
                                 f"written as {values[left]}")
            text = R.render(value, values, ctx.source, line)
            # the command runs in the container, whose environment holds the recipe's env
            given = {str(k): str(v) for k, v in (data.get("env") or {}).items()
                     if isinstance(data.get("env"), dict)}
            serve, _ = pick(split_script(text, ctx, line, given), find_serve, ctx, line)
            if serve is None:
                raise InputError(f"{ctx.source}:{line}: the recipe's command runs no vllm serve "
                                 f"(runtime {data.get('runtime', '?')})")
            command_argv = _as_sparkrun_does(list(serve.words), data, values, ctx, where)
            command_text = text
            kept = dict(serve.env)
            for name in R.self_extended(text, given):
                kept.pop(name, None)
                ctx.flag_unknown(f"export {name}", f"{where}: the command extends the image's "
                                 f"{name}, which the input does not show; not set (the image's "
                                 f"{name} is kept)")
            env.update(kept)
            ctx.mapped.append(f"{where}: command template rendered as sparkrun renders it "
                              "-> vllm serve")
        elif key == "runtime":
            _runtime_backend(value, ctx, line)
        elif key == "executor_config" and isinstance(value, dict):
            cleared = _executor_config(value, ctx, line) or cleared
        elif key == "min_nodes" and isinstance(value, int):
            nodes = max(1, value)
            ctx.mapped.append(f"{where}: min_nodes {value} -> at least {nodes} node(s)")
        elif key == "model_revision":
            # sparkrun passes the pin only on a command it builds from the defaults; a
            # template passes it itself ({model_revision}) or not at all
            if not isinstance(data.get("command"), str):
                argv += ["--revision", str(value)]
                ctx.mapped.append(f"{where}: model_revision -> --revision")
            else:
                ctx.note(f"{where}: model_revision: the command template decides (sparkrun adds "
                         "no --revision to a template)")
        elif key in STEP_KEYS:
            continue  # read below, in the recipe tool's order
        elif key in NOTED:
            ctx.note(f"{where}: {key}: {NOTED[key]}")
        else:
            ctx.flag_unknown(str(key), f"{where}: recipe key not reproduced")
    steps = recipe_steps(data, marks, ctx)
    if command_argv is None:
        if not model:
            raise InputError(f"{ctx.source}: the recipe names no model and has no command")
        command_argv = ["vllm", "serve", model]
        for key, value in defaults.items():
            option = SPARKRUN_DEFAULTS.get(key, key.replace("_", "-"))
            if F.is_known(option):
                command_argv += value_words("--" + option, value)
                ctx.mapped.append(f"defaults.{key} -> --{option}")
            else:
                ctx.flag_unknown(f"defaults.{key}", "not a vllm serve option; not reproduced")
    words = command_argv + argv
    backend = R.executor(data.get("runtime"), data, command_text)
    named = R.has_flag(words, "--distributed-executor-backend")
    result = _one(words, env, engine, ctx, marks.get(("command",), 1), nodes, model, cleared)
    if steps:
        result = result.model_copy(update={"deployment": {**result.deployment,
                                                          "steps": steps}})
    dep = result.deployment
    p = dep.get("parallelism") or {}
    world = int(p.get("tp") or 1) * int(p.get("pp") or 1) * int(p.get("dp") or 1)
    if world > 1 or nodes > 1:
        chosen = (dep.get("engine") or {}).get("backend") if named else backend
        update = {"backend": chosen or backend}
        if update["backend"] == "mp":
            update["master_port"] = R.RENDEZVOUS_PORT
        result = _with_engine(result, update)
        result.mapped.append(f"runtime {data.get('runtime') or '(none)'} -> "
                             f"{'Ray' if update['backend'] == 'ray' else 'native multi-node'}"
                             f" across {world} rank(s), as sparkrun chooses")
    return result


def _as_sparkrun_does(words: list[str], data: dict, values: dict, ctx: Ctx,
                      where: str) -> list[str]:
    """What sparkrun does to a rendered command before it runs it: a `defaults` value for the
    executor backend replaces the command's, and a command naming no served name gets one."""
    wanted = values.get("distributed_executor_backend")
    if wanted is not None:
        flag = "--distributed-executor-backend"
        for i, word in enumerate(words):
            if word == flag and i + 1 < len(words):
                words[i + 1] = str(wanted)
                break
            if word.startswith(flag + "="):
                words[i] = f"{flag}={wanted}"
                break
        else:
            words += [flag, str(wanted)]
        ctx.mapped.append(f"{where}: defaults.distributed_executor_backend -> {flag} {wanted}")
    if not R.has_flag(words, "--served-model-name"):
        name = R.served_name(data, values)
        if name:
            words += ["--served-model-name", name]
            ctx.mapped.append(f"{where}: --served-model-name {name} (sparkrun names the "
                              "served model when the command does not)")
    return words


def _with_engine(result: Imported, update: dict) -> Imported:
    deployment = dict(result.deployment)
    deployment["engine"] = {**deployment.get("engine", {}), **update}
    return result.model_copy(update={"deployment": deployment})


def _executor_config(value: dict, ctx: Ctx, line: int | None) -> bool:
    """sparkrun's `executor_config` (how the container runs): True when it clears the
    image's entrypoint (`entrypoint: ""`, so the command runs as written); its other keys
    are unknowns rows (the plan runs containers with host network and IPC itself)."""
    cleared = False
    for key, item in value.items():
        if key == "entrypoint" and str(item or "").strip() == "":
            cleared = True
            ctx.mapped.append(f"line {line}: executor_config.entrypoint \"\" -> --entrypoint "
                              "of the server program (the image's entrypoint is not run)")
        elif key in ("network", "ipc") and str(item) == "host":
            ctx.note(f"line {line}: executor_config.{key} host: the plan runs containers "
                     f"with --{key} host")
        else:
            ctx.flag_unknown(f"executor_config.{key}: {item}", f"line {line}: container "
                             "setting of the recipe tool; not reproduced")
    return cleared


_VLLM_RUNTIME = re.compile(r"(?:^|[-_])vllm(?:[-_]|$)")


def _runtime_backend(value: Any, ctx: Ctx, line: int | None) -> str | None:
    """A recipe tool's runtime name: a vLLM one (`vllm`, `eugr-vllm`, sparkrun's `vllm-ray`
    and `vllm-distributed`), else InputError. The executor it implies across nodes: Ray for
    a `-ray` runtime, native multi-node (mp) for `-distributed`/`-native`, None when the name
    does not say (the command and the cluster decide)."""
    name = str(value).lower()
    if not _VLLM_RUNTIME.search(name):
        raise InputError(f"{ctx.source}:{line}: runtime {value} is not vLLM")
    backend = "ray" if "ray" in name.split("-") or name.endswith("_ray") else \
        "mp" if any(w in name for w in ("distributed", "native")) else None
    ctx.mapped.append(f"line {line}: runtime {value} -> vllm"
                      + (f" ({'Ray' if backend == 'ray' else 'native multi-node'})"
                         if backend else ""))
    return backend


def _args(value: Any, ctx: Ctx, where: str, line: int | None) -> list[str]:
    if isinstance(value, dict):
        return config_args(value, ctx, where)
    if isinstance(value, str):
        commands = split_script(value, ctx, line)
        return commands[0].words if commands else []
    if isinstance(value, list):
        ctx.mapped.append(f"{where}: arguments -> vllm serve options")
        return [json.dumps(w) if isinstance(w, (dict, list)) else str(w) for w in value]
    if value is None:
        return []
    raise InputError(f"{ctx.source}:{line}: arguments must be a list or a mapping")


def _card(data: dict, marks: dict, ctx: Ctx) -> Imported:
    """A vllm-project/recipes model file: the default variant with the default features."""
    card = data["model"]
    argv: list[str] = []
    env: dict[str, str] = {}
    argv += _args(card.get("base_args"), ctx, "model.base_args", marks.get(("model",)))
    env.update({str(k): str(v) for k, v in (card.get("base_env") or {}).items()})
    ctx.mapped.append("model.model_id -> model.path; base_args, base_env -> options, env")
    opt_in = set(data.get("opt_in_features") or [])
    for name, feature in (data.get("features") or {}).items():
        if not isinstance(feature, dict):
            continue
        if name in opt_in:
            ctx.note(f"feature {name} is opt-in (not on by default): not applied")
            continue
        argv += _args(feature.get("args"), ctx, f"features.{name}", marks.get(("features",)))
        env.update({str(k): str(v) for k, v in (feature.get("env") or {}).items()})
        ctx.mapped.append(f"features.{name} (on by default) -> options")
    default = (data.get("variants") or {}).get("default") or {}
    model = str(default.get("model_id") or card["model_id"])
    argv += _args(default.get("extra_args"), ctx, "variants.default", marks.get(("variants",)))
    env.update({str(k): str(v) for k, v in (default.get("extra_env") or {}).items()})
    for key in data:
        if key in ("model", "features", "opt_in_features", "variants"):
            continue
        if key in NOTED:
            ctx.note(f"line {marks.get((key,))}: {key}: {NOTED[key]}")
        else:
            ctx.flag_unknown(str(key), f"line {marks.get((key,))}: recipe key not reproduced")
    others = [v for v in (data.get("variants") or {}) if v != "default"]
    if others:
        ctx.note(f"variants {', '.join(map(str, others))} not chosen (the default variant is "
                 "reproduced)")
    return _one(["vllm", "serve", model] + argv, env, {}, ctx, marks.get(("model",), 1), 1)


def _one(words: list[str], env: dict, engine: dict, ctx: Ctx, line: int, nodes: int,
         model: str | None = None, cleared: bool = False) -> Imported:
    """One serve command (the recipe's) as the input's deployment; `nodes` from min_nodes.
    The recipe's model is the positional when the command names none."""
    found = find_serve(words) or find_serve(["vllm", "serve"] + words)
    prefix, form, args = found
    if model and not (args and not args[0].startswith("-")) and "--model" not in args:
        args = [model] + args
    serve = parse_serve(list(prefix), form, args, ctx)
    serve.line = line
    if cleared and engine:
        engine = {**engine, "container_args": list(engine.get("container_args") or [])
                  + ["--entrypoint", prefix[0]]}
        serve.set("engine", "vllm", list(prefix[1:]))
    if nodes > 1:
        serve.nnodes = serve.nnodes or nodes
    result = assemble_cluster([Member(serve, None, env_block(env, ctx, "recipe env"), line)], ctx)
    if engine:
        deployment = dict(result.deployment)
        deployment["engine"] = {**deployment.get("engine", {}), **engine}
        result = result.model_copy(update={"deployment": deployment})
    return result
