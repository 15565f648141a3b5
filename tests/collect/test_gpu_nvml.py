"""GPU collector on recorded NVML answers (a real H200, and GB10 emulated from it), and real
NVML on this GPU-less machine (which must degrade with its reason)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sparktriage.collect import procfs
from sparktriage.collect.base import Context, Skip
from sparktriage.collect.environment import EnvironmentCollector
from sparktriage.collect.gpu import GpuCollector, inventory, throttle_names
from sparktriage.collect.nvml import PynvmlSource, RecordedSource
from sparktriage.collect.plan import CollectorSpec
from sparktriage.redact.capture import Redactor
from sparktriage.bundle.records import GpuSample, field_names

RECORDING = json.loads((Path(__file__).resolve().parents[1] / "fixtures" / "nvml" /
                        "h200-recorded.json").read_text())
NOT_SUPPORTED = {"error": "NVMLError_NotSupported", "code": 3, "text": "Not Supported"}
GB10 = {  # what a GB10 answers differently (field-reports, vllm-mechanics §10; README there)
    "nvmlDeviceGetName": {"ok": "NVIDIA GB10"},
    "nvmlDeviceGetCudaComputeCapability": {"ok": [12, 1]},
    "nvmlDeviceGetMemoryInfo": NOT_SUPPORTED,
    "nvmlDeviceGetBAR1MemoryInfo": NOT_SUPPORTED,
}


def _collector(source) -> GpuCollector:
    ctx = Context("n", lambda: [], Redactor(b"k" * 16))
    collector = GpuCollector(CollectorSpec("gpu", 1.0, 10.0, {}), ctx, source=source)
    collector.start()
    return collector


def _samples(collector, count: int) -> list[dict]:
    return [collector.collect(float(i))[0] for i in range(count)]


def test_h200_recording_replays_into_gpu_records():
    samples = _samples(_collector(RecordedSource(RECORDING)), len(RECORDING["samples"]))
    assert all(set(s) == field_names(GpuSample) for s in samples)
    idle, busy = samples[0], samples[-1]
    calls = RECORDING["samples"][-1]["devices"][0]["calls"]
    assert busy["util_pct"] == calls["nvmlDeviceGetUtilizationRates"]["ok"]["gpu"] == 100
    assert busy["power_w"] == calls["nvmlDeviceGetPowerUsage"]["ok"] / 1000.0
    assert busy["sm_clock_mhz"] == calls["nvmlDeviceGetClockInfo(NVML_CLOCK_SM)"]["ok"]
    assert busy["power_limit_w"] == 700.0 and busy["name"] == "NVIDIA H200"
    assert idle["mem_source"] == "nvml"
    assert idle["mem_total"] == RECORDING["samples"][0]["devices"][0]["calls"][
        "nvmlDeviceGetMemoryInfo"]["ok"]["total"]
    assert idle["throttle_reasons"] == ["gpu_idle"] and idle["util_pct"] == 0


def test_gb10_memory_not_supported_falls_back_to_unified_system_memory():
    collector = _collector(RecordedSource(RECORDING, overrides=GB10))
    (sample,) = _samples(collector, 1)
    mem = procfs.meminfo()
    assert sample["name"] == "NVIDIA GB10" and sample["mem_source"] == "unified-system"
    assert sample["mem_total"] == mem["MemTotal"]
    assert abs(sample["mem_used"] - (mem["MemTotal"] - mem["MemAvailable"])) < 512 << 20
    assert sample["power_w"] is not None and sample["util_pct"] is not None
    assert collector.last_error is None  # NotSupported is a fact, not a failure
    gpus = inventory(RecordedSource(RECORDING, overrides=GB10), 1)
    assert gpus[0]["compute_capability"] == "12.1" and gpus[0]["memory"] == "unified"


def test_unsupported_and_failing_calls_are_recorded_not_raised():
    failing = {"nvmlDeviceGetTemperature(NVML_TEMPERATURE_GPU)":
               {"error": "NVMLError_GpuIsLost", "code": 15, "text": "GPU is lost"},
               "nvmlDeviceGetPowerUsage": NOT_SUPPORTED}
    collector = _collector(RecordedSource(RECORDING, overrides=failing))
    (sample,) = _samples(collector, 1)
    assert sample["temp_c"] is None and sample["power_w"] is None
    assert "NVMLError_GpuIsLost" in collector.last_error
    assert "nvmlDeviceGetPowerUsage" in collector.note


def test_no_driver_skips_with_the_reason():
    init_error = {"error": "NVMLError_DriverNotLoaded", "code": 9, "text": "Driver Not Loaded"}
    ctx = Context("n", lambda: [], Redactor(b"k" * 16))
    with pytest.raises(Skip, match="Driver Not Loaded"):
        GpuCollector(CollectorSpec("gpu", 1.0, 10.0, {}), ctx,
                     source=RecordedSource(RECORDING, init_error=init_error)).start()


def test_real_nvml_on_this_machine_degrades():
    """No GPU here: the real library must say so, and the collector must turn it into a reason."""
    ctx = Context("n", lambda: [], Redactor(b"k" * 16))
    collector = GpuCollector(CollectorSpec("gpu", 1.0, 10.0, {"source": "auto"}), ctx)
    if Path("/proc/driver/nvidia/version").exists():
        pytest.skip("this machine has an NVIDIA driver")
    with pytest.raises(Skip, match="no NVIDIA GPU or driver"):
        collector.start()
    assert isinstance(PynvmlSource(), PynvmlSource)  # nvidia-ml-py itself is installed


def test_environment_lists_gpus_from_nvml():
    ctx = Context("n", lambda: [], Redactor(b"k" * 16))
    env = EnvironmentCollector(CollectorSpec("environment", None, 10.0,
                                             {"wait_for_target_s": 0}), ctx,
                               source=RecordedSource(RECORDING, overrides=GB10))
    (doc,) = env.collect(0.0)
    assert doc["gpus"][0]["name"] == "NVIDIA GB10" and doc["gpus"][0]["memory"] == "unified"
    assert doc["driver"]["driver_version"] == RECORDING["driver_version"]


def test_throttle_reason_bits():
    assert throttle_names(0) == []
    assert throttle_names(0x1 | 0x4 | 0x40) == ["gpu_idle", "sw_power_cap", "hw_thermal"]
