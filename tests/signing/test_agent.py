"""Signing through a real `ssh-agent` process started by the test (`ssh-add -L`, `ssh-keygen -Y sign`)."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from sparktriage.signing import sshsig
from sparktriage.signing.sshkeygen import AgentError, agent_keys, agent_signer
from sparktriage.signing.keys import read_public_key
from sparktriage.signing.signing import SignSpec, resolve
from sparktriage.signing.verify import TrustAnchor, verify


@pytest.fixture
def agent(tmp_path):
    """A real ssh-agent in the foreground (-D) on a private socket; killed by its own pid."""
    sock = tmp_path / "agent.sock"
    proc = subprocess.Popen(["ssh-agent", "-D", "-a", str(sock)], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)
    deadline = time.monotonic() + 10
    while not sock.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert sock.exists(), "ssh-agent did not create its socket"
    yield sock
    proc.send_signal(signal.SIGTERM)
    proc.wait(timeout=10)


def _add(sock: Path, key: Path) -> None:
    env = dict(os.environ, SSH_AUTH_SOCK=str(sock))
    subprocess.run(["ssh-add", "-q", str(key)], env=env, check=True, capture_output=True)


def test_agent_lists_and_signs_and_ssh_keygen_verifies(agent, report_keys, tmp_path):
    _add(agent, report_keys["main"])
    _add(agent, report_keys["other"])
    fingerprints = {k.fingerprint for k in agent_keys(str(agent))}
    wanted = read_public_key(report_keys["other"].with_suffix(".pub"))
    assert wanted.fingerprint in fingerprints and len(fingerprints) == 2
    signer = agent_signer(wanted, str(agent))
    message = tmp_path / "MANIFEST"
    message.write_bytes(b"abc  x\n")
    sig = tmp_path / "MANIFEST.sig"
    sig.write_text(signer.sign(message.read_bytes()))
    allowed = tmp_path / "allowed"
    allowed.write_text(f'someone@else namespaces="sparktriage" {wanted.openssh()}\n')
    done = subprocess.run(["ssh-keygen", "-Y", "verify", "-f", str(allowed), "-I", "someone@else",
                           "-n", "sparktriage", "-s", str(sig)], stdin=open(message, "rb"),
                          capture_output=True)
    assert done.returncode == 0, done.stderr


def test_report_signed_by_agent_verifies(agent, report_keys, report_run, tmp_path, monkeypatch,
                                         report_build):
    _add(agent, report_keys["main"])
    monkeypatch.setenv("SSH_AUTH_SOCK", str(agent))
    out = tmp_path / "report"
    outcome = report_build(report_run, out, key=None, formats="md")
    assert not outcome.signed
    from sparktriage.report.build import execute, plan_report
    outcome = execute(plan_report(report_run, out, "md", SignSpec("agent"), True))
    assert outcome.signed and outcome.identity == "consultant@example.com"
    anchor = TrustAnchor(key=read_public_key(report_keys["main"].with_suffix(".pub")), source="k")
    result = verify(out, anchor)
    assert result.ok and result.identity_established
    # --sign KEY.pub picks that key from the agent too
    signer, signing = resolve(SignSpec(str(report_keys["main"].with_suffix(".pub"))))
    assert signing.fingerprint == read_public_key(report_keys["main"].with_suffix(".pub")).fingerprint


def test_agent_without_the_key_or_without_agent_is_a_clear_error(agent, report_keys, monkeypatch):
    with pytest.raises(AgentError, match="no Ed25519 key"):
        agent_signer(None, str(agent))
    with pytest.raises(AgentError, match="does not hold"):
        agent_signer(read_public_key(report_keys["main"].with_suffix(".pub")), str(agent))
    monkeypatch.delenv("SSH_AUTH_SOCK", raising=False)
    with pytest.raises(AgentError, match="SSH_AUTH_SOCK"):
        agent_keys()
    with pytest.raises(AgentError, match="cannot talk"):
        agent_keys(str(agent) + ".missing")
