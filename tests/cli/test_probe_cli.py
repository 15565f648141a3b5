"""`sparktriage probe` end to end against the simulated server: contract, exit codes, files."""

from __future__ import annotations

import json

import pytest

from sparktriage.sim.thread import toy_server
from sparktriage.sim.toy import ToyConfig
from sparktriage.cli.app import main
from sparktriage.testbed.ports import free_port

CONTRACT = {"verdict", "pattern", "families", "baseline", "tokens_spent", "wall_s"}


def run_cli(args, capsys) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as exc:
        main(["probe", *args])
    out, err = capsys.readouterr()
    return exc.value.code, out, err


def test_healthy_json_contract_and_raw_records(tmp_path, capsys):
    with toy_server() as server:
        code, out, err = run_cli(["--endpoint", server.url, "--seed", "4", "--out", str(tmp_path / "run"),
                                  "--json", "-"], capsys)
    assert code == 0
    doc = json.loads(out)
    assert CONTRACT <= set(doc)
    assert doc["verdict"] == "healthy-uncalibrated" and doc["pattern"] is None and doc["baseline"] is None
    for fam in doc["families"]:
        assert set(fam) >= {"name", "status", "numbers", "evidence"}
        assert fam["status"] in {"ok", "suspect", "garbage", "skipped"}
    assert "verdict: HEALTHY-UNCALIBRATED" in err  # the human text goes to stderr with --json -
    launch = tmp_path / "run" / "launches" / "L001"
    records = [json.loads(line) for line in (launch / "probe-requests.jsonl").read_text().splitlines()]
    assert len(records) == doc["requests"]
    assert sum(r["response"]["usage"]["prompt_tokens"] + r["response"]["usage"]["completion_tokens"]
               for r in records if r["response"]) == doc["tokens_spent"]
    assert json.loads((launch / "probe.json").read_text())["verdict"] == doc["verdict"]


@pytest.mark.slow
def test_garbage_and_suspect_exit_1(tmp_path, capsys):
    with toy_server(ToyConfig(garbage="!")) as server:
        code, out, _ = run_cli(["--endpoint", server.url, "--out", str(tmp_path / "a")], capsys)
    assert code == 1 and "verdict: GARBAGE  (pattern F2" in out
    with toy_server(ToyConfig(broken_chat=True)) as server:
        code, out, _ = run_cli(["--endpoint", server.url, "--out", str(tmp_path / "b")], capsys)
    assert code == 1 and "verdict: SUSPECT" in out


@pytest.mark.slow
def test_save_baseline_then_compare(tmp_path, capsys):
    fp = tmp_path / "fp.json"
    with toy_server() as server:
        code, _, err = run_cli(["--endpoint", server.url, "--save-baseline", str(fp),
                                "--out", str(tmp_path / "a")], capsys)
        assert code == 0 and fp.exists() and "baseline fingerprint written" in err
        code, out, _ = run_cli(["--endpoint", server.url, "--baseline", str(fp), "--out", str(tmp_path / "b"),
                                "--json", str(tmp_path / "doc.json")], capsys)
    assert code == 0 and "verdict: HEALTHY" in out
    doc = json.loads((tmp_path / "doc.json").read_text())
    assert doc["verdict"] == "healthy" and doc["baseline"]["path"] == str(fp)


@pytest.mark.parametrize("content, message", [
    ("not json", "not a readable JSON document"),
    ('{"kind": "something-else"}', "not a sparktriage probe fingerprint"),
    ('{"schema_version": 1, "kind": "sparktriage-probe-fingerprint", "fingerprint_version": 99}',
     "fingerprint version 99 is not supported"),
])
def test_bad_baseline_is_a_one_line_usage_error(tmp_path, capsys, content, message):
    bad = tmp_path / "bad.json"
    bad.write_text(content)
    code, out, err = run_cli(["--endpoint", "http://127.0.0.1:9", "--baseline", str(bad)], capsys)
    assert code == 2
    assert message in err and "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_baseline_and_reference_together_is_a_usage_error(capsys):
    code, _, err = run_cli(["--endpoint", "http://x", "--baseline", "a", "--reference", "http://y"], capsys)
    assert code == 2 and "not both" in err


def test_unreachable_endpoint_exits_3(tmp_path, capsys):
    code, _, err = run_cli(["--endpoint", f"http://127.0.0.1:{free_port()}", "--out", str(tmp_path / "r")], capsys)
    assert code == 3 and "cannot connect" in err and "Traceback" not in err
