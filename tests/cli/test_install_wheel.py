"""The customer's install: the tool alone, as a built wheel, in a clean virtual environment.

A customer runs `selfcheck` on a DGX Spark (aarch64) or a laptop, not on the lab: the wheel must
hold the tool and nothing of the test bed, build on a machine without a C compiler (the log
scanner then runs in pure Python), and `SPARKTRIAGE_PURE_WHEEL=1` must give a `py3-none-any`
wheel for every platform. The wheel is built offline from a copy of the sources and installed
without its dependencies into a fresh venv; the dependencies are the ones this checkout's
`.venv` already holds (a path entry to its site-packages: no index is reached), and the check
runs from that venv against the simulator it serves itself."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import time
import zipfile
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # two offline builds and a venv: 18 s on the quiet 2-core machine, about a minute loaded

ROOT = Path(__file__).resolve().parents[2]


def _sources(tmp_path: Path) -> Path:
    """A copy of what a wheel is built from (a stale build/ of the checkout never leaks in)."""
    copy = tmp_path / "source"
    shutil.copytree(ROOT / "src", copy / "src",
                    ignore=shutil.ignore_patterns("__pycache__", "*.so", "*.egg-info"))
    for name in ("setup.py", "pyproject.toml", "README.md"):
        shutil.copy2(ROOT / name, copy / name)
    return copy


def _build(source: Path, out: Path, **env: str) -> Path:
    done = subprocess.run([sys.executable, "-m", "pip", "wheel", str(source), "--no-deps",
                           "--no-build-isolation", "--no-index", "-q", "-w", str(out)],
                          capture_output=True, text=True, timeout=300, env={**os.environ, **env})
    assert done.returncode == 0, done.stderr[-3000:]
    (wheel,) = out.glob("sparktriage-*.whl")
    return wheel


def test_the_tool_alone_installs_from_its_wheel_and_checks_a_server(tmp_path):
    source = _sources(tmp_path)
    # No compiler: the optional extension fails to build and the wheel is made without it.
    wheel = _build(source, tmp_path / "wheels", CC="/nonexistent/cc")
    names = zipfile.ZipFile(wheel).namelist()
    assert "sparktriage/cli/selfcheck.py" in names and "sparktriage/logs/scan.py" in names
    assert not [n for n in names if "_fastscan" in n], "no compiler, so no compiled scanner"
    assert not [n for n in names if n.startswith(("tests/", "provision/", "scripts/", ".testbed"))]

    venv = tmp_path / "clean"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    bin_dir = venv / "bin"
    done = subprocess.run([sys.executable, "-m", "pip", "--python", str(bin_dir / "python"), "install",
                           "--no-deps", "--no-index", "-q", str(wheel)],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    site = Path(subprocess.run([str(bin_dir / "python"), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                               capture_output=True, text=True, check=True).stdout.strip())
    (site / "zz_dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    where = subprocess.run([str(bin_dir / "python"), "-c", "import sparktriage; print(sparktriage.__file__)"],
                           capture_output=True, text=True, check=True).stdout.strip()
    assert where.startswith(str(site)), where  # the wheel's copy, not this checkout's src/

    ready = tmp_path / "ready"
    sim = subprocess.Popen([str(bin_dir / "sparktriage"), "simulate", "--port", "0", "--rate", "3000",
                            "--ready-file", str(ready)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while not ready.exists() and time.monotonic() < deadline and sim.poll() is None:
            time.sleep(0.1)
        url = ready.read_text().strip()
        run = tmp_path / "run"
        check = subprocess.run([str(bin_dir / "sparktriage"), "selfcheck", "--endpoint", url, "--quick",
                                "--no-probe", "--workload", "code", "--format", "md", "--out", str(run),
                                "--json", "-"], capture_output=True, text=True, timeout=300,
                               env={**os.environ, "SPARKTRIAGE_PURE_PYTHON": "1"})
    finally:
        sim.terminate()
        sim.wait(30)
    assert check.returncode == 0, check.stderr[-3000:]
    doc = json.loads(check.stdout)
    assert [f for f in doc["findings"] if f["severity"] == "finding"] == []
    assert doc["bench"]["workloads"]["code"]["delivered_tokens"] == [128, 128]
    assert (run / "report" / "report.md").is_file()


def test_the_portable_wheel_is_pure_python(tmp_path):
    wheel = _build(_sources(tmp_path), tmp_path / "wheels", SPARKTRIAGE_PURE_WHEEL="1")
    assert wheel.name == "sparktriage-0.1.0-py3-none-any.whl"
    assert not [n for n in zipfile.ZipFile(wheel).namelist() if n.endswith((".so", ".c", ".pyd"))]
