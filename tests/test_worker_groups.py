"""The suite's two-worker plan (tests/workergroups.py, docs/testbed.md "Two workers"): work goes out a
module at a time, modules that build the namespace lab or read one session recording go out
together, and collection refuses modules that must share a worker but are not declared so."""

from __future__ import annotations

import re
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from workergroups import (COST_S, JOINED, LAB_MODULES, longest_first, scope_of, undeclared_groups,
                          worker_groups)

REPO = Path(__file__).resolve().parents[1]


@dataclass
class _Item:
    nodeid: str
    fixturenames: tuple[str, ...] = ()
    shares: tuple[str, ...] = ()
    marks: list = field(default_factory=list)

    def iter_markers(self, name):
        return [pytest.mark.shares(s).mark for s in self.shares] if name == "shares" else []


def test_a_module_is_one_unit_and_a_joined_set_is_one_unit():
    assert scope_of("tests/stats/test_compare.py::test_x[a-b]") == "tests/stats/test_compare.py"
    assert scope_of("tests/stats/test_compare.py::Klass::test_x") == "tests/stats/test_compare.py"
    for declared in JOINED:
        scopes = {scope_of(f"{module}::test_x[p::q]") for module in declared}
        assert scopes == {min(declared)}
    assert len({scope_of(f"{min(d)}::t") for d in JOINED}) == len(JOINED)


def test_recording_users_and_lab_modules_are_found_and_checked_against_the_declaration():
    lab = sorted(LAB_MODULES)
    items = [_Item("tests/a/test_one.py::t", ("demo_session", "tmp_path")),
             _Item("tests/b/test_two.py::t", shares=("demo_session",)),
             _Item("tests/c/test_three.py::t", ("cold_storage_start",)),
             _Item("tests/d/test_alone.py::t", ("tmp_path",)),
             _Item(f"{lab[0]}::t"), _Item(f"{lab[1]}::t")]
    groups = worker_groups(items)
    assert groups["tests/a/test_one.py"] == groups["tests/b/test_two.py"] == "tests/a/test_one.py"
    assert groups["tests/c/test_three.py"] == "tests/c/test_three.py"  # one user: alone
    assert groups["tests/d/test_alone.py"] == "tests/d/test_alone.py"
    assert groups[lab[0]] == groups[lab[1]] == min(lab[:2])
    assert undeclared_groups(groups) == ["tests/a/test_one.py", "tests/b/test_two.py"]
    declared = JOINED + (frozenset({"tests/a/test_one.py", "tests/b/test_two.py"}),)
    assert undeclared_groups(groups, declared) == []


def test_the_longest_units_go_out_first_and_every_listed_unit_exists():
    order = longest_first(["tests/a/test_x.py", "tests/sweep/test_sweep_vllm.py", "tests/b/test_y.py",
                           "tests/cli/test_demo.py"])
    assert order == ["tests/cli/test_demo.py", "tests/sweep/test_sweep_vllm.py", "tests/a/test_x.py",
                     "tests/b/test_y.py"]
    for scope in COST_S:  # a renamed module would silently lose its place
        assert (REPO / scope).is_file(), scope
        assert scope_of(f"{scope}::t") == scope


@pytest.mark.slow
def test_two_workers_run_each_module_on_one_worker():
    """A real two-worker run of three modules: every test of a module on the same worker (the
    xdist_group mark this replaced sent every test alone, unnoticed, under pytest 9.2)."""
    done = subprocess.run([sys.executable, "-m", "pytest", "-n", "2", "-v", "-p", "no:cacheprovider",
                           "-o", "addopts=", "tests/stats"], cwd=REPO, capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:]
    ran = re.findall(r"^\[(gw\d)\] .*PASSED (tests/stats/[\w/]+\.py)::", done.stdout, re.M)
    workers: dict[str, set[str]] = {}
    for worker, module in ran:
        workers.setdefault(module, set()).add(worker)
    assert len(workers) >= 3 and len(ran) > 100
    assert all(len(w) == 1 for w in workers.values()), workers
