"""GPU collector: utilisation, power, clocks, temperature, memory and throttle reasons via NVML.

Utilisation alone misleads: a collective spinning in NCCL shows ~96 % utilisation at ~20 W
(field-reports RC-7), so power and clocks are always recorded beside it. GB10 has unified
memory and answers `nvmlDeviceGetMemoryInfo` with NotSupported; the collector then reports
system memory (MemTotal, MemTotal - MemAvailable) with `mem_source: "unified-system"`.
Degradations are recorded, never raised: no pynvml, no driver, a call a board does not support.
"""

from __future__ import annotations

from sparktriage.collect import procfs
from sparktriage.collect.base import Collector, Skip
from sparktriage.collect.nvml import NvmlError, NvmlSource, PynvmlSource

THROTTLE_BITS = (
    (0x1, "gpu_idle"), (0x2, "applications_clocks"), (0x4, "sw_power_cap"),
    (0x8, "hw_slowdown"), (0x10, "sync_boost"), (0x20, "sw_thermal"), (0x40, "hw_thermal"),
    (0x80, "hw_power_brake"), (0x100, "display_clock"),
)


def throttle_names(mask: int) -> list[str]:
    return [name for bit, name in THROTTLE_BITS if mask & bit]


def open_source(kind: str) -> NvmlSource:
    """The NVML source named in the plan; raises Skip with the reason when there is none."""
    if kind == "none":
        raise Skip("GPU collection disabled in the plan")
    try:
        source = PynvmlSource()
    except ImportError:
        raise Skip("nvidia-ml-py (pynvml) is not available on the node") from None
    return source


def unified_memory() -> tuple[int, int]:
    """(used, total) bytes of system memory: what a unified-memory GPU can use."""
    mem = procfs.meminfo()
    total = mem.get("MemTotal", 0)
    return total - mem.get("MemAvailable", 0), total


def inventory(source: NvmlSource, count: int) -> list[dict]:
    """Static facts per GPU for the environment capture: name, compute capability, memory."""
    gpus = []
    for index in range(count):
        row: dict = {"index": index}
        for key, call in (("name", "nvmlDeviceGetName"), ("uuid", "nvmlDeviceGetUUID"),
                          ("compute_capability", "nvmlDeviceGetCudaComputeCapability"),
                          ("power_limit_mw", "nvmlDeviceGetEnforcedPowerLimit")):
            try:
                value = source.query(index, call)
                row[key] = ".".join(str(v) for v in value) if key == "compute_capability" else value
            except NvmlError as exc:
                row[key] = None if exc.not_supported else f"error: {exc.name}"
        try:
            row["memory_total"] = source.query(index, "nvmlDeviceGetMemoryInfo")["total"]
            row["memory"] = "dedicated"
        except NvmlError as exc:
            row["memory_total"] = unified_memory()[1] if exc.not_supported else None
            row["memory"] = "unified" if exc.not_supported else f"error: {exc.name}"
        gpus.append(row)
    return gpus


class GpuCollector(Collector):
    name = "gpu"
    file = "samples/gpu.jsonl"

    def __init__(self, spec, ctx, source: NvmlSource | None = None) -> None:
        super().__init__(spec, ctx)
        self._source = source

    def start(self) -> None:
        if self._source is None:
            self._source = open_source(self.options.get("source", "auto"))
        try:
            self.info = self._source.init()
        except NvmlError as exc:
            raise Skip(f"no NVIDIA GPU or driver (NVML: {exc.text or exc.name})") from None
        self._count = int(self.info.get("device_count") or 0)
        if self._count == 0:
            raise Skip("NVML reports no GPU")
        self._unsupported: set[str] = set()

    def _get(self, index: int, call: str, errors: list):
        try:
            return self._source.query(index, call)
        except NvmlError as exc:
            if exc.not_supported:
                self._unsupported.add(call)
            else:
                errors.append(f"{call}: {exc.name}")
            return None

    def collect(self, now: float) -> list[dict]:
        self._source.begin_sample()
        records = []
        errors: list[str] = []
        for index in range(self._count):
            util = self._get(index, "nvmlDeviceGetUtilizationRates", errors) or {}
            power = self._get(index, "nvmlDeviceGetPowerUsage", errors)
            limit = self._get(index, "nvmlDeviceGetEnforcedPowerLimit", errors)
            reasons = self._get(index, "nvmlDeviceGetCurrentClocksEventReasons", errors)
            if reasons is None:
                reasons = self._get(index, "nvmlDeviceGetCurrentClocksThrottleReasons", errors)
            try:
                memory = self._source.query(index, "nvmlDeviceGetMemoryInfo")
                used, total, mem_source = memory["used"], memory["total"], "nvml"
            except NvmlError as exc:
                if exc.not_supported:
                    (used, total), mem_source = unified_memory(), "unified-system"
                else:
                    used = total = mem_source = None
                    errors.append(f"nvmlDeviceGetMemoryInfo: {exc.name}")
            records.append({
                "t": now, "index": index,
                "name": self._get(index, "nvmlDeviceGetName", errors),
                "util_pct": util.get("gpu"), "mem_util_pct": util.get("memory"),
                "power_w": None if power is None else round(power / 1000.0, 3),
                "sm_clock_mhz": self._get(index, "nvmlDeviceGetClockInfo(NVML_CLOCK_SM)", errors),
                "mem_clock_mhz": self._get(index, "nvmlDeviceGetClockInfo(NVML_CLOCK_MEM)",
                                           errors),
                "temp_c": self._get(index, "nvmlDeviceGetTemperature(NVML_TEMPERATURE_GPU)",
                                    errors),
                "mem_used": used, "mem_total": total, "mem_source": mem_source,
                "throttle_reasons": None if reasons is None else throttle_names(reasons),
                "power_limit_w": None if limit is None else round(limit / 1000.0, 3),
                "pstate": self._get(index, "nvmlDeviceGetPerformanceState", errors),
                "uuid": self._get(index, "nvmlDeviceGetUUID", errors),
            })
        if self._unsupported:
            self.note = "not supported by this GPU: " + ", ".join(sorted(self._unsupported))
        if errors:
            self.last_error = "; ".join(errors[:3])
        return records

    def stop(self) -> list[dict]:
        if self._source is not None:
            self._source.shutdown()
        return []
