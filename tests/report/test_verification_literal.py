"""The verification instructions work when followed literally (issue 14, item 8): the commands
printed under "Verification" in report.md, run as written in the report folder, pass, write
nothing into the folder, and `sparktriage verify` passes afterwards."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


def _commands(md: str) -> list[str]:
    section = md.split("## Verification", 1)[1]
    block = section.split("```", 2)[1]
    return [line for line in block.strip("\n").splitlines() if line.strip()]


def test_verification_commands_run_literally(report_copy: Path, tmp_path: Path):
    before = sorted(p.relative_to(report_copy) for p in report_copy.rglob("*"))
    commands = _commands((report_copy / "report.md").read_text(encoding="utf-8"))
    assert any(c.startswith("ssh-keygen -Y verify") for c in commands)
    assert commands[-1].startswith("sparktriage verify . --allowed-signers")
    script = "set -euo pipefail\n" + "\n".join(commands) + "\n"
    # the block's `mktemp` writes the allowed-signers file in TMPDIR: a folder of the test's own
    temp = tmp_path / "temp"
    temp.mkdir()
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
           "TMPDIR": str(temp)}
    done = subprocess.run(["bash", "-c", script], cwd=report_copy, env=env, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    out = done.stdout + done.stderr
    assert out.count(": OK") >= 3  # sha256sum -c, one line per file
    assert 'Good "sparktriage" signature for consultant@example.com' in out
    assert "ADDED" not in out
    after = sorted(p.relative_to(report_copy) for p in report_copy.rglob("*"))
    assert after == before  # nothing written into the report folder
    (signers,) = temp.iterdir()  # the allowed-signers file, where mktemp put it
    assert "consultant@example.com" in signers.read_text(encoding="utf-8")
    verify = subprocess.run([sys.executable, "-m", "sparktriage", "verify", str(report_copy),
                             "--allow-untrusted"], capture_output=True, text=True, timeout=60)
    assert verify.returncode == 0, verify.stdout + verify.stderr
