"""`vllm serve` arguments onto the deployment model: `parse_serve`, every argument accounted for.

Options the model has a field for are typed into it (`flags.TYPED`), per-node options are left
to the lab plan, secrets become placeholders, JSON-valued options (and their dotted
`--name.key=value` forms, merged in) are parsed, other known options go to `serve.flags` and
unknown ones to `serve.extra_args`, flagged. The script (serve.py), docker and compose
importers use it for the serve command they find.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sparktriage.config import speculative_legacy
from sparktriage.config.speculative_flag import ngram_read
from sparktriage.errors import InputError
from sparktriage.reproduce import flags as F
from sparktriage.reproduce import vllm_options as V
from sparktriage.reproduce.importers import serve_rules as R
from sparktriage.reproduce.importers.common import Ctx
from sparktriage.reproduce.importers.vllm_config import read_config
from sparktriage.reproduce.normalize import deep_merge

PLACEHOLDER = "<supply:"


class Serve:
    """The result of parsing one serve command."""

    def __init__(self) -> None:
        self.deployment: dict[str, dict] = {"model": {}, "parallelism": {}, "engine": {},
                                            "serve": {"flags": {}, "extra_args": []},
                                            "load": {}}
        self.speculative: dict | None = None
        self.node_rank: int | None = None
        self.headless = False
        self.master_addr: str | None = None
        self.nnodes: int | None = None
        self.comparable: list[str] = []  # argv without the per-node options (node variants)
        self.line: int | None = None  # the command's line in its input (set by the importer)

    def set(self, section: str, key: str, value: Any) -> None:
        self.deployment.setdefault(section, {})[key] = value


def _typed(value: str, kind: type, option: str, ctx: Ctx):
    if kind is bool:
        return value.lower() not in ("false", "0", "no")
    try:
        return kind(value)
    except ValueError:
        raise InputError(f"{ctx.source}: {option}: expected {kind.__name__}, got "
                         f"{ctx.secrets.text(R.cut(value))!r}") from None


def _json_value(option: str, value: str, ctx: Ctx) -> Any:
    try:
        return json.loads(value)
    except (ValueError, RecursionError):
        raise InputError(f"{ctx.source}: --{option}: not valid JSON") from None


def _is_json(value: str) -> bool:
    try:
        json.loads(value)
        return True
    except (ValueError, RecursionError):
        return False


def _scalar(value: str) -> Any:
    try:
        return json.loads(value)
    except ValueError:
        return value


def _speculative(spec: dict, out: Serve, ctx: Ctx) -> None:
    spec = ngram_read(spec)
    simple = all(isinstance(v, (str, int, float, bool)) or v is None for v in spec.values())
    n = spec.get("num_speculative_tokens")
    if simple and isinstance(spec.get("method"), str) and isinstance(n, int) and n >= 1:
        extra = {k: v for k, v in spec.items()
                 if k not in ("method", "num_speculative_tokens", "model")}
        model = spec.get("model")
        out.speculative = {"method": spec["method"], "num_speculative_tokens": n,
                           "model": model if isinstance(model, str) else None, "extra": extra}
        ctx.mapped.append("--speculative-config -> speculative")
    else:
        out.deployment["serve"]["flags"]["speculative-config"] = json.dumps(
            spec, separators=(",", ":"))
        ctx.mapped.append("--speculative-config -> serve.flags (nested or partial: kept as JSON)")


@dataclass
class _Seen:
    """What the option loop collects before the JSON-valued options and the model are decided."""

    json_opts: dict[str, Any] = field(default_factory=dict)
    dotted: dict[str, dict] = field(default_factory=dict)  # --name.key=value trees, by name
    positional: list[str] = field(default_factory=list)
    legacy: dict[str, tuple[str, str | None]] = field(default_factory=dict)  # vLLM < 0.8 options
    # the release whose option rules read the argv, and what says the client runs it
    release: tuple[str, str] = ("", "")


def parse_serve(prefix: list[str], form: str, args: list[str], ctx: Ctx) -> Serve:
    """Map serve arguments onto the deployment model (every argument accounted for)."""
    out = Serve()
    out.set("engine", "vllm", prefix if len(prefix) != 1 else prefix[0])
    if form == "api_server":
        ctx.note("python -m vllm.entrypoints.openai.api_server is written as `vllm serve` "
                 "(same options)")
    seen = _Seen(release=R.release(ctx))
    args = _with_config(list(args), ctx)
    i = 0
    while i < len(args):
        i = _argument(args, i, out, seen, ctx)
    _json_options(seen, out, ctx)
    _positional(seen.positional, out, ctx)
    if "path" not in out.deployment["model"]:
        raise InputError(f"{ctx.source}: the serve command names no model")
    return out


def _with_config(args: list[str], ctx: Ctx) -> list[str]:
    """`--config FILE.yaml` replaced by the file's options, laid under the command line (vLLM's
    order: the command line wins); the file is read relative to the input (vllm_config.py)."""
    for i, word in enumerate(args):
        if word == "--config" and i + 1 < len(args) or word.startswith("--config="):
            ref = word.partition("=")[2] if "=" in word else args[i + 1]
            rest = args[:i] + args[i + (1 if "=" in word else 2):]
            base = Path(os.path.abspath(ctx.source)).parent
            from_file = read_config(ref, base, ctx, f"--config {ref}")
            if from_file is None:
                return rest
            names_model = (rest and not rest[0].startswith("-")) or any(
                w == "--model" or w.startswith("--model=") for w in rest)
            if from_file and not from_file[0].startswith("-") and names_model:
                from_file = from_file[1:]  # the command line names the model
            if rest and not rest[0].startswith("-"):  # the model stays the first word: an
                return rest[:1] + from_file + rest[1:]  # option of the file may take several
            return from_file + rest
    return args


def _argument(args: list[str], i: int, out: Serve, seen: _Seen, ctx: Ctx) -> int:
    """Account for `args[i]` (and the value it takes); return the index after them."""
    word = args[i]
    i += 1
    if not word.startswith("-") or word == "-" or R.is_number(word):
        seen.positional.append(word)
        out.comparable.append(word)
        ctx.check_variables(word, "argument")
        return i
    option, name, eq, value, i = _option_value(word, args, i, seen.release[0])
    long = F.long_name(name.split(".")[0])
    # how many values: the release's rule, else that of the newest release with the option
    shape = V.spec(long, seen.release[0]) or V.any_spec(long)
    if shape is not None and shape.many and not eq and "." not in name and \
            name not in F.PER_NODE:
        return _many(option, name, shape, value, args, i, out, seen, ctx)
    shown = option + (f"={value}" if eq else (f" {value}" if value is not None else ""))
    if value is not None:
        ctx.check_variables(value, option)
    if name in F.PER_NODE:
        _per_node(option, name, value, out, ctx)
        return i
    out.comparable.append(shown)
    return _option(option, name, value, args, i, out, seen, ctx)


def _option_value(word: str, args: list[str], i: int,
                  release: str) -> tuple[str, str, str, str | None, int]:
    """(option as written, canonical name, "=" when the value was inline, value, next index);
    `-O3`, `-O.key=value` are the compilation-config shorthand. Whether the option takes the
    next word is the release's nargs: none for a flag, one for a plain option, the next word
    unless it is an option for nargs `?` (several values: `_many`)."""
    option, eq, inline = word.partition("=")
    name = F.canonical(option)
    if option.startswith("-O") and option not in F.SHORT and not option.startswith("--"):
        if option.startswith("-O."):
            name = "compilation-config" + option[2:]
        else:
            name, eq, inline = "compilation-config", "=", _o_level(option[2:])
    if eq:
        return option, name, eq, inline, i
    if ((F.is_bool(name.split(".")[0], release) or name in speculative_legacy.BOOLS)
            and name not in F.JSON_VALUED and "." not in name):
        return option, name, eq, None, i
    if i < len(args) and R.is_value(args[i]):
        return option, name, eq, args[i], i + 1
    return option, name, eq, None, i


def _many(option: str, name: str, spec: V.Option, first: str | None, args: list[str], i: int,
          out: Serve, seen: _Seen, ctx: Ctx) -> int:
    """An option of several values (`--cudagraph-capture-sizes 1 2 4 8`, nargs `+`/`*`/N):
    every value up to the next option is its own, as argparse reads them (a negative number is
    a value); kept together in serve.extra_args, each value checked by the release's rule."""
    values, i = R.values_of(option, spec, first, args, i, seen.release, ctx)
    release = seen.release[0]
    if len(values) == 1 and (name == "served-model-name" or name in F.SECRET_OPTIONS):
        out.comparable.append(f"{option} {values[0]}")
        return _option(option, name, values[0], args, i, out, seen, ctx)  # its own place
    if name in F.SECRET_OPTIONS:  # several keys: each a placeholder to supply
        key = name.replace("-", "_").upper()
        values = [ctx.secrets.named(key if n == 0 else f"{key}_{n + 1}", v, option)
                  for n, v in enumerate(values)]
    shown = " ".join([option, *values])
    out.comparable.append(shown)
    R.not_in_release(shown, name, V.spec(spec.name, release), seen.release, ctx)
    out.deployment["serve"]["extra_args"] += [option, *values]
    how = "several names" if name == "served-model-name" else \
        f"{len(values)} values, vLLM {release} reads them all"
    ctx.mapped.append(f"{option} ({how}) -> serve.extra_args")
    return i


def _per_node(option: str, name: str, value: str | None, out: Serve, ctx: Ctx) -> None:
    if name == "node-rank" and value is not None and PLACEHOLDER in value:
        # one script run on every node with its rank set there (`--node-rank "$NODE_RANK"`):
        # the rank is a per-node value the lab plan assigns, not a setting to reproduce
        ctx.note(f"{option} {ctx.secrets.text(value)}: the node's rank is given at run time "
                 "on each node; the lab plan sets each node's rank")
    elif name == "node-rank":
        out.node_rank = _typed(value or "0", int, option, ctx)
    elif name in F.DP_PLACEMENT:
        # which data-parallel ranks this node runs: the lab plan places one rank per GB10
        # node with --nnodes/--node-rank (vLLM infers the DP rank from the node rank); the
        # client's per-node value would give every lab node the first node's ranks
        ctx.mapped.append(f"{option} {value} -> per-node data-parallel placement (the lab plan "
                          "places the ranks)")
        return
    elif name == "headless":
        out.headless = value is None or value.lower() not in ("false", "0")
    else:
        out.master_addr = value
    ctx.mapped.append(f"{option} -> per-node (the lab plan sets it)")


def _option(option: str, name: str, value: str | None, args: list[str], i: int, out: Serve,
            seen: _Seen, ctx: Ctx) -> int:
    """One option onto its place: a placeholder for a secret, a dotted tree, a JSON value, a
    typed field, serve.flags, or unknown (serve.extra_args)."""
    head, dot, tail = name.partition(".")
    spec = V.spec(F.long_name(head), seen.release[0])
    if spec is not None and value is not None and not dot and head not in F.SECRET_OPTIONS \
            and head not in F.JSON_VALUED and not spec.flag:
        R.check(option, spec, value, seen.release, ctx)
    if head in F.SECRET_OPTIONS:
        stand = ctx.secrets.named(head.replace("-", "_").upper(), value or "", f"{option}")
        out.deployment["serve"]["flags"][head] = stand
        ctx.mapped.append(f"{option} -> serve.flags.{head} (a secret, now a placeholder)")
    elif dot:
        if head not in F.JSON_VALUED and head not in F.known():
            _unknown(option, value, out, ctx)
            return i
        node = seen.dotted.setdefault(head, {})
        keys = tail.split(".")
        for key in keys[:-1]:
            node = node.setdefault(key, {})
        node[keys[-1]] = True if value is None else _scalar(value)
    elif name in F.JSON_VALUED:
        if value is None:
            raise InputError(f"{ctx.source}: {option} needs a JSON value")
        if PLACEHOLDER in value and not _is_json(value):
            ctx.flag_unknown(f"{option} {value}", f"{option} is built at run time (not known "
                             "without running the input); left out of the deployment: write "
                             "the JSON it makes there")
            return i
        seen.json_opts[name] = _json_value(name, value, ctx)
    elif name in F.TYPED:
        R.not_in_release(R.shown(option, value), name, spec, seen.release, ctx)
        return _typed_option(option, name, value, args, i, out, ctx, spec)
    elif (old := speculative_legacy.name_of(option if option in speculative_legacy.SHORT
                                            else "--" + name)) is not None:
        if value is None and i < len(args) and args[i].lower() in ("true", "false"):
            value, i = args[i], i + 1  # a bool option of the old parser written with its value
        seen.legacy[old] = (option, value)
    elif F.is_known(name):
        R.not_in_release(R.shown(option, value), name, spec, seen.release, ctx)
        out.deployment["serve"]["flags"][name] = True if value is None else value
        ctx.mapped.append(f"{option} -> serve.flags.{name}")
    else:
        _unknown(option, value, out, ctx)
    return i


def _typed_option(option: str, name: str, value: str | None, args: list[str], i: int,
                  out: Serve, ctx: Ctx, spec: V.Option | None = None) -> int:
    """An option the deployment model has a field for, converted to the field's type as the
    release converts it (`--max-model-len 32k` is 32000); a value the field cannot hold but
    vLLM accepts (`--max-model-len auto` or -1: the model's own length) stays in serve.flags
    as written."""
    section, key, kind = F.TYPED[name]
    if name == "served-model-name":
        names = [value] if value is not None else []
        while i < len(args) and not args[i].startswith("-"):
            names.append(args[i])
            i += 1
        if len(names) != 1:
            out.deployment["serve"]["extra_args"] += ["--served-model-name", *names]
            ctx.mapped.append(f"{option} (several names) -> serve.extra_args")
            return i
    if value is not None and kind is not str and PLACEHOLDER in value:
        # a value the input does not fix (a script variable, a compose ${VAR}): vLLM's default
        # stands in the deployment, and the row says which value to put there
        ctx.flag_unknown(f"{option} {value}", f"{option} takes a value not known without "
                         f"running the input; the deployment leaves {section}.{key} at vLLM's "
                         "default: set it there")
        return i
    if kind is bool:
        typed = True if value is None else _typed(value, bool, option, ctx)
    elif value is None:
        raise InputError(f"{ctx.source}: {option} needs a value")
    elif spec is not None and kind in (int, float) and spec.type in R.NUMERIC:
        typed = V.typed(spec, value)
        if typed is None or (typed == -1 and spec.type == "human_readable_int_or_auto"):
            out.deployment["serve"]["flags"][name] = value
            meaning = "vLLM's default" if typed is None else "the model's own length"
            ctx.mapped.append(f"{option} {value} -> serve.flags.{name} (vLLM reads it as "
                              f"{meaning})")
            return i
        if str(typed) != value.strip():
            ctx.mapped.append(f"{option} {value}: {typed} as vLLM reads it")
    else:
        typed = _typed(value, kind, option, ctx)
    if name == "distributed-executor-backend" and typed not in F.BACKENDS:
        out.deployment["serve"]["flags"][name] = typed
        ctx.mapped.append(f"{option} -> serve.flags.{name}")
        return i
    if name == "nnodes":
        out.nnodes = typed
    out.set(section, key, typed)
    ctx.mapped.append(f"{option} -> {section}.{key}")
    return i


def _json_options(seen: _Seen, out: Serve, ctx: Ctx) -> None:
    """The JSON-valued options, with their dotted forms merged in, onto their places."""
    for head, tree in seen.dotted.items():
        base = seen.json_opts.get(head)
        seen.json_opts[head] = deep_merge(base if isinstance(base, dict) else {}, tree)
        ctx.mapped.append(f"--{head}.* -> merged into --{head}")
    if seen.legacy:
        _legacy(seen, out, ctx)
    for name, parsed in seen.json_opts.items():
        if name == "speculative-config" and isinstance(parsed, dict):
            _speculative(parsed, out, ctx)
        elif name == "model-loader-extra-config" and isinstance(parsed, dict) and all(
                isinstance(v, (str, int, float, bool)) or v is None for v in parsed.values()):
            out.set("load", "extra_config", parsed)
            ctx.mapped.append("--model-loader-extra-config -> load.extra_config")
        else:
            out.deployment["serve"]["flags"][name] = json.dumps(parsed, separators=(",", ":"))
            ctx.mapped.append(f"--{name} -> serve.flags.{name} (JSON)")


def _legacy(seen: _Seen, out: Serve, ctx: Ctx) -> None:
    """vLLM < 0.8's speculative options as the `--speculative-config` they became (config/
    speculative_legacy.py); those with no key in vLLM 0.32 are left out and flagged."""
    written = ", ".join(option for option, _ in seen.legacy.values())
    if "speculative-config" in seen.json_opts:
        raise InputError(f"{ctx.source}: the speculative config is given twice: "
                         f"--speculative-config and vLLM < 0.8's {written}; keep one")
    config, dropped = speculative_legacy.translate({n: v for n, (_, v) in seen.legacy.items()})
    for name in dropped:
        option, value = seen.legacy[name]
        ctx.flag_unknown(option if value is None else f"{option} {value}",
                         "a speculative option of vLLM before 0.8 with no setting in vLLM 0.32's "
                         "--speculative-config; left out")
    if config:
        kept = ", ".join(o for n, (o, _) in seen.legacy.items() if n not in dropped)
        ctx.mapped.append(ctx.secrets.text(f"{kept} (vLLM < 0.8) -> --speculative-config "
                                           f"{json.dumps(config, separators=(',', ':'))}"))
        seen.json_opts["speculative-config"] = config


def _positional(positional: list[str], out: Serve, ctx: Ctx) -> None:
    """The model path (the first positional argument unless --model gave it); extras kept."""
    if not positional:
        return
    if "path" in out.deployment["model"]:
        ctx.flag_unknown(" ".join(positional), "extra positional argument; kept in "
                                              "serve.extra_args")
        out.deployment["serve"]["extra_args"] += positional
        return
    out.set("model", "path", positional[0])
    ctx.mapped.append("MODEL -> model.path")
    for extra in positional[1:]:
        ctx.flag_unknown(extra, "extra positional argument; kept in serve.extra_args")
        out.deployment["serve"]["extra_args"].append(extra)


def _unknown(option: str, value: str | None, out: Serve, ctx: Ctx) -> None:
    args = [option if value is None else f"{option}={value}"] if "=" in option or value is None \
        else [option, value]
    if "=" in option:
        args = [option]
    out.deployment["serve"]["extra_args"] += [ctx.secrets.text(a) for a in args]
    ctx.flag_unknown(" ".join(args), "not a vllm serve option this tool knows; kept in "
                                     "serve.extra_args")


def _o_level(text: str) -> str:
    text = text.lstrip(".").lstrip("=")
    if text.startswith("level") or text.startswith("mode"):
        key, _, value = text.partition("=")
        return json.dumps({key: _scalar(value)})
    return json.dumps({"level": _scalar(text)}) if text else "{}"
