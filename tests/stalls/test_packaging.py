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
        names = [n for n in archive.namelist() if n.startswith("sparktriage/stalls/rules/")]
        assert sorted(Path(n).name for n in names) == sorted(
            p.name for p in (REPO / "rules").glob("*.yaml"))
        archive.extractall(tmp_path / "unpacked", members=names)
    rules = load_rules(tmp_path / "unpacked" / "sparktriage" / "stalls" / "rules")
    assert len(rules.ruleset.rules) == 15


def test_package_link_points_at_the_rules():
    link = REPO / "src" / "sparktriage" / "stalls" / "rules"
    assert link.is_symlink() and link.resolve() == (REPO / "rules").resolve()
