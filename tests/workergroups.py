"""The suite's two-worker plan (scripts/test.sh with SPARKTRIAGE_TEST_WORKERS=2; docs/testbed.md
"Two workers"), used by tests/conftest.py.

Work goes out to the pytest-xdist workers a module at a time (`scope_of`, through conftest's
`pytest_xdist_make_scheduler`), so a module-scoped server starts once. Modules that build the
namespace lab (fixed names: bridge st-br0, namespaces st-nodeK, 10.250.0.0/24) must share a
worker, so two labs never exist at once; so must modules that read one of the session's costly
recordings (ONCE_PER_SESSION: minutes each; a test that asks for one through
request.getfixturevalue says so with @pytest.mark.shares(name)), so each is made once. The
controller, which schedules, collects nothing: the sets are declared in JOINED, and collection
fails when `worker_groups` finds modules that must share a worker but are not declared together
(`undeclared_groups`). xdist's own `xdist_group` mark cannot do this here: with pytest 9.2 its
rewrite of the node id has no effect, and `--dist loadgroup` sends every test out alone.
"""

from __future__ import annotations

LAB_MODULES = frozenset({"tests/launch/test_netns_ray.py", "tests/launch/test_netns_vllm.py",
                         "tests/testbed/test_lab.py", "tests/redact/test_conformance.py"})
ONCE_PER_SESSION = frozenset({"demo_session", "cold_storage_start"})
JOINED = (
    LAB_MODULES | {"tests/cli/test_demo.py"},  # the demo recording; the conformance cases read it
    frozenset({"tests/session/test_live_stall.py", "tests/stalls/test_reproductions.py"}),
)


# Seconds each long unit took on one worker of a two-worker run (2-core machine, 2026-12-04;
# a joined set under its first module). The scheduler sends the longest first, so that no long
# unit starts while the other worker is nearly done; units not listed follow, most tests first
# (xdist's own order). Only the order depends on these figures, never what runs where together.
# test_sweep_model_sim.py grew to about 110 s in stop 28; ranking it by that moved it ahead of
# tests/bench/test_vllm.py and changed which units ran beside the real-vLLM sweep (niceness -10):
# the simulator's pacing tests then starved (a 0.6 s client TTFT) in a fresh-clone run. Its old
# figure keeps the order that CI has passed with.
COST_S = {
    "tests/cli/test_demo.py": 960,  # the demo, the namespace lab's vLLM and Ray, conformance
    "tests/session/test_live_stall.py": 560,  # the stall reproductions, the live cold start
    "tests/probe/test_vllm_variants.py": 345,
    "tests/sweep/test_sweep_vllm.py": 235,
    "tests/session/test_crash_safety.py": 120,
    "tests/launch/test_vllm_launch.py": 105,
    "tests/sweep/test_sweep_sim.py": 100,
    "tests/hardening/test_fuzz.py": 90,
    "tests/session/test_interrupt.py": 85,
    "tests/bench/test_vllm.py": 65,
    "tests/sweep/test_sweep_model_sim.py": 60,  # ~110 since stop 28, kept at 60: see below
    "tests/cli/test_collect_cli.py": 55,
}


def longest_first(scopes: list[str], cost=COST_S) -> list[str]:
    """`scopes` in the order they should go out: the listed long units by cost, then the rest
    in their given order."""
    rank = {scope: i for i, scope in enumerate(scopes)}
    return sorted(scopes, key=lambda scope: (-cost.get(scope, 0), rank[scope]))


def module_of(nodeid: str) -> str:
    return nodeid.split("::", 1)[0]


def worker_groups(items) -> dict[str, str]:
    """Each test module's worker group: modules are joined when both build the namespace lab or
    both use one fixture of ONCE_PER_SESSION (transitively); a group is named after its first
    module in sorted order."""
    parent: dict[str, str] = {}

    def find(module: str) -> str:
        while parent.setdefault(module, module) != module:
            module = parent[module]
        return module

    def join(a: str, b: str) -> None:
        ra, rb = find(a), find(b)
        if ra != rb:
            parent[max(ra, rb)] = min(ra, rb)

    first_user: dict[str, str] = {}
    for item in items:
        module = find(module_of(item.nodeid))
        keys = set(getattr(item, "fixturenames", ())) & ONCE_PER_SESSION
        keys |= {mark.args[0] for mark in item.iter_markers("shares")}  # getfixturevalue users
        if module_of(item.nodeid) in LAB_MODULES:
            keys.add("namespace-lab")
        for key in keys:
            join(first_user.setdefault(key, module), module)
    return {module_of(item.nodeid): find(module_of(item.nodeid)) for item in items}


def undeclared_groups(groups: dict[str, str], joined=JOINED) -> list[str]:
    """The modules of the first group of `groups` that no set of `joined` holds whole (none: [])."""
    members: dict[str, set[str]] = {}
    for module, root in groups.items():
        members.setdefault(root, set()).add(module)
    for group in members.values():
        if len(group) > 1 and not any(group <= declared for declared in joined):
            return sorted(group)
    return []


def scope_of(nodeid: str, joined=JOINED) -> str:
    """The unit of work a test goes out in: its module, or the first module of its JOINED set."""
    module = module_of(nodeid)
    return next((min(declared) for declared in joined if module in declared), module)
