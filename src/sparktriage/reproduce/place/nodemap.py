"""`--node-map CLIENT=LAB,...`: which lab node stands in for which client node."""

from __future__ import annotations

from sparktriage.errors import UsageError


def parse_node_map(text: str | None) -> dict[str, str]:
    if not text:
        return {}
    out: dict[str, str] = {}
    for part in text.split(","):
        client, eq, lab = part.strip().partition("=")
        if not eq or not client or not lab:
            raise UsageError(f"--node-map: {part.strip()!r} is not CLIENT=LAB")
        if client in out:
            raise UsageError(f"--node-map: client node {client} mapped twice")
        if lab in out.values():
            raise UsageError(f"--node-map: lab node {lab} used twice")
        out[client] = lab
    return out


def assign(client: list[str], lab: list[str], mapping: dict[str, str]) -> list[tuple[str | None, str]]:
    """[(client node, lab node)] in client order; extra client nodes get none (fewer lab nodes)."""
    for name in mapping:
        if name not in client:
            raise UsageError(f"--node-map: {name} is not a client node ({', '.join(client)})")
    for name in mapping.values():
        if name not in lab:
            raise UsageError(f"--node-map: {name} is not a lab node ({', '.join(lab)})")
    free = [n for n in lab if n not in mapping.values()]
    pairs: list[tuple[str | None, str]] = []
    for name in client or [None]:
        if name in mapping:
            pairs.append((name, mapping[name]))
        elif free:
            pairs.append((name, free.pop(0)))
    return pairs
