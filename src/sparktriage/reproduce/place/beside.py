"""Independent servers of one input placed beside the first on the lab, each its own deployment.

An input with several independent servers (a prefill and a decode server, two compose services,
two Kubernetes workloads: importers/apart.py) gives `deployment.yaml` for the first and, for
each other one, its own deployment written to `DIR/server-N/deployment.yaml` (N = 2, 3, ...),
planned on the lab nodes the ones before it left free, so that `sparktriage launch` runs each
beside the others as the client did. A server the lab has no room for (or that makes no valid
deployment on its own) is not written: the plan's statement says why, beside the unknowns row
the importer already gave it. Each is written as the first is: the client's own addresses
replaced by the lab's, secrets as placeholders, checked for leaks before it is written.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

import yaml

from sparktriage.config.lab import Lab
from sparktriage.errors import SparktriageError
from sparktriage.reproduce.importers.apart import describe_deployment
from sparktriage.reproduce.place.labplan import place_ranks
from sparktriage.reproduce.model import Imported
from sparktriage.reproduce.place.nodemap import assign
from sparktriage.reproduce.normalize import combine
from sparktriage.reproduce.secrets import Placeholders
from sparktriage.reproduce.place.site import localize
from sparktriage.reproduce.supply import header

MAX_SERVERS = 32  # server groups of one input written beside the first


def place(imported: list[Imported], lab: Lab, lab_value: Any, order: list[str],
          used: list[str], secrets: Placeholders, out_dir: Path,
          build: Callable[[dict, Any, list, Any, list[Imported]], dict],
          write: Callable[[Path, str, Placeholders], None]) -> list[str]:
    """Write every other server group of the inputs beside the first; the plan's statements.
    `build(client_dep, site, pairs, lab_value, parts)` makes the validated deployment data and
    `write` writes a file, as the core does for the first."""
    others = [other for part in imported for other in part.others][:MAX_SERVERS]
    free = [name for name in order if name not in used]
    statements = []
    for number, part in enumerate(others, 2):
        label = describe_deployment(part.deployment)
        try:
            client_dep, client_nodes, _ = combine([part])
            client_nodes, _ = place_ranks(client_dep, client_nodes, lab, True, None,
                                          part.input.path)
        except SparktriageError as exc:
            statements.append(f"server {number} ({label}): not placed: {exc.one_line()}")
            continue
        if len(client_nodes) > len(free):
            statements.append(f"server {number} ({label}): needs {len(client_nodes)} lab "
                              f"node(s), {len(free)} left beside the server(s) before it: not "
                              "placed (give its command alone to reproduce it)")
            continue
        pairs = assign([n.name for n in client_nodes], free[:len(client_nodes)], {})
        site = localize(client_dep.get("env") or {}, client_nodes, pairs, lab,
                        client_dep.get("serve") or {}, part.input.path, client_dep.get("engine"))
        try:
            normalized = build(client_dep, site, pairs, lab_value, [part])
        except SparktriageError as exc:
            statements.append(f"server {number} ({label}): not placed: {exc.one_line()}")
            continue
        folder = out_dir / f"server-{number}"
        folder.mkdir(parents=True, exist_ok=True)
        text = yaml.safe_dump(normalized, sort_keys=False, allow_unicode=True)
        write(folder / "deployment.yaml", header(secrets.used_in(text)) + text, secrets)
        nodes = [lab_node for _, lab_node in pairs]
        free = free[len(nodes):]
        statements.append(f"server {number} ({label}) placed beside the first on "
                          f"{', '.join(nodes)}: server-{number}/deployment.yaml (launch it as "
                          "well to run both as the client does)")
    return statements
