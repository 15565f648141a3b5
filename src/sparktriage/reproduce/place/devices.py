"""The client's GPU device lists, mapped onto each lab node's own GPUs.

`CUDA_VISIBLE_DEVICES` and `NVIDIA_VISIBLE_DEVICES` choose GPUs by index (or UUID) on the
client's machines; docker's `--gpus device=4,5` / `--gpus 2` and compose's GPU reservations
with `device_ids` / `count` reach the container as `NVIDIA_VISIBLE_DEVICES` (the importers
write them so). Copied onto a lab node such a list may name GPUs the node does not have: a
GB10 node has one GPU, index 0, and `=7` or `=4,5,6,7` there hides it. So each lab node gets
the first k of its own GPUs, k being how many the client pinned (at most what the node has);
`all`, `none`, `void` and an empty value mean the same everywhere and are kept. An index (or
count) the node does not have is an unknowns row and the fact behind the
`device-index-not-on-node` trap; the client's value stays in the client's environment, so the
diff shows both. A value the lab YAML's node env sets wins, as for addresses (place/site.py).

A job launcher's GPU request is a count per node as well: a SLURM job's `--gres=gpu:4`,
`--gpus-per-node`, `--gpus-per-task` x tasks per node or `--gpus` over its nodes (its `#SBATCH`
header or the server's `srun` line, importers/slurm.py). More GPUs per node than a lab node has
is a row and the same trap, naming the job and the option (`asked_gpus`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from sparktriage.config.lab import Lab
from sparktriage.reproduce.model import ClientNode, Unknown
from sparktriage.reproduce.secrets import PREFIX
from sparktriage.reproduce.place.site import Localized

VARIABLES = ("CUDA_VISIBLE_DEVICES", "NVIDIA_VISIBLE_DEVICES")
SAME_EVERYWHERE = {"all", "none", "void", ""}


@dataclass
class Pinned:
    """What the plan makes of the device lists (the trap facts read `missing`)."""

    missing: list[str] = field(default_factory=list)  # "lab node: VAR=value (n GPUs)" each
    known: bool = False  # some pin was compared against a node's known GPU count
    replaced: list[str] = field(default_factory=list)

    def statement(self) -> str | None:
        if not self.replaced:
            return None
        return ("the client's GPU device lists, mapped onto each lab node's own GPUs: "
                + "; ".join(self.replaced))

    def facts(self) -> dict:
        if not self.known:
            return {}
        return {"lab.device_index_missing": bool(self.missing),
                "lab.device_index_missing_list": "; ".join(self.missing)}


def _entries(value: str) -> list[str]:
    return [e.strip() for e in value.split(",") if e.strip()]


def _indices(entries: list[str]) -> list[int] | None:
    """The entries as indices; None when some are UUIDs (`GPU-...`, `MIG-...`)."""
    return [int(e) for e in entries] if all(e.isdigit() for e in entries) else None


def map_devices(site: Localized, nodes: list[ClientNode],
                pairs: list[tuple[str | None, str]], lab: Lab, source: str) -> Pinned:
    """Take the device lists out of the copied environment and give each lab node its own
    (module doc); `site` is changed in place."""
    pinned = Pinned()
    by_name = {n.name: n for n in nodes}
    lab_nodes = {n.name: n for n in lab.nodes}
    common = dict(site.env)
    rows: set[tuple[str, str]] = set()
    for name in VARIABLES:
        value = common.get(name)
        if value is not None and not _portable(value):
            site.env.pop(name, None)  # each lab node gets its own below
        for client, lab_node in pairs:
            own = site.own.get(client or "", {})
            value = own.get(name, common.get(name))
            if value is None or _portable(value):
                continue
            node = lab_nodes[lab_node]
            where = f"{client or 'client'} -> {lab_node}"
            if name in node.env:
                pinned.replaced.append(f"{name} ({where}: the lab YAML's {node.env[name]})")
                own.pop(name, None)
                continue
            entries = _entries(value)
            indices = _indices(entries)
            count = node.gpu_count()
            if count is None:
                new = ",".join(str(i) for i in range(len(entries)))
                why = f"the first {len(entries)} GPU(s) of {lab_node}; its GPU count is not known"
            else:
                pinned.known = True
                new = ",".join(str(i) for i in range(min(len(entries), count))) or value
                why = f"{lab_node} has {count} GPU{'s' if count != 1 else ''}"
                beyond = [e for e in entries if indices is None or int(e) >= count]
                if len(entries) > count or (indices is not None and beyond):
                    pinned.missing.append(f"{lab_node}: {name}={value} ({count} GPU"
                                          f"{'s' if count != 1 else ''} there)")
                    key = (name, value)
                    if key not in rows:
                        rows.add(key)
                        input_ = by_name[client].input if client in by_name else source
                        site.unknown.append(Unknown(
                            input=input_, text=f"{name}={value}",
                            note=f"env of {client or 'the client'}: pins GPU(s) {value}; "
                                 f"{why} (index 0{'' if count == 1 else f'..{count - 1}'}): "
                                 f"the plan gives it {name}={new} there"))
            if indices is None:
                why += "; the client's list names GPUs by UUID"
            site.node_env.setdefault(lab_node, {})[name] = new
            pinned.replaced.append(f"{name} ({where}: {value} -> {new}, {why})")
            own.pop(name, None)
    return pinned


def _portable(value: str) -> bool:
    """A value that means the same on any node (`all`, `none`), or one known only at run
    time (a placeholder to supply)."""
    return value.strip().lower() in SAME_EVERYWHERE or value.strip().startswith(PREFIX)


def asked_gpus(pinned: Pinned, site: Localized, asked: tuple[int, str, str] | None,
               pairs: list[tuple[str | None, str]], lab: Lab, source: str) -> None:
    """Compare the GPUs per node a job asks for, `asked` = (count, the option as written,
    the job's shape), with each used lab node's own; `pinned` and `site` are changed in
    place."""
    if asked is None:
        return
    count_asked, option, shape = asked
    lab_nodes = {n.name: n for n in lab.nodes}
    short = []
    for _, lab_node in pairs:
        count = lab_nodes[lab_node].gpu_count()
        if count is None:
            continue
        pinned.known = True
        if count_asked > count:
            gpus = f"{count} GPU{'s' if count != 1 else ''}"
            pinned.missing.append(f"{lab_node}: {shape} asks {count_asked} GPUs per node "
                                  f"({option}; {gpus} there)")
            short.append(f"{lab_node} has {gpus}")
    if short:
        site.unknown.append(Unknown(
            input=source, text=option,
            note=f"{shape} asks {count_asked} GPUs per node; {', '.join(short)}: the plan "
                 "places one rank per lab GPU instead"))
