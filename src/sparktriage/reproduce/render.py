"""The human summary of a reproduce result (a terminal-free `View`; the CLI draws it on stderr)."""

from __future__ import annotations

from sparktriage.reproduce.model import ReproduceResult
from sparktriage.view import View

SHOWN = 50  # unknowns rows on the terminal; reproduce.json keeps every one


def summary(result: ReproduceResult) -> View:
    """What was read and mapped, the lab plan, the diff by severity, traps, what to supply."""
    lines = ["read: " + ", ".join(f"{i.path} ({i.kind})" for i in result.inputs)]
    dep = result.deployment
    par = dep.get("parallelism") or {}
    lines.append(f"mapped {len(result.mapped)} setting(s): model {dep['model']['path']}, "
                 f"tp {par.get('tp')} pp {par.get('pp')} dp {par.get('dp')}, "
                 f"{len(result.client_nodes)} client node(s)")
    steps = dep.get("steps") or []
    if steps:
        lines.append(f"client steps ({len(steps)}, client code: launch runs none until they are "
                     "accepted):")
        lines += [f"  {s['name']} ({s['when']}): " + ("runnable" if s["runnable"] else
                                                      f"cannot run: {s['why']}") for s in steps]
    if result.unknown:
        lines.append(f"unknown ({len(result.unknown)}, kept and flagged):")
        lines += [f"  {u.input}: {u.text}: {u.note}" for u in result.unknown[:SHOWN]]
        if len(result.unknown) > SHOWN:
            lines.append(f"  ... and {len(result.unknown) - SHOWN} more (reproduce.json lists "
                         "them all)")
    for note in result.notes:
        lines.append(f"note: {note}")
    if result.plan is not None:
        lines.append(f"lab plan on {result.plan.lab}:")
        for node in result.plan.nodes:
            lines.append(f"  {node.client or '-'} -> {node.lab}: {' '.join(node.argv)}")
        lines += [f"  ! {s}" for s in result.plan.statements]
        if result.plan.client_code:
            lines.append(f"  runs client code ({len(result.plan.client_code)}; launch and "
                         "session refuse until each is accepted: --accept-client-code NAME):")
            lines += [f"    {c.name}: {c.what}" for c in result.plan.client_code]
    for severity in ("high", "medium", "low", "info"):
        items = [d for d in result.diff if d.severity == severity]
        if items:
            lines.append(f"diff, {severity} ({len(items)}):")
            for d in items:
                where = f" [{d.client_node or '-'} vs {d.lab_node or '-'}]" if d.lab_node else ""
                lines.append(f"  {d.key}: client {d.client!r}, lab {d.lab!r}{where}: {d.why}")
    if not result.diff:
        lines.append("diff: no difference found in what was captured")
    for name, status in sorted(result.lab_capture.items()):
        if status.startswith("not captured"):
            lines.append(f"lab capture {name}: {status}")
    for trap in result.traps:
        open_ = f", possible: unknown {', '.join(trap.unknown_facts)}" if trap.status == "possible" else ""
        lines.append(f"trap {trap.id} ({trap.severity}{open_}): {trap.setting}: {trap.why} "
                     f"Fix: {trap.fix}")
    if result.placeholders:
        lines.append("supply on the lab: " + ", ".join(result.placeholders)
                     + " (placeholders <supply:NAME> in deployment.yaml)")
    lines.append(f"wrote {result.out_dir}/deployment.yaml and {result.out_dir}/reproduce.json")
    return View.of_lines(lines)
