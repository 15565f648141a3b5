"""`sparktriage report` and `sparktriage verify` as a user runs them: exit codes and output."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import pytest


def run(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "sparktriage", *args], capture_output=True,
                          text=True, env=env, timeout=300)


@pytest.mark.slow
def test_report_then_verify_end_to_end(report_run, report_keys, tmp_path):
    out = tmp_path / "rep"
    done = run("report", str(report_run), "--out", str(out), "--sign", str(report_keys["main"]),
               "--anonymize", "--json", "-")
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert summary["signed"] and summary["report_dir"] == str(out)
    assert summary["map_path"] == str(tmp_path / "rep.private-map.json")
    assert "keep it, never send it" in done.stderr and "Traceback" not in done.stderr
    assert (out / "report.md").exists() and (out / "report.pdf").exists()

    ok = run("verify", str(out), "--key", str(report_keys["main"].with_suffix(".pub")))
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert ok.stdout.splitlines()[-1] == "result: OK"
    bare = run("verify", str(out))  # issue 16: no trust anchor is not a pass
    assert bare.returncode == 1 and "identity NOT established" in bare.stdout
    assert ("signature valid, signer not trusted: give --key or --allowed-signers"
            in bare.stdout)
    assert summary["fingerprint"] in bare.stdout
    lax = run("verify", str(out), "--allow-untrusted")
    assert lax.returncode == 0 and lax.stdout.splitlines()[-1] == "result: OK"

    (out / "data" / "run.json").write_text("{}")
    (out / "plots" / "sweep.png").unlink()
    (out / "new.txt").write_text("x")
    bad = run("verify", str(out), "--key", str(report_keys["other"].with_suffix(".pub")), "--json",
              str(tmp_path / "v.json"))
    assert bad.returncode == 1
    for line in ("MODIFIED: data/run.json", "REMOVED: plots/sweep.png", "ADDED: new.txt",
                 "NOT TRUSTED: wrong key", "result: FAILED"):
        assert line in bad.stdout, line
    result = json.loads((tmp_path / "v.json").read_text())
    assert result["modified"] == ["data/run.json"] and not result["ok"]


@pytest.mark.slow
def test_default_report_folder_is_inside_the_run(report_run, tmp_path):
    run_copy = tmp_path / "run"
    shutil.copytree(report_run, run_copy)
    done = run("report", str(run_copy), "--format", "md")
    assert done.returncode == 0, done.stderr
    assert (run_copy / "report" / "report.md").exists()
    assert not (run_copy / "report" / "report.pdf").exists()
    assert (run_copy / "report.private-map.json").exists()
    assert "not signed" in done.stderr
    assert run("verify", str(run_copy / "report")).returncode == 1  # unsigned is not OK


@pytest.mark.parametrize("args, message", [
    (["report", "/nonexistent-run"], "no such run directory"),
    (["report", "{run}", "--format", "docx"], "choose from md, pdf"),
    (["report", "{run}", "--sign", "{enc}", "--out", "{tmp}/x"], "passphrase-protected"),
    (["report", "{run}", "--sign", "{tmp}/missing-key", "--out", "{tmp}/x"], "no such key file"),
    (["report", "{run}", "--sign", "{key}", "--identity", "bad id", "--out", "{tmp}/x"], "--identity"),
    (["verify", "{tmp}"], "no MANIFEST"),
    (["verify", "{tmp}", "--key", "{pub}", "--allowed-signers", "{pub}"], "either --allowed-signers or --key"),
    (["verify", "{tmp}", "--identity", "a"], "--identity needs --allowed-signers"),
])
def test_bad_input_is_one_line_and_exit_2(report_run, report_keys, tmp_path, args, message):
    values = {"run": str(report_run), "enc": str(report_keys["encrypted"]), "tmp": str(tmp_path),
              "key": str(report_keys["main"]), "pub": str(report_keys["main"].with_suffix(".pub"))}
    done = run(*[a.format(**values) for a in args])
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error:") and message in lines[0], done.stderr


def test_malformed_document_names_the_file(report_run, tmp_path):
    run_copy = tmp_path / "run"
    shutil.copytree(report_run, run_copy)
    (run_copy / "launches" / "L002" / "probe.json").write_text('{"verdict": ')
    done = run("report", str(run_copy), "--out", str(tmp_path / "r"))
    assert done.returncode == 2
    assert "launches/L002/probe.json:1: not valid JSON" in done.stderr
    assert not (tmp_path / "r").exists()
