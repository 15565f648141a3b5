"""Evidence bundles: write, export, reopen (folder and archive), refuse hostile archives."""

from __future__ import annotations

import io
import json
import tarfile
from pathlib import Path

import pytest

from sparktriage.errors import InputError
from sparktriage.bundle.reader import Bundle
from sparktriage.bundle.writer import BundleWriter, export_bundle
from sparktriage.bundle.records import GpuSample, HostSample, ProcSample, StackDump

HOST = {"t": 10.0, "cpu": {"user": 12.5, "system": 3.0, "iowait": 40.0, "idle": 44.5, "steal": 0},
        "ncpu": 2, "load1": 1.5,
        "mem": {"total": 100, "available": 40, "free": 10, "cached": 30, "dirty": 1,
                "writeback": 0, "swap_total": 0, "swap_free": 0},
        "swap_in_bps": 0.0, "swap_out_bps": 0.0, "pgmajfault_ps": 12.0,
        "psi": {"cpu_some": 1.0, "memory_some": 0.0, "memory_full": 0.0, "io_some": 30.0,
                "io_full": 20.0},
        "kswapd_cpu": 0.0}
PROC = {"t": 10.0, "pid": 42, "ppid": 1, "name": "VLLM::Worker_TP1", "cmdline": "VLLM::Worker_TP1",
        "role": "worker", "state": "D", "cpu_user_pct": 1.0, "cpu_system_pct": 90.0,
        "cpu_iowait_pct": None, "rss": 1 << 30, "read_bps": 5e8, "write_bps": 0.0,
        "read_chars_ps": 5e8, "majflt_ps": 3000.0, "minflt_ps": 10.0, "ctx_vol_ps": 5.0,
        "ctx_invol_ps": 1.0, "num_threads": 2,
        "threads": [{"tid": 42, "name": "python", "state": "D", "cpu_pct": 91.0}],
        "children": [{"pid": 77, "name": "ptxas", "cmdline": "ptxas -arch sm_121a"}],
        "rank": "TP1", "read_bytes": 123, "added_by_a_newer_writer": True}
STACK = {"t": 11.0, "pid": 42, "role": "worker", "rank": "TP1",
         "threads": [{"tid": 42, "name": "MainThread", "active": True, "gil": False,
                      "frames": [{"function": "_load_w2", "file": "vllm/fused_moe/layer.py",
                                  "line": 900}]}],
         "error": None}


def _write(root: Path) -> Path:
    writer = BundleWriter(root, origin="collect", target={"pid": 42}, nodes=["spark-01", "spark-02"],
                          interval_s=1.0)
    writer.append("spark-01", "samples/host.jsonl", HOST)
    writer.append("spark-01", "samples/procs.jsonl", PROC)
    writer.append("spark-01", "stacks.jsonl", STACK)
    writer.append("spark-01", "samples/gpu.jsonl",
                  {"t": 10.0, "index": 0, "name": "NVIDIA GB10", "util_pct": 96, "mem_util_pct": 0,
                   "power_w": 21.5, "sm_clock_mhz": 2418, "mem_clock_mhz": None, "temp_c": 40,
                   "mem_used": 5, "mem_total": 9, "mem_source": "unified-system",
                   "throttle_reasons": []})
    writer.append("spark-01", "logs/api-server.lines.jsonl",
                  {"t": 1.0, "node": "spark-01", "stream": "stdout", "line": "a"})
    writer.append("spark-01", "logs/api-server.lines.jsonl",
                  {"t": 3.0, "node": "spark-01", "stream": "stdout", "line": "c"})
    writer.append("spark-01", "logs/worker.lines.jsonl",
                  {"t": 2.0, "node": "spark-01", "stream": "stderr", "line": "b"})
    writer.append("spark-02", "dmesg.jsonl",
                  {"t": 5.0, "line": "NVRM: NV_ERR_NO_MEMORY", "level": "err", "kernel_t": 99.5})
    writer.manifest({"collector": "host", "node": "spark-01", "command": None, "started": 1.0,
                     "ended": 9.0, "duration_s": 8.0, "rc": 0, "records": 1, "truncated": False,
                     "skipped": None, "error": None})
    writer.manifest({"collector": "gpu", "node": "spark-02", "command": None, "started": 1.0,
                     "ended": 1.0, "duration_s": 0.0, "rc": None, "records": 0, "truncated": False,
                     "skipped": "no NVIDIA driver", "error": None})
    writer.node_document("spark-01", "environment.json", {"kernel": "6.17.0-1029-nvidia"})
    writer.node_document("spark-01", "clock.json", {"offset_s": 0.25, "rtt_s": 0.01,
                                                    "method": "agent-echo"})
    writer.environment_diff({"differences": []})
    writer.event("node-lost", "spark-02", reason="ssh exited 255")
    writer.finish("stalled", ready_s=None)
    return root


def test_roundtrip_folder(tmp_path):
    root = _write(tmp_path / "b")
    with Bundle.open(root) as bundle:
        assert bundle.info.origin == "collect" and bundle.info.outcome == "stalled"
        assert bundle.info.target == {"pid": 42} and bundle.info.ended >= bundle.info.started
        assert bundle.nodes() == ["spark-01", "spark-02"]
        (host,) = bundle.host_samples("spark-01")
        assert isinstance(host, HostSample) and host.cpu.iowait == 40.0
        assert isinstance(host.cpu.steal, float) and host.psi.io_full == 20.0
        (proc,) = bundle.proc_samples("spark-01")
        assert isinstance(proc, ProcSample)
        assert proc.threads[0].state == "D" and proc.children[0].name == "ptxas"
        assert proc.rank == "TP1" and not hasattr(proc, "added_by_a_newer_writer")
        (stack,) = bundle.stacks("spark-01")
        assert isinstance(stack, StackDump) and stack.threads[0].frames[0].function == "_load_w2"
        (gpu,) = bundle.gpu_samples("spark-01")
        assert isinstance(gpu, GpuSample) and gpu.mem_source == "unified-system"
        assert gpu.uuid is None  # absent field of an older writer defaults to None
        assert [r.line for r in bundle.log_lines("spark-01")] == ["a", "b", "c"]
        assert bundle.log_names("spark-01") == ["api-server", "worker"]
        assert [r.line for r in bundle.log_lines("spark-01", "worker")] == ["b"]
        (dmesg,) = bundle.dmesg("spark-02")
        assert dmesg.level == "err" and dmesg.kernel_t == 99.5
        manifest = bundle.manifest()
        assert [(m.collector, m.skipped) for m in manifest] == [("host", None),
                                                                 ("gpu", "no NVIDIA driver")]
        assert bundle.environment("spark-01")["kernel"] == "6.17.0-1029-nvidia"
        assert bundle.environment("spark-02") is None
        assert bundle.clock("spark-01").offset_s == 0.25
        assert bundle.events()[0]["event"] == "node-lost"
        assert list(bundle.samples("spark-02", "net")) == []


def test_export_and_open_archive(tmp_path):
    root = _write(tmp_path / "my-bundle")
    archive = export_bundle(root, tmp_path / "out" / "my-bundle.tar.gz")
    with tarfile.open(archive) as tar:
        names = tar.getnames()
    assert {n.split("/")[0] for n in names} == {"my-bundle"}
    assert "my-bundle/nodes/spark-01/samples/host.jsonl" in names
    with Bundle.open(archive) as bundle:
        tmp = bundle.root
        assert tmp.is_dir() and bundle.info.outcome == "stalled"
        assert [r.line for r in bundle.log_lines("spark-01")] == ["a", "b", "c"]
    assert not tmp.exists()  # the unpacked copy is removed on close


def _archive(path: Path, members: list[tuple[tarfile.TarInfo, bytes | None]]) -> Path:
    with tarfile.open(path, "w:gz") as tar:
        for info, data in members:
            tar.addfile(info, io.BytesIO(data) if data is not None else None)
    return path


def _file(name: str, data: bytes = b"{}") -> tuple[tarfile.TarInfo, bytes]:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    return info, data


@pytest.mark.parametrize("bad", [
    "b/../../escape.txt", "/etc/evil", "b/nodes/../../x",
])
def test_archive_with_traversal_is_refused(tmp_path, bad):
    archive = _archive(tmp_path / "x.tar.gz", [_file("b/bundle.json"), _file(bad)])
    with pytest.raises(InputError, match="unsafe member"):
        Bundle.open(archive)
    assert not (tmp_path / "escape.txt").exists()


def test_archive_with_link_or_two_tops_is_refused(tmp_path):
    link = tarfile.TarInfo("b/nodes/n/stacks.jsonl")
    link.type = tarfile.SYMTYPE
    link.linkname = "/etc/shadow"
    archive = _archive(tmp_path / "l.tar.gz", [_file("b/bundle.json"), (link, None)])
    with pytest.raises(InputError, match="not a plain file"):
        Bundle.open(archive)
    archive = _archive(tmp_path / "t.tar.gz", [_file("a/bundle.json"), _file("b/bundle.json")])
    with pytest.raises(InputError, match="one top-level folder"):
        Bundle.open(archive)


def test_version_and_kind_are_checked(tmp_path):
    root = _write(tmp_path / "b")
    doc = json.loads((root / "bundle.json").read_text())
    (root / "bundle.json").write_text(json.dumps({**doc, "schema_version": 99}))
    with pytest.raises(InputError, match="schema_version 99"):
        Bundle.open(root)
    (root / "bundle.json").write_text(json.dumps({**doc, "kind": "other"}))
    with pytest.raises(InputError, match="not an evidence bundle"):
        Bundle.open(root)
    with pytest.raises(InputError, match="no such bundle"):
        Bundle.open(tmp_path / "missing.tar.gz")


def test_torn_last_record_is_skipped(tmp_path):
    root = _write(tmp_path / "b")
    path = root / "nodes" / "spark-01" / "samples" / "host.jsonl"
    with open(path, "a") as fh:
        fh.write('{"t": 11.0, "cpu": {"us')  # the writer died mid-record
    with Bundle.open(root) as bundle:
        assert len(list(bundle.host_samples("spark-01"))) == 1


@pytest.mark.parametrize("name", ["../x", "a/b", ".hidden", "-rf", "", "x" * 65, "a\nb"])
def test_hostile_names_never_become_paths(tmp_path, name):
    with pytest.raises(InputError):
        BundleWriter(tmp_path / "b", origin="collect", target={}, nodes=[name], interval_s=1)
    writer = BundleWriter(tmp_path / "c", origin="collect", target={}, nodes=["ok"], interval_s=1)
    with pytest.raises(InputError):
        writer.append("ok", f"logs/{name}.lines.jsonl", {"t": 1})
    with pytest.raises(InputError):
        writer.append("ok", "../../etc/passwd", {"t": 1})
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c"]


def test_export_replaces_secrets_in_every_file_and_keeps_the_rest(tmp_path):
    root = _write(tmp_path / "b")
    secret_line = ("(APIServer pid=7) INFO args: Namespace(api_key='k-plain-secret-7', "
                   "hf_token='hf_abcdefghijklmnopqrstu', port=8000)")
    writer_lines = root / "nodes" / "spark-01" / "logs" / "api-server.lines.jsonl"
    with open(writer_lines, "a", encoding="utf-8") as out:
        out.write(json.dumps({"t": 4.0, "node": "spark-01", "stream": "stdout", "line": secret_line}) + "\n")
        out.write(json.dumps({"t": 5.0, "node": "spark-01", "stream": "stderr",
                              "line": "GET https://user:pw-in-url-99@hub.example/x failed"}) + "\n")
    (root / "nodes" / "spark-01" / "serve.log").write_text("export NGC_API_KEY=nvapi-AbCdEfGhIjKlMnOpQrStUvWx\n")
    archive = export_bundle(root, tmp_path / "b.tar.gz")
    with tarfile.open(archive) as tar:
        everything = b"".join(tar.extractfile(m).read() for m in tar.getmembers() if m.isfile())
        note = json.loads(tar.extractfile("b/export.json").read())
    for secret in ("k-plain-secret-7", "hf_abcdefghijklmnopqrstu", "pw-in-url-99",
                   "nvapi-AbCdEfGhIjKlMnOpQrStUvWx"):
        assert secret.encode() not in everything
    assert note["redacted"] is True and note["secrets_replaced"] == 4
    assert b"REDACTED-" in everything
    with Bundle.open(archive) as bundle:  # still a bundle; everything else is as it was
        lines = [r.line for r in bundle.log_lines("spark-01")]
        assert lines[:3] == ["a", "b", "c"] and "port=8000" in lines[3]
        assert "https://user:REDACTED-url-password-1@hub.example/x" in lines[4]
        assert bundle.environment("spark-01")["kernel"] == "6.17.0-1029-nvidia"
        (dmesg,) = bundle.dmesg("spark-02")
        assert dmesg.kernel_t == 99.5
    assert secret_line in writer_lines.read_text()  # the local evidence is untouched
