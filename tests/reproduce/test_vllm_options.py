"""vLLM's own option rules: the generated table (data/vllm_options.json) and the serve argv read
with it (multi-value options, values vLLM accepts or refuses, options of other releases)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sparktriage.errors import InputError
from sparktriage.reproduce import vllm_options as V

from reproduce_helpers import gb10_lab, run

COLLECT_ENV = """Collecting environment information...
==============================
        System Info
==============================
OS                           : Ubuntu 24.04.3 LTS (aarch64)
==============================
       PyTorch Info
==============================
PyTorch version              : 2.8.0+cu129
==============================
         vLLM Info
==============================
vLLM Version                 : {version}
"""


def _serve(tmp: Path, line: str, name: str = "serve.sh") -> Path:
    path = tmp / name
    path.write_text("#!/bin/bash\n" + line + "\n")
    return path


def _node_argv(result) -> list[list[str]]:
    return [list(n.argv) for n in result.plan.nodes]


def _after(argv: list[str], option: str, count: int) -> list[str]:
    at = argv.index(option)
    return argv[at + 1:at + 1 + count]


def _values(argv: list[str], option: str) -> list[str]:
    """The words after `option` up to the next option (what argparse gives an nargs-+ one)."""
    at = argv.index(option) + 1
    end = next((i for i in range(at, len(argv)) if argv[i].startswith("--")), len(argv))
    return argv[at:end]


# --- the table ------------------------------------------------------------------------------

def test_the_table_covers_every_release_from_0_10_to_0_32_each_read_from_its_parser() -> None:
    doc = json.loads(Path(V.__file__).with_name("data").joinpath("vllm_options.json").read_text())
    releases = [r["version"] for r in doc["releases"]]
    assert releases[0] == "0.10.0" and releases[-1] == "0.32.0"
    minors = {tuple(r.split(".")[:2]) for r in releases}
    assert minors == {("0", str(m)) for m in range(10, 33)}
    assert [r["version"] for r in doc["releases"] if r["how"] != "parser"] == []
    assert "scripts/vllm_options.py" in doc["generated_by"]


def test_arity_and_types_as_the_releases_have_them() -> None:
    sizes = V.spec("cudagraph-capture-sizes", "0.32.0")
    assert (sizes.nargs, sizes.type, sizes.many) == ("+", "int", True)
    length = V.spec("max-model-len", "0.32.0")
    assert length.type == "human_readable_int_or_auto"
    assert {"auto", "-1", "32k", "1K"} <= set(length.accepts)
    # 0.10.0 read `--max-model-len` with the human-readable int, which has no `auto`
    old = V.spec("max-model-len", "0.10.0")
    assert old.type == "human_readable_int" and "auto" not in old.accepts
    assert V.convert(old, "auto") is not None and V.convert(length, "auto") is None
    eager = V.spec("enforce-eager", "0.32.0")
    assert eager.flag and "no-enforce-eager" in eager.strings
    assert V.name_of("-tp") == "tensor-parallel-size"
    assert V.name_of("no-enforce-eager") == "enforce-eager"
    dtype = V.spec("kv-cache-dtype", "0.32.0")
    assert "fp8" in dtype.choices and V.convert(dtype, "fp9").startswith("one of ")


def test_the_rewritten_converters_answer_every_probe_as_each_release_did() -> None:
    """The probes' answers were given by each release's own converter; the rules rewritten here
    (used for any text no probe tried) must give the same answer for every one of them."""
    disagree = []
    for name, specs in V.table().options.items():
        for spec in specs:
            if spec.accepts is None or spec.type in (None, "str"):
                continue
            for probe in V.table().probes:
                recorded = probe in spec.accepts
                ours = V.by_rule(spec, probe) is None
                if recorded != ours and spec.type in ("int", "float", "human_readable_int",
                                                      "human_readable_int_or_auto", "json"):
                    disagree.append((name, spec.releases[0], spec.type, probe, recorded))
    assert disagree == []


def test_release_of_version_texts() -> None:
    assert V.release_of("0.11.1rc2.dev160+g4d0f0e0e5") == "0.11.0"  # before 0.11.1
    assert V.release_of("0.16.0+cpu") == "0.16.0"
    assert V.release_of("v0.20.2") == "0.20.2"
    assert V.release_of("0.20.3") == "0.20.2"  # the newest covered not after it
    assert V.release_of("no version") is None


# --- the serve argv read with it -------------------------------------------------------------

def test_multi_value_option_keeps_all_values_and_auto_is_accepted(tmp_path: Path) -> None:
    src = _serve(tmp_path, "vllm serve /models/m --cudagraph-capture-sizes 1 2 4 8 "
                           "--max-model-len auto --pipeline_parallel_size 2 -tp=1 "
                           "--max-num-batched-tokens 8k --kv-cache-dtype=fp8")
    result = run([src], tmp_path, gb10_lab(tmp_path, 2))
    assert [u.text for u in result.unknown if "cudagraph" in u.text or "auto" in u.text] == []
    for argv in _node_argv(result):
        assert _values(argv, "--cudagraph-capture-sizes") == ["1", "2", "4", "8"]
        assert _after(argv, "--max-model-len", 1) == ["auto"]
        assert _after(argv, "--max-num-batched-tokens", 1) == ["8000"]
        assert _after(argv, "--pipeline-parallel-size", 1) == ["2"]
        assert _after(argv, "--kv-cache-dtype", 1) == ["fp8"]
    assert any("8k: 8000 as vLLM reads it" in m for m in result.mapped)


def test_config_file_auto_and_a_list_value(tmp_path: Path) -> None:
    (tmp_path / "cfg.yaml").write_text("max_model_len: auto\ncudagraph_capture_sizes: [1, 2, 4]\n"
                                       "enforce_eager: false\n")
    src = _serve(tmp_path, "vllm serve /models/m --config cfg.yaml")
    result = run([src], tmp_path)
    argv = _node_argv(result)[0]
    assert _after(argv, "--max-model-len", 1) == ["auto"]
    assert _values(argv, "--cudagraph-capture-sizes") == ["1", "2", "4"]
    assert [u.text for u in result.unknown] == []


@pytest.mark.parametrize(("line", "message"), [
    ("--kv-cache-dtype fp9", "--kv-cache-dtype 'fp9': vLLM 0.32.0 (the newest covered release; "
     "the client's vLLM version is not known) accepts one of auto, "),
    ("--max-num-seqs many", "--max-num-seqs 'many': vLLM 0.32.0 (the newest covered release; "
     "the client's vLLM version is not known) accepts an integer"),
    ("--cudagraph-capture-sizes 1 two", "--cudagraph-capture-sizes 'two': vLLM 0.32.0"),
    ("--max-model-len 1.5K", "--max-model-len '1.5K': vLLM 0.32.0 (the newest covered release; "
     "the client's vLLM version is not known) accepts an integer (k/m/g/t or K/M/G/T suffix "
     "allowed), -1 or auto"),
    ("--served-model-name -m", "--served-model-name takes at least one value in vLLM 0.32.0"),
])
def test_values_vllm_refuses_are_refused_on_one_line(tmp_path: Path, line: str,
                                                      message: str) -> None:
    src = _serve(tmp_path, f"vllm serve /models/m {line}")
    with pytest.raises(InputError) as caught:
        run([src], tmp_path)
    text = caught.value.one_line()
    assert "\n" not in text and message in text, text


def test_the_clients_release_from_collect_env_decides(tmp_path: Path) -> None:
    """0.10.0 read --max-model-len without `auto`; a client on 0.10.0 could not have run it,
    and an option its release does not have is a row naming the releases that do."""
    env = tmp_path / "collect-env.txt"
    env.write_text(COLLECT_ENV.format(version="0.10.0"))
    src = _serve(tmp_path, "vllm serve /models/m --max-model-len auto")
    with pytest.raises(InputError) as caught:
        run([src, env], tmp_path)
    assert "vLLM 0.10.0 (vLLM 0.10.0 in collect-env.txt) accepts an integer" in \
        caught.value.one_line()
    assert caught.value.one_line().endswith("; vLLM 0.14.0..0.32.0 accept it")  # named
    newer = V.releases_with("cudagraph-capture-sizes")[0].split("..")[0]
    assert newer != "0.10.0"
    src = _serve(tmp_path, "vllm serve /models/m --cudagraph-capture-sizes 1 2 --port 8001")
    result = run([src, env], tmp_path)
    rows = [u for u in result.unknown if u.text == "--cudagraph-capture-sizes 1 2"]
    assert len(rows) == 1 and rows[0].note.startswith("not an option of vLLM 0.10.0 (vLLM "
                                                      "0.10.0 in collect-env.txt)")
    assert _values(_node_argv(result)[0], "--cudagraph-capture-sizes") == ["1", "2"]


def test_the_image_tag_names_the_release(tmp_path: Path) -> None:
    src = _serve(tmp_path, "docker run --gpus all vllm/vllm-openai:v0.10.0 "
                           "/models/m --max-model-len auto")
    with pytest.raises(InputError) as caught:
        run([src], tmp_path)
    assert "vLLM 0.10.0 (the image vllm/vllm-openai:v0.10.0)" in caught.value.one_line()
    # another image's own numbering is not a vLLM release
    src = _serve(tmp_path, "docker run --gpus all nvcr.io/nvidia/vllm:25.09-py3 "
                           "vllm serve /models/m --max-model-len auto")
    assert _after(_node_argv(run([src], tmp_path, out="ngc"))[0], "--max-model-len", 1) == \
        ["auto"]


# --- against the installed vLLM 0.32 (real parts) -------------------------------------------

ROOT = Path(__file__).resolve().parents[2]
# argv tails the real parser and this reader must judge alike: accepted with these values, or
# refused
REAL_CASES = [
    ["--cudagraph-capture-sizes", "1", "2", "4", "8", "--max-model-len", "auto"],
    ["--max-model-len", "32k", "--max-num-batched-tokens", "2K", "-tp", "2"],
    ["--pipeline_parallel_size", "2", "--enforce-eager", "--kv-cache-dtype=fp8"],
    ["--kv-cache-dtype", "fp9"], ["--max-num-seqs", "many"], ["--max-model-len", "1.5K"],
    ["--served-model-name", "-m"], ["--cudagraph-capture-sizes"], ["--dtype", "half"],
]
_REAL = """
import json, sys
sys.argv = ["vllm", "serve"]
sys.path.insert(0, SCRIPTS)
import vllm_options as generator
from vllm.utils.argparse_utils import FlexibleArgumentParser
from vllm.entrypoints.cli.serve import ServeSubcommand
top = FlexibleArgumentParser(prog="vllm")
parser = ServeSubcommand().subparser_init(top.add_subparsers())
parser.exit_on_error = False
out = []
for tail in json.loads(sys.stdin.read()):
    try:
        ns = parser.parse_args(["/models/m", *tail])
    except (SystemExit, Exception):
        out.append(None)
        continue
    out.append({k: getattr(ns, k) for k in ("cudagraph_capture_sizes", "max_model_len",
                                            "max_num_batched_tokens", "tensor_parallel_size",
                                            "pipeline_parallel_size", "kv_cache_dtype")})
print(json.dumps({"options": generator._describe(parser), "cases": out}))
"""


@pytest.fixture(scope="module")
def real() -> dict:
    """The installed vLLM 0.32's serve parser: its options as the generator describes a built
    parser, and its verdict on REAL_CASES (one interpreter start for both tests)."""
    import subprocess
    from sparktriage.testbed.paths import locate
    python = locate().python
    if not python.exists():
        pytest.skip(f"no vLLM CPU build at {python}")
    code = _REAL.replace("SCRIPTS", repr(str(ROOT / "scripts")))
    return json.loads(subprocess.run([python, "-c", code], input=json.dumps(REAL_CASES),
                                     capture_output=True, text=True, timeout=600,
                                     check=True).stdout)


@pytest.mark.vllm
def test_the_table_for_0_32_is_the_installed_parser(real: dict) -> None:
    """Every option of the installed vLLM 0.32's `vllm serve` parser equals the committed
    table's 0.32.0 entry: option strings, nargs, action, converter, choices, probe answers."""
    live = real["options"]
    assert len(live) > 250
    differ = []
    for long, option in live.items():
        spec = V.spec(long.lstrip("-"), "0.32.0")
        if spec is None:
            differ.append((long, "missing from the table"))
            continue
        ours = {"options": [("--" + s) if not s.startswith("-") else s for s in spec.strings],
                "nargs": spec.nargs, "action": spec.action, "type": spec.type,
                "choices": list(spec.choices) if spec.choices is not None else None,
                "accepts": list(spec.accepts) if spec.accepts is not None else None}
        theirs = {k: option.get(k) for k in ours}
        if ours != theirs:
            differ.append((long, ours, theirs))
    extra = [n for n, specs in V.table().options.items()
             if V.spec(n, "0.32.0") is not None and "--" + n not in live]
    assert differ == [] and extra == []


@pytest.mark.vllm
def test_the_real_parser_and_this_reader_judge_alike(real: dict) -> None:
    from sparktriage.reproduce.importers.common import Ctx
    from sparktriage.reproduce.importers.serve_args import parse_serve
    from sparktriage.reproduce.model import InputRef
    from sparktriage.reproduce.secrets import Placeholders
    for tail, theirs in zip(REAL_CASES, real["cases"], strict=True):
        ctx = Ctx(InputRef(path="serve.sh", kind="serve"), Placeholders())
        try:
            serve = parse_serve(["vllm", "serve"], "serve", ["/models/m", *tail], ctx)
        except InputError:
            assert theirs is None, tail
            continue
        assert theirs is not None, tail
        dep = serve.deployment
        extra = dep["serve"]["extra_args"]
        if theirs["cudagraph_capture_sizes"] is not None:
            at = extra.index("--cudagraph-capture-sizes")
            assert [int(v) for v in extra[at + 1:at + 5]] == theirs["cudagraph_capture_sizes"]
        length = dep["serve"].get("max_model_len") or dep["serve"]["flags"].get("max-model-len")
        if theirs["max_model_len"] == -1:
            assert length == "auto"
        elif theirs["max_model_len"] is not None:
            assert length == theirs["max_model_len"]
        if dep["serve"].get("max_num_batched_tokens") is not None:
            assert dep["serve"]["max_num_batched_tokens"] == theirs["max_num_batched_tokens"]
        assert dep["parallelism"].get("tp", 1) == theirs["tensor_parallel_size"]
        assert dep["parallelism"].get("pp", 1) == theirs["pipeline_parallel_size"]
        assert dep["serve"].get("kv_cache_dtype", "auto") == theirs["kv_cache_dtype"]


def test_a_recipe_with_auto_and_a_list(tmp_path: Path) -> None:
    recipe = tmp_path / "recipe.yaml"
    recipe.write_text("model: org/m\nargs:\n  max_model_len: auto\n"
                      "  cudagraph_capture_sizes: [1, 2, 4, 8]\n  tensor_parallel_size: 2\n")
    result = run([recipe], tmp_path, gb10_lab(tmp_path, 2))
    for argv in _node_argv(result):  # the serve command (the Ray worker runs `ray start`)
        assert _values(argv, "--max-model-len") == ["auto"]
        assert _values(argv, "--cudagraph-capture-sizes") == ["1", "2", "4", "8"]
    assert [u.text for u in result.unknown if "auto" in u.text or "cudagraph" in u.text] == []
