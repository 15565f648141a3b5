"""The rules ship inside the package: a wheel carries them and they load from there."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from sparktriage.stalls.analyze import load_rules

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_wheel_carries_the_rules(tmp_path):
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(tmp_path),
                    str(REPO)], check=True, capture_output=True, timeout=600)
    (wheel,) = tmp_path.glob("sparktriage-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        assert {"sparktriage/stalls/__init__.py", "sparktriage/stalls/engine.py",
                "sparktriage/testbed/faults.py"} <= set(archive.namelist())
        prefix = "sparktriage/stalls/rules/"
        names = [n for n in archive.namelist() if n.startswith(prefix)]
        # the stall rules and, under config/, the configuration traps reproduce reads
        assert sorted(n[len(prefix):] for n in names) == sorted(
            p.relative_to(REPO / "rules").as_posix() for p in (REPO / "rules").rglob("*.yaml"))
        archive.extractall(tmp_path / "unpacked", members=names)
    rules = load_rules(tmp_path / "unpacked" / "sparktriage" / "stalls" / "rules")
    assert len(rules.ruleset.rules) == 15


def test_package_link_points_at_the_rules():
    link = REPO / "src" / "sparktriage" / "stalls" / "rules"
    assert link.is_symlink() and link.resolve() == (REPO / "rules").resolve()
