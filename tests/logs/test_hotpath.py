"""Hot lines folded by the compiled scanner have exactly the effect the Python path gives them.

Three paths on the same bytes: the full path (every line an event), the pure-Python fast path,
and the compiled fast path that folds stats, SpecDecoding and known warning lines into the
analysis. Their documents must be identical, byte for byte as JSON, on real and generated
serving logs, for any block size; and the compiled parser must read a line exactly as the
Python parser does whenever it accepts it.

The extension is required: where it is missing every test here fails, saying why, unless
SPARKTRIAGE_NO_COMPILER=1 declares a machine without a compiler (compiled_required.py)."""

from __future__ import annotations

import datetime as dt
import json
import random
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sparktriage.logs.catalog import match_message
from sparktriage.logs.clock import StampClock
from sparktriage.logs.events import LogEvent
from sparktriage.logs.gate import interesting
from sparktriage.logs.lineformat import parse_line
from sparktriage.logs.document import LogAnalyzer
from sparktriage.logs.parser import ParseOptions, _make_event
from sparktriage.logs.scan import analyze_inputs, fast_events
from sparktriage.logs.series import SpecWindow, StatsWindow, parse_spec, parse_stats
from sparktriage.logs.sources import BytesSource

import compiled_required

fastscan = compiled_required.module()  # None when missing: then every test fails (fixture below)
pytestmark = pytest.mark.usefixtures("compiled_extension")

UTC = dt.timezone.utc
FIXTURES = Path(__file__).parent.parent / "fixtures" / "logs"
STARTUP = (FIXTURES / "vllm-cpu-startup.log").read_bytes()
HEAD = STARTUP[: STARTUP.index(b"INFO:     Application startup complete.\n") + 41]
ACCESS = b'INFO:     127.0.0.1:44760 - "POST /v1/completions HTTP/1.1" 200 OK'
STATS = ("Engine 000: Avg prompt throughput: 134.4 tokens/s, Avg generation throughput: 877.3 "
         "tokens/s, Running: 32 reqs, Waiting: 0 reqs, CPU KV cache usage: 1.2%, Prefix cache hit "
         "rate: 0.0%")
SPEC = ("SpecDecoding metrics: Mean acceptance length: 3.01, Accepted throughput: 203.49 tokens/s, "
        "Drafted throughput: 299.10 tokens/s, Accepted: 2384 tokens, Drafted: 3504 tokens, "
        "Per-position acceptance rate: 0.851, 0.622, 0.541, Avg Draft acceptance rate: 68.0%")
WARNINGS = ["Model Runner V2 requires Triton; using the V1 model runner instead.",
            "min_p and logit_bias parameters won't work with speculative decoding.",
            "Falling back to Marlin FP4 MoE kernel",  # a catalog rule: never folded
            "CUDA out of memory while serving",  # fatal: an error, never folded
            "The following fields were present in the request but ignored: {'foo'}"]


def documents(blob: bytes, block_size: int = 1 << 22, year: int | None = 2026) -> list[str]:
    source = BytesSource("<log>", "n", False, data=blob)
    docs = [analyze_inputs([source], tz=UTC, year=year, fast=False, compiled_path=False),
            analyze_inputs([source], tz=UTC, year=year, block_size=block_size, compiled_path=False),
            analyze_inputs([source], tz=UTC, year=year, block_size=block_size, compiled_path=True)]
    return [json.dumps(d, allow_nan=False) for d in docs]


def folded(blob: bytes, block_size: int = 1 << 22) -> int:
    options = ParseOptions(tz=UTC, year=2026)
    analyzer = LogAnalyzer(UTC)
    analyzer.feed_all(fast_events(BytesSource("<log>", "n", False, data=blob), options,
                                  block_size, analyzer=analyzer, compiled_path=True))
    return options.stats["folded"]


def stamp(t: float) -> str:
    return dt.datetime.fromtimestamp(t, UTC).strftime("%m-%d %H:%M:%S")


def line(t: float, message: str, level: str = "INFO", prefix: str = "(APIServer pid=7) ",
         file: str = "loggers.py:335") -> str:
    return f"{prefix}{level} {stamp(t)} [{file}] {message}"


# --- one line: the compiled parser reads what the Python parser reads ---------------------------

def python_reading(text: str):
    """What the Python path makes of one line, in parse_hot's terms (None: not a hot shape)."""
    f = parse_line(text)
    if f.kind != "vllm" or f.cont or f.stamp is None or f.frac is not None:
        return None
    mo, day, hms = int(f.stamp[0:2]), int(f.stamp[3:5]), f.stamp[6:]
    when = (mo, day, int(hms[0:2]), int(hms[3:5]), int(hms[6:8]))
    event = _make_event({"t": 0.0, "t_source": "log", "node": "n", "stream": None,
                         "process": f.process, "pid": f.pid, "relay": f.relay, "level": f.level,
                         "source_file": f.source_file, "source_line": f.source_line,
                         "message": f.message, "raw": text, "line_no": 1, "origin": "o",
                         "kind": f.kind, "truncated": False})
    hits = match_message(f.message)
    if f.level == "WARNING":
        return ("warning", f.level, when, f.message)
    if [h.id for h in hits] == ["stats"]:
        w = parse_stats(hits[0], event)
        return ("stats", f.level, when, w.engine, w.prompt, w.generation, w.parts.get("running"),
                w.parts.get("waiting"), w.parts.get("kv_usage_pct"), w.parts.get("prefix_hit_pct"))
    if [h.id for h in hits] == ["spec"]:
        w = parse_spec(hits[0], event)
        v = w.values
        return ("spec", f.level, when, v["mean_acceptance_length"], v["accepted_tps"],
                v["drafted_tps"], v["accepted"], v["drafted"], w.per_position, v["acceptance_pct"])
    return "other"


def c_reading(raw: bytes):
    got = fastscan.parse_hot(raw)
    if got is None or got[0] != "stats":
        return got
    kind, level, when, engine, prompt, gen, running, waiting, kv, prefix = got
    return (kind, level, when, engine, prompt, gen, running, waiting, kv, prefix)


REAL = [line(1.79e9, STATS), line(1.79e9, SPEC), line(1.79e9, WARNINGS[0], "WARNING"),
        line(1.79e9, STATS.replace("Engine 000: ", ""), "DEBUG", prefix=""),
        line(1.79e9, STATS.replace(", Prefix cache hit rate: 0.0%", "").replace("Engine 000",
                                                                                 "Engine 7")),
        line(1.79e9, STATS.replace("Engine 000", "2 Engines Aggregated")[:0] + "2 Engines "
             "Aggregated: " + STATS[len("Engine 000: "):]),
        line(1.79e9, SPEC.replace("0.851, 0.622, 0.541", "").replace("68.0", "nan"))]
REAL += [text for p in sorted(FIXTURES.glob("*.log")) for text in p.read_text().split("\n")
         if "Avg prompt throughput" in text or "SpecDecoding" in text or " WARNING " in text]


@pytest.mark.parametrize("text", REAL[:40])
def test_real_hot_lines_read_the_same(text):
    got = c_reading(text.encode())
    assert got is not None, text
    assert got == python_reading(text), text


MUTATIONS = ["digits", "insert", "delete", "swap", "unicode", "cr", "long"]


def _mutate(text: str, r: random.Random) -> str:
    how = r.choice(MUTATIONS)
    i = r.randrange(len(text) + 1)
    if how == "digits":
        return "".join(r.choice("0123456789.") if c.isdigit() and r.random() < 0.3 else c
                       for c in text)
    if how == "insert":
        return text[:i] + r.choice([" ", ",", ".", "0", "x", ":", "]", "[", "-", "\t", "%", "9" * 20,
                                    "nan", ", "]) + text[i:]
    if how == "delete":
        return text[:i] + text[i + r.randint(1, 6):]
    if how == "swap":
        return text.replace(r.choice(["INFO", "CPU", "Engine", ", ", ": ", "tokens", " ["]),
                            r.choice(["WARNING", "GPU", "Engines", ",", ":", "token", "["]), 1)
    if how == "unicode":
        return text[:i] + r.choice(["\u0663", "\u00e9", "\x1b[0m", "\x00"]) + text[i:]
    if how == "cr":
        return text + "\r"
    return text + " " + "x" * 5000


@settings(max_examples=400, deadline=None)
@given(st.sampled_from(REAL[:7]), st.integers(0, 10**9))
def test_mutated_hot_lines_are_read_the_same_or_left_to_python(text, seed):
    r = random.Random(seed)
    for _ in range(r.randint(1, 3)):
        text = _mutate(text, r)
    got = c_reading(text.encode("utf-8", "surrogatepass"))
    if got is not None:
        assert got == python_reading(text), text
        if got[0] != "warning":  # a hot line always passes the gate (the scanner chains them)
            assert interesting(text) or "]" + " " not in text


# --- whole documents: compiled folding == pure Python == full path ----------------------------

def test_folding_happens_and_changes_nothing_on_a_serving_log():
    t, lines = 1_790_000_000.0, []
    for i in range(300):
        t += 10
        lines += [ACCESS.decode()] * 5 + [line(t, STATS), line(t, SPEC, file="metrics.py:120")]
        if i % 7 == 3:
            lines.append(line(t, WARNINGS[i % len(WARNINGS)], "WARNING", file="serving.py:9"))
    blob = HEAD + ("\n".join(lines) + "\n").encode()
    full, pure, fast = documents(blob)
    assert full == pure == fast
    doc = json.loads(fast)
    assert doc["throughput"]["generation"]["windows"] == 300
    assert folded(blob) > 600  # stats, spec and repeated plain warnings
    counts = {w["text"]: w["count"] for w in doc["warnings"]}
    assert counts[WARNINGS[0]] == sum(1 for i in range(300) if i % 7 == 3 and i % 5 == 0) + \
        HEAD.count(WARNINGS[0].encode())


def test_near_ties_and_order_sensitive_sums():
    """Peaks exceeded by a tenth, totals whose last bit depends on the order of additions."""
    t, lines = 1_790_000_000.0, []
    for i, gen in enumerate([877.3, 877.5, 877.4, 877.9, 0.1, 1e5, 0.3, 878.0, 0.0, 0.7] * 3 + [1e5 + 0.2]):
        t += 10
        spec = SPEC.replace("203.49", f"{203.49 + i / 100:.2f}").replace(
            "0.851, 0.622, 0.541", ", ".join(f"{(i * 37 + k * 11) % 1000 / 1000:.3f}"
                                             for k in range(1 + i % 4)))
        lines += [line(t, STATS.replace("877.3", f"{gen:.1f}").replace("134.4", f"{gen / 3:.1f}")),
                  line(t, spec, file="metrics.py:120")]
    blob = HEAD + ("\n".join(lines) + "\n").encode()
    full, pure, fast = documents(blob)
    assert full == pure == fast
    assert json.loads(fast)["throughput"]["generation"]["peak"] == 100000.2
    assert folded(blob) >= 59


@st.composite
def serving_logs(draw) -> bytes:
    """A real startup, then serving windows with every shape the folding must get right."""
    r = random.Random(draw(st.integers(0, 10**9)))
    t = draw(st.sampled_from([1_790_000_000.0, 1_798_761_500.0]))  # mid-year, or Dec 31 late
    out = [HEAD.decode().rstrip("\n")]
    for _ in range(draw(st.integers(1, 40))):
        t += r.choice([10, 10, 10, 20, 60, 1, 0, -5, 3600 * 24 * 200])  # gaps, ties, a straggler
        prefix = r.choice(["(APIServer pid=7) ", "", "(APIServer pid=8) ", "(Ray pid=1, ip=x) "])
        level = r.choice(["INFO", "INFO", "DEBUG"])
        gen = r.choice([0.0, 12.5, 877.3, 1e6, 3.25, r.uniform(0, 2000), r.uniform(870, 880)])
        stats = STATS.replace("877.3", f"{gen:.1f}").replace("134.4", f"{r.uniform(0, 300):.1f}")
        stats = stats.replace("Engine 000", r.choice(["Engine 000", "Engine 1"]))
        stats = stats.replace("1.2%", f"{r.uniform(0, 100):.1f}%")
        if r.random() < 0.2:
            stats = stats.replace(", Prefix cache hit rate: 0.0%", "")
        if r.random() < 0.1:
            stats = stats.replace("Waiting: 0 reqs", "Waiting: 0 reqs, Preemptions: 2")
        if r.random() < 0.1:
            stats = stats.replace("Engine 000: ", "2 Engines Aggregated: ")
        out += [ACCESS.decode()] * r.randint(0, 4)
        out.append(line(t, stats, level, prefix))
        if r.random() < 0.7:
            rates = ", ".join(f"{r.random():.3f}" for _ in range(r.randint(0, 4)))
            spec = SPEC.replace("2384", str(r.randint(0, 5000))).replace(
                "0.851, 0.622, 0.541", rates).replace("203.49", f"{r.uniform(0, 400):.2f}")
            if r.random() < 0.2:
                spec = spec.replace("0.851, 0.622, 0.541", r.choice(["", "0.000", "0.000, 0.000"]))
            if r.random() < 0.1:
                spec = spec.replace("68.0%", "nan%")
            out.append(line(t, spec, level, prefix, "metrics.py:120"))
        if r.random() < 0.4:  # warnings come in bursts (one per request)
            out += [line(t, r.choice(WARNINGS), "WARNING", prefix, "serving.py:9")
                    for _ in range(r.randint(1, 8))]
        if r.random() < 0.05:
            out.append(line(t, "Engine core proc EngineCore died unexpectedly", "ERROR"))
        if r.random() < 0.04:
            out.append(line(t, "vLLM API server version 0.11.0", prefix="(APIServer pid=9) ",
                            file="api_server.py:1"))
        if r.random() < 0.05:
            out.append(line(t, "first line of a record\r", "WARNING"))
        if r.random() < 0.05:
            out.append(r.choice(["", "Traceback (most recent call last):", "  File \"x.py\"",
                                 "ValueError: boom", "\x1b[0;36m(APIServer pid=7)\x1b[0m INFO x"]))
    if r.random() < 0.3:
        out.append(line(t + 5, STATS)[: r.randint(0, 200)])  # a cut last line
    text = "\n".join(out)
    if r.random() < 0.15:
        text = text.replace("\n", "\r\n")
    return text.encode()


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(serving_logs(), st.sampled_from([97, 1000, 1 << 16, 1 << 22]))
def test_generated_serving_logs_give_one_document_on_every_path(blob, block_size):
    full, pure, fast = documents(blob, block_size)
    assert full == pure == fast


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from([line(1.79e9, STATS), line(1.79e9, SPEC), ACCESS.decode(),
                                 line(1.79e9, WARNINGS[0], "WARNING")]), max_size=30),
       st.binary(max_size=200), st.sampled_from([64, 4096]))
def test_junk_between_hot_lines(lines, junk, block_size):
    blob = HEAD + ("\n".join(lines)).encode() + junk + ("\n".join(lines)).encode()
    full, pure, fast = documents(blob, block_size, year=None)
    assert full == pure == fast


# --- the C state on its own: any bytes, no crash ------------------------------------------------

def lent_state(crlf: bool = False):
    st_ = fastscan.HotState()
    st_.node, st_.crlf = "n", int(crlf)
    st_.hour_base = StampClock(0.0, UTC, 2026).hour_base
    st_.stats_cls, st_.spec_cls = StatsWindow, SpecWindow
    st_.diffs, st_.diffs_len = Counter(), 0
    st_.stats_windows, st_.stats_keep, st_.spec_windows, st_.spec_keep = [], 5, [], 5
    st_.year, st_.clock_last = 2026, float("nan")
    st_.set_engines([])
    st_.set_per_pos([])
    st_.register_warning(WARNINGS[0], {"count": 1})
    st_.loaded = 1
    return st_


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(st.sampled_from(REAL[:7]).map(str.encode), st.binary(max_size=64),
                          st.just(b"\n")), max_size=40).map(b"\n".join), st.booleans())
def test_folding_any_bytes_never_crashes(blob, crlf):
    from sparktriage.logs.compiled import scanner
    state = lent_state(crlf)
    pos, lines = 0, 1
    while pos < len(blob):
        cand, fed, n_fed, n_cand, hot = scanner().next(blob, pos, len(blob), lines, state)
        assert pos <= fed <= len(blob) and (cand == -1 or fed <= cand < len(blob))
        lines += n_fed + n_cand
        if cand < 0:
            break
        end = blob.find(b"\n", cand)
        pos, lines = (len(blob) if end < 0 else end + 1), lines + 1
    assert state.events == len(state.stats_windows) + len(state.spec_windows) + state.n_warning \
        or len(state.stats_windows) == 5 or len(state.spec_windows) == 5
    assert all(isinstance(w, StatsWindow) for w in state.stats_windows)
    assert isinstance(LogEvent, type)
