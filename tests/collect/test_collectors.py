"""Every collector against the real machine: record shapes (conformance sweep) and values.

The target is a real process tree started here: a Python parent with a busy thread that reads a
file over and over, and a sleeping child. Each collector must write exactly the fields of its
record type (docs/formats.md), with values that match what the kernel says.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
import uuid
from pathlib import Path

import pytest

from sparktriage.collect import procfs
from sparktriage.collect.base import Context, Skip
from sparktriage.collect.disk import DiskCollector
from sparktriage.collect.dmesg import DmesgCollector, parse_kmsg
from sparktriage.collect.host import HostCollector
from sparktriage.collect.net import NetCollector
from sparktriage.collect.plan import CollectorSpec, default_plan
from sparktriage.collect.procs import ProcsCollector
from sparktriage.redact.capture import Redactor
from sparktriage.collect.runner import Runner
from sparktriage.collect.stacks import StacksCollector
from sparktriage.bundle.records import (
    DiskSample, DmesgLine, HostSample, NetSample, ProcSample, StackDump, field_names,
)

PYSPY = str(Path(__file__).resolve().parents[2] / ".venv" / "bin" / "py-spy")
TARGET = textwrap.dedent("""
    import subprocess, sys, threading, time
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    def spin_reading_the_file():
        while True:
            with open(sys.argv[1], "rb") as fh:
                while fh.read(1 << 20):
                    pass
    threading.Thread(target=spin_reading_the_file, name="reader", daemon=True).start()
    print("ready", child.pid, flush=True)
    time.sleep(600)
""")


@pytest.fixture(scope="module")
def target(tmp_path_factory):
    folder = tmp_path_factory.mktemp("target")
    data = folder / "data.bin"
    data.write_bytes(os.urandom(4 << 20))
    proc = subprocess.Popen([sys.executable, "-c", TARGET, str(data)], stdout=subprocess.PIPE,
                            start_new_session=True)
    line = proc.stdout.readline().split()
    assert line[0] == b"ready"
    yield proc.pid, int(line[1])
    os.killpg(proc.pid, 9)
    proc.wait()


def _ctx(roots: list[int]) -> Context:
    return Context("test", lambda: roots, Redactor(b"k" * 16))


def _spec(name: str, **options) -> CollectorSpec:
    return CollectorSpec(name, 0.2, 10.0, options)


def _twice(collector) -> list[dict]:
    collector.start()
    time.sleep(0.4)
    return collector.collect(time.time())


def test_host_record(target):
    (record,) = _twice(HostCollector(_spec("host"), _ctx([])))
    assert set(record) == field_names(HostSample)
    shares = record["cpu"]
    assert set(shares) == {"user", "system", "iowait", "idle", "steal"}
    assert 99.0 <= sum(shares.values()) <= 101.0
    assert record["mem"]["total"] == procfs.meminfo()["MemTotal"]
    assert record["ncpu"] == os.cpu_count()
    assert set(record["psi"]) == {"cpu_some", "memory_some", "memory_full", "io_some", "io_full"}


def test_disk_and_net_records():
    disks = _twice(DiskCollector(_spec("disk"), _ctx([])))
    assert disks and all(set(r) == field_names(DiskSample) for r in disks)
    assert not any(r["device"].startswith(("loop", "ram")) for r in disks)
    nets = _twice(NetCollector(_spec("net"), _ctx([])))
    assert all(set(r) == field_names(NetSample) for r in nets)
    lo = next(r for r in nets if r["iface"] == "lo")
    assert lo["mtu"] == int(Path("/sys/class/net/lo/mtu").read_text()) and lo["rdma"] is None


def test_procs_records_show_the_busy_thread_reads_and_the_child(target):
    parent, child = target
    collector = ProcsCollector(_spec("procs"), _ctx([parent]))
    collector.start()
    collector.collect(time.time())
    time.sleep(1.0)
    records = collector.collect(time.time())
    assert all(set(r) == field_names(ProcSample) for r in records)
    by_pid = {r["pid"]: r for r in records}
    assert set(by_pid) == {parent, child}
    top = by_pid[parent]
    assert top["role"] == "server" and by_pid[child]["role"] == "child"
    assert [c["pid"] for c in top["children"]] == [child]
    reader = next(t for t in top["threads"] if t["tid"] != parent)  # the non-main thread
    # a thread that does nothing but read (a core on a quiet machine; >10 % seen on a loaded one)
    assert reader["cpu_pct"] > 5
    assert top["threads"][0] == reader  # the busiest first
    assert top["threads"][1]["cpu_pct"] < reader["cpu_pct"] / 2  # the main thread sleeps
    assert top["read_chars_ps"] > 10e6  # rchar counts page-cache reads too
    assert top["cpu_user_pct"] + top["cpu_system_pct"] > 5
    assert top["num_threads"] == 2 and top["starttime"] == procfs.proc_stat(parent).starttime
    assert by_pid[child]["cpu_user_pct"] < 5


def test_stacks_record_has_the_threads_frames(target):
    parent, _ = target
    collector = StacksCollector(CollectorSpec("stacks", 1.0, 20.0, {"pyspy": PYSPY}),
                                _ctx([parent]))
    collector.start()
    records = collector.collect(time.time())
    assert records and all(set(r) == field_names(StackDump) for r in records)
    dump = next(r for r in records if r["pid"] == parent)
    assert dump["error"] is None and dump["role"] == "server"
    names = {t["name"] for t in dump["threads"]}
    assert "reader" in names
    functions = [f["function"] for t in dump["threads"] for f in t["frames"]]
    assert "spin_reading_the_file" in functions
    gone = collector.dump(999_999_99, None, None, "ghost")
    assert gone["error"] and gone["threads"] == []


def test_stacks_without_pyspy_is_skipped_with_the_reason(tmp_path):
    collector = StacksCollector(CollectorSpec("stacks", 1.0, 5.0, {"pyspy": str(tmp_path / "no")}),
                                _ctx([]))
    with pytest.raises(Skip, match="py-spy not installed"):
        collector.start()


def test_dmesg_follows_the_kernel_log():
    if not os.access("/dev/kmsg", os.W_OK):
        pytest.skip("needs root to write a marker line into the kernel log")
    marker = f"sparktriage-test NVRM: marker {uuid.uuid4().hex}"
    collector = DmesgCollector(CollectorSpec("dmesg", 0.5, 5.0, {"backlog_s": 60}), _ctx([]))
    collector.start()
    with open("/dev/kmsg", "w") as kmsg:
        kmsg.write(f"<3>{marker}\n")
    time.sleep(0.2)
    records = collector.collect(time.time())
    collector.stop()
    assert all(set(r) == field_names(DmesgLine) for r in records)
    (line,) = [r for r in records if marker in r["line"]]
    assert line["level"] == "err" and abs(line["t"] - time.time()) < 5
    assert line["kernel_t"] == pytest.approx(procfs.uptime_s(), abs=5)


def test_parse_kmsg_records():
    assert parse_kmsg("3,1234,5678900,-;NVRM: Xid 79\n SUBSYSTEM=pci") == ("err", 5.6789, "NVRM: Xid 79")
    assert parse_kmsg("6,1,0,c,more;hello") == ("info", 0.0, "hello")
    assert parse_kmsg("garbage") is None and parse_kmsg("x,y,z;m") is None


def test_runner_writes_a_manifest_line_per_collector(target, tmp_path):
    parent, _ = target
    plan = default_plan("test", interval_s=0.2, stacks_interval_s=0.5, pyspy=PYSPY)
    records: list[tuple[str, dict]] = []

    class Broken(HostCollector):
        def collect(self, now):
            raise OSError("disk on fire")

    def make(name, spec, ctx):
        if name == "host":
            return Broken(spec, ctx)
        from sparktriage.collect.runner import CLASSES
        return CLASSES[name](spec, ctx)

    runner = Runner(plan, _ctx([parent]), lambda f, r: records.append((f, r)), make)
    runner.start()
    time.sleep(1.5)
    assert runner.request_stacks()
    time.sleep(0.5)
    manifest = {m["collector"]: m for m in runner.stop()}
    assert set(manifest) == set(c.name for c in plan.collectors)
    assert manifest["host"]["failures"] >= 3 and manifest["host"]["error"] == "OSError: disk on fire"
    assert manifest["host"]["records"] == 0 and manifest["host"]["rc"] == 1
    assert manifest["procs"]["records"] >= 10 and manifest["procs"]["failures"] == 0
    assert manifest["stacks"]["command"][:3] == [PYSPY, "dump", "--json"]
    assert manifest["stacks"]["runs"] >= 3  # interval, on demand, and the last one at stop
    assert manifest["gpu"]["skipped"].startswith("no NVIDIA GPU or driver")
    assert manifest["environment"]["records"] >= 1
    written = {f for f, _ in records}
    assert {"samples/procs.jsonl", "samples/disk.jsonl", "stacks.jsonl",
            "environment.json"} <= written
    json.dumps(list(manifest.values()))  # plain JSON
