"""The client's own addresses and interfaces: replaced by the lab's, or dropped with a row.

A variable or option that names one of the client's hosts or NICs is right for the client's
network only. Such settings are found by name and value (docs/reproduce.md, "Addresses and
interfaces of the client"):

- addresses: `VLLM_HOST_IP`, `MASTER_ADDR`, `RAY_ADDRESS`, and any name ending in `_IP`,
  `_IPS`, `_ADDR`, `_ADDRESS` (HEAD_IP, HEAD_NODE_IP, WORKER_IP, ...) whose value is not a
  wildcard, loopback or `auto`; a name ending in `_HOST`/`_HOSTNAME`/`_NODE`/`_SERVER` whose
  value holds an IP address; any variable whose value holds an address of a client node;
- interfaces: `*_SOCKET_IFNAME`, `OMPI_MCA_*_if_include`, names ending in `_IFNAME`, `_IFACE`,
  `_IF`, `_INTERFACE(S)`, `_NIC` (an exclusion list `^lo,docker` is portable and kept);
- RDMA devices: `UCX_NET_DEVICES`, `NCCL_IB_HCA`, names ending in `_NET_DEVICES`, `_HCA`.

An address is mapped to the lab node that stands for the client node owning it (a node's own
`VLLM_HOST_IP`-like value; the head's for HEAD/MASTER names, `--master-addr` and
`RAY_ADDRESS`), ports kept; an interface list becomes as many of the lab node's listed
`interfaces`. Where the lab YAML's node env sets the variable, the lab's value applies. What
cannot be mapped (an address of no known node, RDMA device names the lab YAML does not list)
is dropped with an unknowns row saying why. `serve.host` and `data-parallel-address` naming
a client address become the lab head's address.
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass, field

from sparktriage.config.lab import Lab
from sparktriage.reproduce.model import ClientNode, Unknown
from sparktriage.reproduce.secrets import PREFIX

ADDRESS = re.compile(r"(^|_)(IPS?|ADDR|ADDRESS)$", re.IGNORECASE)
HOSTISH = re.compile(r"(^|_)(HOST|HOSTNAME|HOSTS|NODE|NODES|SERVER)$", re.IGNORECASE)
INTERFACE = re.compile(r"(^|_)(IFNAME|IFACE|IF|INTERFACES?|NIC|IF_INCLUDE)$", re.IGNORECASE)
DEVICE = re.compile(r"(^|_)(NET_DEVICES|HCA)$", re.IGNORECASE)
HEADISH = re.compile(r"HEAD|MASTER|LEADER|PRIMARY|COORD|RAY_ADDRESS", re.IGNORECASE)
OWN = re.compile(r"^(VLLM_)?(HOST|NODE|MY|LOCAL|SELF|THIS|POD)_?IP(_ADDRESS)?\Z",
                 re.IGNORECASE)
IP = re.compile(r"(?<![\w.])\d{1,3}(?:\.\d{1,3}){3}(?![\w.])"
                r"|(?<![\w.:])\[?[0-9A-Fa-f]{0,4}(?::[0-9A-Fa-f]{0,4}){2,7}\]?(?![\w.])")
HOSTNAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9.-]*(:\d+)?\Z")
LOCAL = {"", "0.0.0.0", "::", "[::]", "127.0.0.1", "::1", "localhost", "auto", "*", "lo"}
KNOWN = {"VLLM_HOST_IP": "address", "MASTER_ADDR": "address", "RAY_ADDRESS": "address",
         "VLLM_LOOPBACK_IP": "address", "NCCL_SOCKET_IFNAME": "interface",
         "GLOO_SOCKET_IFNAME": "interface", "TP_SOCKET_IFNAME": "interface",
         "OMPI_MCA_btl_tcp_if_include": "interface", "OMPI_MCA_oob_tcp_if_include": "interface",
         "UCX_NET_DEVICES": "device", "NCCL_IB_HCA": "device"}


def _ips(value: str) -> list[str]:
    out = []
    for match in IP.findall(value):
        try:
            ipaddress.ip_address(match.strip("[]"))
        except ValueError:
            continue
        out.append(match)
    return out


def _swap(value: str, ip: str, host: str) -> str:
    """`value` with the address `ip` (a whole address, not part of a longer one) as `host`."""
    before = r"(?<![\w.:])" if ":" in ip else r"(?<![\w.])"
    return re.sub(before + re.escape(ip) + r"(?![\w.])", lambda _m: host, value)


def _local(ip: str) -> bool:
    address = ipaddress.ip_address(ip.strip("[]"))
    return address.is_loopback or address.is_unspecified


def kind(name: str, value: str, owned: set[str] = frozenset()) -> str | None:
    """The kind of site setting: `address`, `interface`, `device`, or None (a setting the lab
    can take as it is)."""
    bare = value.strip()
    placeholder = bare.startswith(PREFIX)
    known = KNOWN.get(name)
    if known in ("interface", "device") or (known is None and (INTERFACE.search(name)
                                                               or DEVICE.search(name))):
        if bare.startswith("^") or bare in LOCAL or bare.lower() == "all":
            return None
        if known is None and bare.isdigit():
            # a number is no interface: NCCL_CROSS_NIC=1 (a 0/1/2 policy) names no NIC
            return None
        if known == "device" or (known is None and DEVICE.search(name)):
            # UCX_NET_DEVICES takes interface names too (TCP); `mlx5_0:1` is an RDMA port
            tcp = not name.upper().endswith("HCA") and not placeholder and ":" not in bare
            return "interface" if tcp else "device"
        return known or "interface"
    ips = _ips(bare)
    if known == "address" or ADDRESS.search(name):
        if placeholder or (ips and not all(map(_local, ips))):
            return "address"
        if HOSTNAME.match(bare) and bare.rsplit(":", 1)[0].lower() not in LOCAL and not ips:
            return "address"
        return None
    if any(not _local(ip) for ip in ips) and (HOSTISH.search(name) or set(ips) & owned):
        return "address"
    return None


@dataclass
class Localized:
    """What the written deployment gets instead of the client's site settings."""

    env: dict[str, str]  # the common env, site settings taken out
    own: dict[str, dict[str, str]] = field(default_factory=dict)  # client node -> its own env
    node_env: dict[str, dict[str, str]] = field(default_factory=dict)  # lab node -> lab values
    serve: dict = field(default_factory=dict)  # serve section with lab addresses
    engine: dict = field(default_factory=dict)  # engine section with lab addresses
    unknown: list[Unknown] = field(default_factory=list)
    replaced: list[str] = field(default_factory=list)
    dropped: list[str] = field(default_factory=list)

    def statement(self) -> str | None:
        if not self.replaced and not self.dropped:
            return None
        parts = []
        if self.replaced:
            parts.append("replaced by the lab's: " + "; ".join(self.replaced))
        if self.dropped:
            parts.append("not carried: " + "; ".join(self.dropped))
        return ("the client's own addresses and interfaces (right for its network only): "
                + ". ".join(parts))


def _owners(nodes: list[ClientNode], common: dict[str, str],
            serve: dict | None = None) -> dict[str, str]:
    """Client address -> the client node it belongs to (a node's own VLLM_HOST_IP-like value;
    the head's for HEAD/MASTER names, `--master-addr`, the server's `--host` and
    `--data-parallel-address`)."""
    owners: dict[str, str] = {}
    ordered = sorted(nodes, key=lambda n: n.rank)
    for node in ordered:
        env = {**common, **node.env}
        for name, value in env.items():
            if OWN.match(name):
                for ip in _ips(value):
                    owners.setdefault(ip.strip("[]"), node.name)
    head = ordered[0].name if ordered else None
    for node in ordered:
        env = {**common, **node.env}
        values = [v for k, v in env.items() if HEADISH.search(k)] + [node.master_addr or ""]
        if node is ordered[0] and serve:
            values += [str(serve.get("host") or ""),
                       str((serve.get("flags") or {}).get("data-parallel-address") or "")]
        for value in values:
            for ip in _ips(value):
                if head:
                    owners.setdefault(ip.strip("[]"), head)
    return owners


class _Mapper:
    def __init__(self, nodes: list[ClientNode], common: dict[str, str],
                 pairs: list[tuple[str | None, str]], lab: Lab, serve: dict) -> None:
        self.owners = _owners(nodes, common, serve)
        self.lab_of = {client: lab_node for client, lab_node in pairs if client}
        self.hosts = {n.name: n.host for n in lab.nodes}
        self.head = pairs[0][1] if pairs else None

    def address(self, name: str, value: str, client: str | None) -> tuple[str | None, str]:
        """(the lab's value, why) or (None, why not)."""
        own = self.lab_of.get(client or "") or (self.head if client is None else None)
        if value.strip().startswith(PREFIX) or not _ips(value):
            if HEADISH.search(name) and self.head:
                return self._port(self.hosts[self.head], value), f"{self.head}'s host (the head)"
            if OWN.match(name) and own:
                return self.hosts[own], f"{own}'s host"
            return None, ("an address known only on the client (no lab node stands for it): "
                          "set it in the lab YAML's node env if the lab needs it")
        out = value
        said = []
        for ip in _ips(value):
            owner = self.owners.get(ip.strip("[]"))
            lab_node = self.lab_of.get(owner or "")
            if lab_node is None and HEADISH.search(name):
                lab_node = self.head
            if lab_node is None and OWN.match(name):
                lab_node = own
            if lab_node is None:
                return None, (f"{ip} is not an address of a client node this tool places on "
                              "the lab: set it in the lab YAML's node env if the lab needs it")
            host = self.hosts[lab_node]
            out = _swap(out, ip, host)
            said.append(f"{lab_node}'s host")
        return out, ", ".join(dict.fromkeys(said))

    @staticmethod
    def _port(host: str, value: str) -> str:
        port = re.search(r":(\d+)\s*$", value)
        return f"{host}:{port.group(1)}" if port else host


def localize(common: dict[str, str], nodes: list[ClientNode],
             pairs: list[tuple[str | None, str]], lab: Lab, serve: dict,
             source: str, engine: dict | None = None) -> Localized:
    """The client's site settings replaced by the lab's or dropped with a row (module doc)."""
    mapper = _Mapper(nodes, common, pairs, lab, serve)
    owned = set(mapper.owners)
    by_name = {n.name: n for n in nodes}
    lab_nodes = {n.name: n for n in lab.nodes}
    out = Localized(env={k: v for k, v in common.items() if not kind(k, v, owned)},
                    own={n.name: {k: v for k, v in n.env.items() if not kind(k, v, owned)}
                         for n in nodes})
    seen: set[tuple[str, str]] = set()
    for client, lab_node in pairs:
        node = by_name.get(client or "")
        env = {**common, **(node.env if node else {})}
        for name, value in env.items():
            what = kind(name, value, owned)
            if what is None:
                continue
            lab_env = lab_nodes[lab_node].env
            where = f"{client or 'client'} -> {lab_node}"
            if name in lab_env:
                out.replaced.append(f"{name} ({where}: the lab YAML's {lab_env[name]})")
                continue
            if what == "address":
                new, why = mapper.address(name, value, client)
                if node is not None and node.assumed and OWN.match(name):
                    new, why = mapper.hosts[lab_node], f"{lab_node}'s host (a node of its own)"
            elif what == "interface" and lab_nodes[lab_node].interfaces:
                count = max(1, len([i for i in value.lstrip("=").split(",") if i]))
                new = ("=" if value.startswith("=") else "") + ",".join(
                    lab_nodes[lab_node].interfaces[:count])
                why = f"{lab_node}'s interfaces in the lab YAML"
            else:
                new = None
                why = ("the client's RDMA device names; the lab YAML does not list its own"
                       if what == "device" else f"the lab YAML lists no interfaces for "
                       f"{lab_node}") + ": set it in the lab YAML's node env if the lab needs it"
            if new is not None:
                out.node_env.setdefault(lab_node, {})[name] = new
                out.replaced.append(f"{name} ({where}: {value} -> {new}, {why})")
            else:
                out.dropped.append(f"{name} ({where}: {value})")
                if (name, value) not in seen:
                    seen.add((name, value))
                    out.unknown.append(Unknown(
                        input=node.input if node else source, text=f"{name}={value}",
                        note=f"env of {client or 'the client'}: the client's own "
                             f"{'address' if what == 'address' else what}, not carried to "
                             f"the lab ({why})"))
    out.serve = _serve(serve, mapper, out)
    out.engine = _engine(engine or {}, mapper, out)
    return out


def _serve(serve: dict, mapper: _Mapper, out: Localized) -> dict:
    """`--host` and `--data-parallel-address` naming a client address: the lab head's."""
    serve = dict(serve)
    head = mapper.head
    if head is None:
        return serve
    host = serve.get("host")
    if isinstance(host, str) and host.strip().lower() not in LOCAL and \
            not (_ips(host) and all(map(_local, _ips(host)))):
        serve["host"] = mapper.hosts[head]
        out.replaced.append(f"--host ({host} -> {serve['host']}, {head}'s host: the server "
                            "runs on the head)")
    flags = dict(serve.get("flags") or {})
    for flag in ("data-parallel-address", "master-addr"):
        value = flags.get(flag)
        if isinstance(value, str) and kind("ADDRESS", value) == "address":
            flags[flag] = mapper.hosts[head]
            out.replaced.append(f"--{flag} ({value} -> {flags[flag]}, {head}'s host)")
    for key, value in list(flags.items()):
        if isinstance(value, str):
            flags[key] = _owned(value, f"--{key}", mapper, out)
    if flags:
        serve["flags"] = flags
    if serve.get("extra_args"):
        serve["extra_args"] = [_owned(a, "serve.extra_args", mapper, out)
                               for a in serve["extra_args"]]
    return serve


def _engine(engine: dict, mapper: _Mapper, out: Localized) -> dict:
    """Container and Ray arguments holding a client node's address: the lab node's."""
    engine = dict(engine)
    for key in ("container_args", "ray_args"):
        if engine.get(key):
            engine[key] = [_owned(a, f"engine.{key}", mapper, out) if isinstance(a, str) else a
                           for a in engine[key]]
    return engine


def _owned(value: str, where: str, mapper: _Mapper, out: Localized) -> str:
    """`value` with each address of a client node replaced by its lab node's host (a JSON
    option, a container argument): only addresses known to be a node's are touched."""
    new = value
    for ip in _ips(value):
        lab_node = mapper.lab_of.get(mapper.owners.get(ip.strip("[]"), ""))
        if lab_node is not None:
            host = mapper.hosts[lab_node]
            new = _swap(new, ip, host)
    if new != value:
        out.replaced.append(f"{where} ({value[:80]} -> {new[:80]})")
    return new
