"""The fast path reads fewer lines but must give the same `logs` document as the full path."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pytest

from sparktriage.logs import compiled
from sparktriage.logs.catalog import match_message
from sparktriage.logs.gate import candidate_starts, interesting
from sparktriage.logs.parser import parse_files
from sparktriage.logs.scan import analyze_inputs
from sparktriage.logs.sources import BytesSource

import compiled_required
from vllm_synth import PROFILES, render

FIXTURES = Path(__file__).parent.parent / "fixtures" / "logs"
UTC = dt.timezone.utc
PLAIN = sorted(FIXTURES.glob("*.log"))
RECORDED = sorted((FIXTURES / "recorded").glob("*.lines.jsonl"))


def _as_text(path: Path) -> bytes:
    """A recorded run as the plain log a user would have (stdout and stderr interleaved)."""
    return "".join(json.loads(line)["line"] + "\n" for line in path.open()).encode()


def _same(blob: bytes, block_size: int) -> None:
    """The full path, the pure-Python fast path and the compiled one (when built) agree."""
    source = BytesSource("<log>", "n", False, data=blob)
    full = json.dumps(analyze_inputs([source], tz=UTC, year=2026, fast=False, compiled_path=False))
    pure = analyze_inputs([source], tz=UTC, year=2026, block_size=block_size, compiled_path=False)
    assert json.dumps(pure) == full
    if compiled.scanner() is not None:
        fast = analyze_inputs([source], tz=UTC, year=2026, block_size=block_size, compiled_path=True)
        assert json.dumps(fast) == full


CASES = [p.read_bytes() for p in PLAIN] + [_as_text(p) for p in RECORDED] + [
    "\n".join(render(name)[0]).encode() for name in sorted(PROFILES)]


@pytest.mark.parametrize("index", range(len(CASES)))
@pytest.mark.parametrize("block_size", [97, 4096, 1 << 22])
def test_fast_path_gives_the_full_document(index, block_size):
    _same(CASES[index], block_size)


def test_restarts_serving_and_giant_lines_across_blocks():
    serving = (FIXTURES / "vllm-cpu-startup.log").read_bytes()
    failing = (FIXTURES / "vllm-cpu-default-kv-failure.log").read_bytes()
    giant = b"(APIServer pid=1) WARNING 11-29 21:00:00 [x.py:1] " + b"y" * 1_500_000 + b" ERROR\n"
    blob = serving + failing + giant + serving + b"no newline at the end"
    for block_size in (333, 65536, 1 << 22):
        _same(blob, block_size)


def test_every_rule_hit_while_serving_passes_the_gate():
    """A message the catalog knows must not be lost by the fast path's gate."""
    serving_rules = {"stats", "spec", "fail.died", "fail.engine_dead", "version.banner",
                     "version.logo", "args", "fail.c10d", "fail.shm"}
    seen = set()
    lines = [line for name in sorted(PROFILES) for line in render(name)[0]]
    events = parse_files(PLAIN + RECORDED)
    for text, message in [(e.raw, e.message) for e in events] + [(x, x) for x in lines]:
        for hit in match_message(message):
            if hit.id in serving_rules:
                seen.add(hit.id)
                assert interesting(text), (hit.id, text[:200])
    assert {"stats", "spec", "fail.died", "version.banner", "version.logo", "args"} <= seen


def test_candidate_starts_on_bytes_matches_the_text_gate():
    blob = b"".join(CASES)
    starts = set(candidate_starts(blob))
    offset = 0
    for line in blob.split(b"\n"):
        text = line.decode("utf-8", errors="replace")
        assert (offset in starts) == interesting(text), text[:200]
        offset += len(line) + 1


def test_several_nodes_give_the_same_document_both_ways(tmp_path):
    a, b = tmp_path / "head.log", tmp_path / "worker.log"
    a.write_bytes(CASES[PLAIN.index(FIXTURES / "vllm-cpu-startup.log")])
    b.write_bytes("\n".join(render("0.27-ray-multinode")[0]).encode())
    specs = [f"head={a}", f"worker={b}"]
    full = analyze_inputs(specs, tz=UTC, year=2026, fast=False)
    fast = analyze_inputs(specs, tz=UTC, year=2026)
    pure = analyze_inputs(specs, tz=UTC, year=2026, compiled_path=False)
    assert json.dumps(fast) == json.dumps(full) == json.dumps(pure)
    assert set(fast["nodes"]) == {"head", "worker"}


@pytest.mark.parametrize("index", [PLAIN.index(FIXTURES / "vllm-cpu-startup.log"),
                                   PLAIN.index(FIXTURES / "vllm-cpu-default-kv-failure.log")])
def test_a_windows_crlf_copy_reads_like_the_original(index):
    original = CASES[index]
    crlf = original.replace(b"\n", b"\r\n")
    for block_size in (211, 1 << 22):
        _same(crlf, block_size)
    a = analyze_inputs([BytesSource("a", "n", False, data=original)], tz=UTC, year=2026)
    b = analyze_inputs([BytesSource("a", "n", False, data=crlf)], tz=UTC, year=2026)
    for key in ("phases", "reported", "throughput", "startup", "errors", "warnings"):
        assert a[key] == b[key], key


def test_the_compiled_scanner_is_built_where_a_compiler_is():
    """CI must exercise the compiled path: a failed build would silently fall back to Python."""
    compiled_required.require()  # fails when missing, unless SPARKTRIAGE_NO_COMPILER=1 (skips)
    assert compiled.scanner() is not None, "run: bash provision/setup.sh (rebuilds the extension)"
    assert compiled.scanner().kernel in ("avx2", "vector")

