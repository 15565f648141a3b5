"""The redaction stage over a whole (synthetic, planted) run directory."""

from __future__ import annotations

import json
import stat

from sparktriage.report.inputs import load_run
from sparktriage.report.redact import Redactor, read_map, write_map
from sparktriage.testbed.synthetic_run import identifying_values, planted_values


def _all_text(inputs) -> str:
    return json.dumps({rel: f.content for rel, f in inputs.files.items()}, default=str)


def test_planted_secrets_are_in_the_run_and_gone_after_redaction(report_run):
    raw = load_run(report_run)
    before = _all_text(raw)
    assert all(secret in before for secret in planted_values())  # the plant worked
    clean = Redactor(anonymize=False).run(raw)
    after = _all_text(clean)
    assert [s for s in planted_values() if s in after] == []
    assert "spark-a1.lab.acme-ai.net" in after  # not anonymized without --anonymize


def test_anonymize_removes_identifying_names_from_values_keys_and_paths(report_run):
    redactor = Redactor(anonymize=True)
    clean = redactor.run(load_run(report_run))
    after = _all_text(clean) + " ".join(clean.files)
    assert [v for v in identifying_values() + planted_values() if v.lower() in after.lower()] == []
    nodes = {rel.split("/bundle/nodes/")[1].split("/")[0] for rel in clean.files if "/bundle/nodes/" in rel}
    assert nodes == {redactor.anonymizer.hosts["spark-a1.lab.acme-ai.net"],
                     redactor.anonymizer.hosts["spark-a2.lab.acme-ai.net"]}
    # the same node has the same stand-in in the deployment, the bundle and the stalls document
    dep = clean.doc("deployment.yaml")
    stalls = clean.doc("launches/L001/stalls.json")
    assert dep["nodes"][0]["host"] in nodes and {p["node"] for p in stalls["phases"]} == nodes


def test_map_is_private_and_reusing_it_keeps_stand_ins(report_run, tmp_path):
    first = Redactor(anonymize=True)
    clean1 = first.run(load_run(report_run))
    path = tmp_path / "map.json"
    write_map(path, first.map_document("r"))
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    doc = read_map(path)
    assert doc["hosts"]["spark-a1.lab.acme-ai.net"].startswith("host-")
    assert all(s not in path.read_text() for s in planted_values())  # secrets kept as hashes only
    second = Redactor(anonymize=True, seed=doc)
    clean2 = second.run(load_run(report_run))
    assert _all_text(clean1) == _all_text(clean2)


def test_argv_flag_values_and_secret_keys_are_replaced_whole():
    redactor = Redactor()
    out = redactor.value({"argv": ["vllm", "serve", "--api-key", "abc", "--port", "8000"],
                          "env": {"MY_SERVICE_TOKEN": "t0k", "PATH": "/usr/bin"},
                          "api_keys": ["k1", "k2"], "max_tokens": 256, "api_key": "set"})
    assert out["argv"][3].startswith("REDACTED-") and out["argv"][5] == "8000"
    assert out["env"]["MY_SERVICE_TOKEN"].startswith("REDACTED-") and out["env"]["PATH"] == "/usr/bin"
    assert all(v.startswith("REDACTED-") for v in out["api_keys"])
    assert out["max_tokens"] == 256 and out["api_key"] == "set"
