"""Network collector: bytes and packets per interface, MTU and link state, RDMA counters.

RDMA counters come from /sys/class/infiniband/<dev>/ports/<n>/{counters,hw_counters} and are
attached to the network interface that the RDMA device backs (RoCE on a ConnectX-7); they are
rates per second in the counter's own unit (`port_xmit_data` counts 4-byte words). Flat
counters while a collective should be running are the NCCL-hang signature (RC-7); MTU
differences between nodes are the L-38 trap.
"""

from __future__ import annotations

import os
import time

from sparktriage.collect import procfs
from sparktriage.collect.base import Collector, Skip

IB_ROOT = "/sys/class/infiniband"


def _read_sys(iface: str, name: str) -> str | None:
    try:
        return procfs.read_text(f"/sys/class/net/{iface}/{name}").strip()
    except OSError:
        return None


def rdma_counter_files() -> dict[str, list[tuple[str, str]]]:
    """iface -> [(counter name, file path)] for every RDMA port that backs a net interface."""
    out: dict[str, list[tuple[str, str]]] = {}
    try:
        devices = os.listdir(IB_ROOT)
    except OSError:
        return out
    for dev in devices:
        try:
            ifaces = os.listdir(f"{IB_ROOT}/{dev}/device/net")
        except OSError:
            ifaces = [dev]
        try:
            ports = os.listdir(f"{IB_ROOT}/{dev}/ports")
        except OSError:
            continue
        files = []
        for port in ports:
            prefix = "" if len(ports) == 1 else f"p{port}."
            for group in ("counters", "hw_counters"):
                folder = f"{IB_ROOT}/{dev}/ports/{port}/{group}"
                try:
                    names = os.listdir(folder)
                except OSError:
                    continue
                files += [(prefix + n, f"{folder}/{n}") for n in sorted(names)]
        for iface in ifaces:
            out.setdefault(iface, []).extend(files)
    return out


def _read_counters(files: list[tuple[str, str]]) -> dict[str, int]:
    values = {}
    for name, path in files:
        value = procfs.read_int(path)
        if value is not None:
            values[name] = value
    return values


class NetCollector(Collector):
    name = "net"
    file = "samples/net.jsonl"

    def start(self) -> None:
        try:
            dev = procfs.netdev()
        except OSError as exc:
            raise Skip(f"cannot read /proc/net/dev ({exc.strerror})") from None
        self._rdma_files = rdma_counter_files()
        if not self._rdma_files:
            self.note = "no RDMA devices (/sys/class/infiniband empty or absent)"
        self._prev = (dev, {i: _read_counters(f) for i, f in self._rdma_files.items()},
                      time.monotonic())

    def collect(self, now: float) -> list[dict]:
        dev = procfs.netdev()
        rdma = {i: _read_counters(f) for i, f in self._rdma_files.items()}
        mono = time.monotonic()
        old_dev, old_rdma, t0 = self._prev
        self._prev = (dev, rdma, mono)
        dt = max(mono - t0, 1e-6)
        records = []
        for iface in sorted(dev):
            if iface not in old_dev:
                continue
            rb0, rp0, tb0, tp0 = old_dev[iface]
            rb1, rp1, tb1, tp1 = dev[iface]
            rates = None
            if iface in rdma:
                before = old_rdma.get(iface, {})
                rates = {k: round((v - before[k]) / dt, 2) for k, v in rdma[iface].items()
                         if k in before}
            mtu = _read_sys(iface, "mtu")
            records.append({
                "t": now, "iface": iface,
                "rx_bps": round((rb1 - rb0) / dt, 1), "tx_bps": round((tb1 - tb0) / dt, 1),
                "rx_pps": round((rp1 - rp0) / dt, 2), "tx_pps": round((tp1 - tp0) / dt, 2),
                "mtu": int(mtu) if mtu and mtu.isdigit() else None,
                "oper_state": _read_sys(iface, "operstate"),
                "rdma": rates,
            })
        return records
