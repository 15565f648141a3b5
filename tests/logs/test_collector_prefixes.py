"""Collector prefixes (issue 36 item 5) and vLLM 0.6-0.8 lines without brackets (item 6)."""

from __future__ import annotations

import datetime as dt
import re
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from sparktriage.logs.collectors import peel
from sparktriage.logs.document import analyze
from sparktriage.logs.lineformat import has_time, parse_line
from sparktriage.logs.parser import parse_lines
from sparktriage.logs.sources import BytesSource
from sparktriage.logs.scan import analyze_inputs

from test_scan import _same

UTC = dt.timezone.utc
FIXTURES = Path(__file__).parent.parent / "fixtures" / "logs"
LATER = dt.datetime(2030, 6, 1, tzinfo=UTC).timestamp()  # a file modified years after the run


def unix(text: str) -> float:
    return dt.datetime.fromisoformat(text).timestamp()


# --- one line at a time ---------------------------------------------------------------------
def test_github_actions_runner_prefix_is_peeled_and_kept():
    f = parse_line("2025-03-04T12:34:56.1234567Z INFO 03-04 12:34:56 [core.py:61] Initializing a "
                   "V1 LLM engine (v0.8.5) with config: model='m'")
    assert (f.collector, f.collector_full, f.collector_frac, f.collector_offset) == (
        "rfc3339", "2025-03-04 12:34:56", "1234567", "Z")
    assert (f.kind, f.level, f.stamp, f.source_file) == ("vllm", "INFO", "03-04 12:34:56", "core.py")
    assert f.message.startswith("Initializing a V1 LLM engine")


def test_journald_forms():
    f = parse_line("Mar 04 12:34:56 spark-01 vllm[4242]: (APIServer pid=7) INFO 03-04 12:34:56 "
                   "[api_server.py:1] hello")
    assert (f.collector, f.collector_stamp, f.process, f.pid, f.message) == (
        "journald", "03-04 12:34:56", "APIServer", 7, "hello")
    f = parse_line("Mar  4 12:34:56.123456 spark-01 python3[9]: Traceback (most recent call last):")
    assert (f.collector, f.collector_stamp, f.collector_frac) == ("journald", "03-04 12:34:56", "123456")
    assert f.message == "Traceback (most recent call last):" and has_time(f)
    f = parse_line("2025-03-04T12:34:56.123456+01:00 spark-01 vllm[1]: WARNING 03-04 12:34:56 "
                   "[x.py:2] careful")
    assert (f.collector, f.collector_offset, f.level, f.message) == ("syslog", "+01:00", "WARNING", "careful")


def test_kubernetes_cri_gitlab_kubectl_and_compose():
    f = parse_line("2025-03-04T12:34:56.123456789Z stderr F Loading safetensors checkpoint shards: "
                   " 50% Completed | 1/2 [00:01<00:01,  1.00s/it]")
    assert (f.collector, f.stream, f.kind) == ("cri", "stderr", "tqdm")
    f = parse_line("2025-03-04T12:34:56.123456Z 00O INFO 03-04 12:34:56 [x.py:1] hi")
    assert (f.collector, f.stream, f.message) == ("gitlab", "stdout", "hi")
    f = parse_line("2025-03-04T12:34:56.987654321-05:00 ERROR 03-04 12:34:56 [x.py:1] bad")
    assert (f.collector_offset, f.level) == ("-05:00", "ERROR")
    f = parse_line("vllm-head-1  | 2025-03-04T12:34:56.5Z INFO 03-04 12:34:56 [x.py:1] hi")
    assert (f.collector, f.collector_full, f.message) == ("rfc3339", "2025-03-04 12:34:56", "hi")
    f = parse_line("vllm-1  | ValueError: Free memory on device (31.44/47.38 GiB) on startup")
    assert (f.collector, f.message[:11]) == ("compose", "ValueError:")


def test_ci_step_stamp_buildkite_column_and_ansi_remnants():
    f = parse_line("[2026-02-24T20:21:58Z] (EngineCore_DP0 pid=6940) ValueError: Free memory on device")
    assert (f.collector, f.collector_full, f.process, f.message[:11]) == (
        "rfc3339", "2026-02-24 20:21:58", "EngineCore_DP0", "ValueError:")
    f = parse_line("  | [rank0]:[E ProcessGroupNCCL.cpp:563] [Rank 0] Watchdog caught collective")
    assert (f.collector, f.rank, f.kind, f.level, f.source_file) == (
        "column", 0, "glog", "ERROR", "ProcessGroupNCCL.cpp")
    f = parse_line("  | ERROR 07-01 13:54:43 multiproc_worker_utils.py:120] Worker VllmWorkerProcess "
                   "pid 1159 died, exit code: -6")
    assert (f.level, f.stamp, f.message[-8:]) == ("ERROR", "07-01 13:54:43", "code: -6")
    f = parse_line(" [36m(RayWorkerVllm pid=5310) [0m [W CUDAGraph.cpp:145] Warning: Waiting "
                   "(function operator()) [32m [repeated 6x across cluster] [0m")
    assert (f.relay, f.level, f.message) == ("RayWorkerVllm pid=5310", "WARNING",
                                             "Warning: Waiting (function operator())")
    f = parse_line("  indented traceback source line stays as it is")
    assert f.collector is None and f.message == "  indented traceback source line stays as it is"


def test_kubectl_prefix_journald_unix_stamps_and_a_mangled_file_tag():
    f = parse_line("[pod/vllm-0/vllm] 2025-03-04T12:00:00.5Z INFO 03-04 12:00:00 [x.py:1] hi")
    assert (f.collector, f.collector_full, f.collector_frac, f.message) == (
        "rfc3339", "2025-03-04 12:00:00", "5", "hi")
    assert parse_line("[pod/vllm-0/vllm] Traceback (most recent call last):").collector == "kubectl"
    f = parse_line("1709555696.123456 spark-01 vllm[12]: Segmentation fault (core dumped)")
    assert (f.collector_full, f.collector_offset, f.message) == (
        "2024-03-04 12:34:56", "Z", "Segmentation fault (core dumped)")
    assert parse_line("1709555696.123456 is a number").collector is None
    f = parse_line("(APIServer pid=1) ERROR 10-20 03:20:50 [async_llm.py:485[] vllm.v1.engine."
                   "exceptions.EngineDeadError: EngineCore encountered an issue.")
    assert (f.level, f.source_file, f.source_line) == ("ERROR", "async_llm.py", 485)


def test_rank_ray_and_ansi_prefixes():
    f = parse_line("[rank0]: Traceback (most recent call last):")
    assert (f.rank, f.message) == (0, "Traceback (most recent call last):")
    f = parse_line("[rank1]:[W304 12:34:56.123456 ProcessGroupNCCL.cpp:1] Watchdog caught collective")
    assert (f.rank, f.kind, f.level, f.stamp) == (1, "glog", "WARNING", "03-04 12:34:56")
    f = parse_line("\x1b[36m(RayWorkerWrapper pid=263, ip=10.0.16.95)\x1b[0m INFO 03-04 12:34:56 "
                   "[x.py:1] Loading weights took 10.00 seconds [repeated 3x across cluster]")
    assert (f.relay, f.message) == ("RayWorkerWrapper pid=263, ip=10.0.16.95",
                                    "Loading weights took 10.00 seconds")
    f = parse_line("(pid=776, ip=10.0.0.2) ERROR 03-04 12:34:56 [x.py:1] boom")
    assert (f.relay, f.level) == ("pid=776, ip=10.0.0.2", "ERROR")


def test_a_launchers_stamp_level_and_component_are_peeled_and_time_its_own_lines():
    # lemonade's WrappedServer (lemonade-sdk/vllm-rocm issue 5): its stamp, level tag and
    # component in front of vLLM's lines and in front of its own health polls
    f = parse_line("2026-06-09 13:59:48.601 [Info] (Process) (EngineCore pid=42521) INFO 06-09 "
                   "13:59:48 [default_loader.py:384] Loading weights took 6.65 seconds")
    assert (f.collector, f.collector_full, f.collector_frac) == ("dated", "2026-06-09 13:59:48", "601")
    assert (f.kind, f.stamp, f.message) == ("vllm", "06-09 13:59:48", "Loading weights took 6.65 seconds")
    poll = parse_line("2026-06-09 13:59:58.470 [Debug] (WrappedServer) Still waiting for vllm-server...")
    assert (poll.collector, poll.collector_full) == ("dated", "2026-06-09 13:59:58")
    assert poll.message == "Still waiting for vllm-server..." and has_time(poll)
    # a date followed by ordinary bracketed text is not a launcher's level tag
    assert parse_line("2026-06-09 13:59:58 [note] nothing to see").collector is None


def test_ordinary_text_is_not_taken_for_a_prefix():
    for text in ("Loading safetensors checkpoint shards: 100% Completed | 2/2 [00:01<00:00]",
                 "Mar 04 is the date", "[rankless]: text", "a | b",
                 "2026-03-08 16:44:29,692 - INFO - autotuner.py:262 - flashinfer.jit: x"):
        f = parse_line(text)
        assert f.collector is None, text
    assert parse_line("2026-03-08 16:44:29,692 - INFO - autotuner.py:262 - x").kind == "pylog"


def test_old_bracketless_format_is_read():
    f = parse_line("INFO 03-04 12:34:56 llm_engine.py:234] Initializing an LLM engine (v0.6.3) "
                   "with config: model='m'")
    assert (f.kind, f.level, f.source_file, f.source_line, f.stamp) == (
        "vllm", "INFO", "llm_engine.py", 234, "03-04 12:34:56")
    f = parse_line("(VllmWorkerProcess pid=88) WARNING 03-04 12:34:57 custom_all_reduce.py:143] "
                   "Custom allreduce is disabled")
    assert (f.process, f.pid, f.level, f.source_file) == ("VllmWorkerProcess", 88, "WARNING",
                                                          "custom_all_reduce.py")


# --- time -------------------------------------------------------------------------------------
def test_the_runner_prefix_gives_the_year_and_the_zone():
    lines = ["2025-03-04T12:34:56.1234567Z INFO 03-04 14:34:56 [x.py:1] vLLM API server version 0.8.5",
             "2025-03-04T12:34:58.0000000Z Traceback (most recent call last):",
             '2025-03-04T12:34:58.1000000Z   File "x.py", line 1, in <module>',
             "2025-03-04T12:34:58.2000000Z RuntimeError: boom"]
    events = parse_lines(lines, reference=LATER)  # without the prefix: 2030 (the file's year)
    assert events[0].t == unix("2025-03-04T12:34:56+00:00")  # 14:34:56 local = +02:00
    assert events[0].t_source == "log" and events[0].collector == "rfc3339"
    assert events[1].kind == "traceback" and events[1].t == unix("2025-03-04T12:34:58+00:00")
    assert events[1].t_source == "receive"
    # a zone given by the user is kept; only the year comes from the prefix
    events = parse_lines(lines, reference=LATER, tz=UTC)
    assert events[0].t == unix("2025-03-04T14:34:56+00:00")


def test_a_new_year_between_runner_and_server_picks_the_nearest_year():
    events = parse_lines(["2026-01-01T00:00:01Z INFO 12-31 23:59:59 [x.py:1] late"], reference=LATER,
                         tz=UTC)
    assert events[0].t == unix("2025-12-31T23:59:59+00:00")


def test_journald_lines_without_a_vllm_stamp_use_the_journal_time():
    lines = ["Mar 04 12:34:56 spark-01 vllm[1]: INFO 03-04 12:34:56 [x.py:1] hello",
             "Mar 04 12:35:10 spark-01 vllm[1]: Segmentation fault (core dumped)"]
    events = parse_lines(lines, reference=unix("2025-06-01T00:00:00+00:00"), tz=UTC)
    assert [e.t for e in events] == [unix("2025-03-04T12:34:56+00:00"),
                                     unix("2025-03-04T12:35:10+00:00")]
    assert [e.t_source for e in events] == ["log", "receive"]


# --- whole logs: every path agrees ----------------------------------------------------------
def _prefixed(blob: bytes, prefix) -> bytes:
    return b"\n".join(prefix(i).encode() + line for i, line in enumerate(blob.split(b"\n")))


def test_prefixed_fixture_logs_read_the_same_on_every_path():
    base = (FIXTURES / "vllm-cpu-startup.log").read_bytes()
    runner = _prefixed(base, lambda i: f"2026-11-29T20:{53 + i // 3000:02d}:{(i // 50) % 60:02d}."
                                       f"{i % 1000:03d}0000Z ")
    journal = _prefixed(base, lambda i: f"Nov 29 20:53:{(i // 50) % 60:02d} spark-01 vllm[7]: ")
    ranked = _prefixed(base, lambda i: "[rank0]: ")
    for blob in (runner, journal, ranked):
        for block_size in (97, 4096, 1 << 22):
            _same(blob, block_size)


def test_prefixed_log_gives_the_same_phases_and_errors_as_the_plain_one():
    base = (FIXTURES / "vllm-cpu-default-kv-failure.log").read_bytes()
    runner = _prefixed(base, lambda i: "2026-11-29T21:22:48.0000000Z ")
    plain = analyze_inputs([BytesSource("<p>", "n", False, data=base)], tz=UTC, year=2026)
    ci = analyze_inputs([BytesSource("<c>", "n", False, data=runner)], tz=UTC)
    assert [p["name"] for p in ci["phases"]] == [p["name"] for p in plain["phases"]]
    assert ci["errors_total"] == plain["errors_total"] and ci["startup"]["failed"]
    assert ci["time_basis"]["first"].startswith("2026-11-29")


def _debracket(blob: bytes) -> bytes:
    return re.sub(rb"\[([\w./-]+\.py:\d+)\]", rb"\1]", blob)


def test_old_format_log_is_read_as_far_as_it_goes_on_every_path():
    base = (FIXTURES / "vllm-cpu-startup.log").read_bytes()
    old = _debracket(base)
    assert b"[api_utils.py:" in base and b"[api_utils.py:" not in old and b" api_utils.py:347]" in old
    for block_size in (97, 1 << 22):
        _same(old, block_size)
    new = analyze_inputs([BytesSource("<n>", "n", False, data=base)], tz=UTC, year=2026)
    doc = analyze_inputs([BytesSource("<o>", "n", False, data=old)], tz=UTC, year=2026)
    assert [p["name"] for p in doc["phases"]] == [p["name"] for p in new["phases"]]
    assert doc["throughput"]["generation"]["windows"] == new["throughput"]["generation"]["windows"]


V06 = """INFO 03-04 12:00:00 api_server.py:528] vLLM API server version 0.6.3
INFO 03-04 12:00:00 api_server.py:529] args: Namespace(host=None, port=8000, model='m', tensor_parallel_size=1)
INFO 03-04 12:00:05 llm_engine.py:237] Initializing an LLM engine (v0.6.3) with config: model='m', tensor_parallel_size=1
INFO 03-04 12:00:08 model_runner.py:1056] Starting to load model m...
INFO 03-04 12:00:40 model_runner.py:1067] Loading model weights took 14.9888 GB
INFO 03-04 12:00:45 gpu_executor.py:122] # GPU blocks: 2456, # CPU blocks: 2048
INFO 03-04 12:00:47 model_runner.py:1390] Capturing the model for CUDA graphs. This may lead to unexpected consequences if the model is not static.
INFO 03-04 12:00:59 model_runner.py:1518] Graph capturing finished in 12 secs.
INFO 03-04 12:01:00 api_server.py:232] Started engine process with PID 77
INFO 03-04 12:01:02 launcher.py:19] Available routes are:
INFO:     Application startup complete.
INFO 03-04 12:01:12 metrics.py:349] Avg prompt throughput: 0.0 tokens/s, Avg generation throughput: 12.5 tokens/s, Running: 1 reqs, Swapped: 0 reqs, Pending: 0 reqs, GPU KV cache usage: 0.1%, CPU KV cache usage: 0.0%.
"""


def test_a_0_6_log_gives_its_phases_and_series():
    doc = analyze_inputs([BytesSource("<v06>", "n", False, data=V06.encode())], tz=UTC, year=2025)
    assert [p["name"] for p in doc["phases"]] == [
        "resolve", "engine_start", "weight_read", "post_load", "kv_profiling", "cuda_graphs", "ready"]
    assert doc["startup"]["complete"] and doc["version"] == "0.6.3"
    assert doc["reported"]["graph_capture_s"] == 12.0
    assert doc["throughput"]["generation"]["peak"] == 12.5 and not doc["excerpt"]
    _same(V06.encode(), 64)


def test_cache_the_graph_for_dynamic_shape_is_a_compile_line():
    lines = ["INFO 03-04 12:00:00 [api_server.py:1] vLLM API server version 0.10.1",
             "INFO 03-04 12:00:30 [backends.py:530] Dynamo bytecode transform time: 9.1 s",
             "INFO 03-04 12:00:40 [backends.py:161] Cache the graph for dynamic shape for later use",
             "INFO 03-04 12:01:19 [backends.py:178] Compiling a graph for dynamic shape takes 38.3 s"]
    doc = analyze(parse_lines(lines, tz=UTC, year=2025))
    assert [p["name"] for p in doc["phases"]] == ["resolve", "compile"]
    doc = analyze(parse_lines(lines[2:], tz=UTC, year=2025))  # an excerpt starting there
    assert [p["name"] for p in doc["phases"]] == ["compile"] and doc["excerpt"]


# --- properties: no input breaks the prefix readers, and prefixes peel exactly -------------
_STAMP = st.builds(
    lambda y, mo, d, h, mi, s, frac, tz: (
        f"{y:04d}-{mo:02d}-{d:02d}T{h:02d}:{mi:02d}:{s:02d}{frac}{tz}"),
    st.integers(1970, 2099), st.integers(1, 12), st.integers(1, 28), st.integers(0, 23),
    st.integers(0, 59), st.integers(0, 59), st.sampled_from(["", ".1", ".1234567", ".123456789"]),
    st.sampled_from(["Z", "+02:00", "-0530", "+00:00"]))
_BODY = st.sampled_from([
    "INFO 03-04 12:34:56 [x.py:1] Starting to load model m...", "Traceback (most recent call last):",
    "(Worker_TP0 pid=9) WARNING 03-04 12:34:56 [y.py:2] hmm", "plain text line", "",
    "INFO 03-04 12:34:56 llm_engine.py:234] old", "RuntimeError: boom"])


@settings(max_examples=300, deadline=None)
@given(_STAMP, st.sampled_from(["", "stdout F ", "stderr P ", "00O ", "01E+ ", "host vllm[12]: "]),
       _BODY)
def test_rfc3339_layers_peel_to_the_body(stamp, layer, body):
    rest, said = peel(f"{stamp} {layer}{body}")
    assert rest == body and said is not None
    assert said.stamp_full == stamp[:10] + " " + stamp[11:19]


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(["Jan", "Feb", "Mar", "Dec"]), st.integers(1, 28), st.integers(0, 23),
       st.sampled_from(["", ".123456"]), st.from_regex(r"[a-z][a-z0-9.-]{0,20}", fullmatch=True),
       st.sampled_from(["vllm[1]", "python3[4242]", "docker"]), _BODY,
       st.sampled_from(["", "[rank3]: ", "svc-1  | "]))
def test_journald_and_nested_layers_peel_to_the_body(mon, day, hour, frac, host, ident, body, inner):
    pad = f"{day:2d}" if day < 10 and frac else f"{day:02d}"
    rest, said = peel(f"{mon} {pad} {hour:02d}:05:06{frac} {host} {ident}: {inner}{body}")
    assert rest == body and said.kind == "journald"
    assert said.stamp.endswith(f"-{day:02d} {hour:02d}:05:06")
    assert said.rank == (3 if inner.startswith("[rank3]") else None)


@settings(max_examples=500, deadline=None)
@given(st.text(max_size=300), st.sampled_from(["", "2025-03-04T12:34:56Z ", "Mar 04 12:34:56 h i: ",
                                               "[rank0]: ", "x-1  | ", "2025-03-04 12:34:56 ",
                                               "[2025-03-04T12:34:56Z] ", "  | ", " [36m", "0: "]))
def test_any_text_behind_any_prefix_never_breaks_the_reader(text, prefix):
    f = parse_line(prefix + text)
    assert isinstance(f.message, str)
    rest, _ = peel(prefix + text)
    assert (prefix + text).endswith(rest)
    parse_lines([prefix + text, text], reference=LATER)
