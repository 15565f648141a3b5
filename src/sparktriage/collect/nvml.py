"""Where GPU answers come from: real NVML through pynvml, or a recording of real answers.

The GPU collector only talks to an `NvmlSource`: `init()` once, `query(index, call)` per value,
where `call` is the NVML function name with its constant arguments, e.g.
`nvmlDeviceGetClockInfo(NVML_CLOCK_SM)`; a failed call raises `NvmlError` with NVML's class
name and code (3 = NotSupported). `PynvmlSource` calls the real library; `RecordedSource`
replays the answers that tests/fixtures/nvml/record_nvml.py recorded on real GPUs, in the
same shape (ctypes structures become dicts), so the collector is tested on real answers on a
machine with no GPU.
"""

from __future__ import annotations

import re
from typing import Any

NOT_SUPPORTED = 3
_CALL = re.compile(r"^(nvml\w+)(?:\(([\w,]*)\))?\Z")


class NvmlError(Exception):
    """An NVML call failed: `name` is pynvml's error class name, `code` NVML's return code."""

    def __init__(self, name: str, code: int | None, text: str = "") -> None:
        super().__init__(f"{name}: {text or code}")
        self.name = name
        self.code = code
        self.text = text

    @property
    def not_supported(self) -> bool:
        return self.code == NOT_SUPPORTED or self.name.endswith("NotSupported")


def plain(value: Any) -> Any:
    """JSON-able form of an NVML return value (the same conversion the recorder applies)."""
    if isinstance(value, bytes):
        return value.decode(errors="replace")
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    fields = getattr(value, "_fields_", None)
    if fields:
        return {name: plain(getattr(value, name)) for name, *_ in fields}
    if hasattr(value, "__dict__"):
        return {k: plain(v) for k, v in vars(value).items() if not k.startswith("_")}
    return repr(value)


class NvmlSource:
    """Interface of an NVML answer source."""

    def init(self) -> dict:
        """Start NVML; return {driver_version, cuda_driver_version, nvml_version, device_count}."""
        raise NotImplementedError

    def begin_sample(self) -> None:
        """Called before each round of queries (a recording moves to its next sample)."""

    def query(self, index: int, call: str) -> Any:
        raise NotImplementedError

    def shutdown(self) -> None:
        """Release NVML."""


class PynvmlSource(NvmlSource):
    """Real NVML, via nvidia-ml-py. Raises ImportError when pynvml is not installed."""

    def __init__(self) -> None:
        import pynvml  # noqa: PLC0415 - optional on the node

        self._nv = pynvml
        self._handles: dict[int, Any] = {}

    def _wrap(self, exc: Exception) -> NvmlError:
        return NvmlError(type(exc).__name__, getattr(exc, "value", None), str(exc))

    def init(self) -> dict:
        nv = self._nv
        try:
            nv.nvmlInit()
            info = {"driver_version": plain(nv.nvmlSystemGetDriverVersion()),
                    "device_count": nv.nvmlDeviceGetCount()}
        except nv.NVMLError as exc:
            raise self._wrap(exc) from None
        for key, fn in (("cuda_driver_version", "nvmlSystemGetCudaDriverVersion"),
                        ("nvml_version", "nvmlSystemGetNVMLVersion")):
            try:
                info[key] = plain(getattr(nv, fn)())
            except (nv.NVMLError, AttributeError):
                info[key] = None
        return info

    def query(self, index: int, call: str) -> Any:
        nv = self._nv
        match = _CALL.match(call)
        if not match or not hasattr(nv, match.group(1)):
            raise NvmlError("NVMLError_FunctionNotFound", 13, call)
        args = [getattr(nv, a) for a in (match.group(2) or "").split(",") if a]
        try:
            handle = self._handles.get(index)
            if handle is None:
                handle = self._handles[index] = nv.nvmlDeviceGetHandleByIndex(index)
            return plain(getattr(nv, match.group(1))(handle, *args))
        except nv.NVMLError as exc:
            raise self._wrap(exc) from None

    def shutdown(self) -> None:
        try:
            self._nv.nvmlShutdown()
        except Exception:  # noqa: BLE001 - shutting down is best effort
            pass


class RecordedSource(NvmlSource):
    """Replays a recording (`kind: nvml-recording`), one recorded sample per `begin_sample`.

    `overrides` maps a call name to a recorded answer (`{"ok": v}` or `{"error": cls,
    "code": n}`) applied to every sample: how tests turn an H200 recording into what a GB10
    answers (name, compute capability, NotSupported memory).
    """

    def __init__(self, recording: dict, overrides: dict | None = None,
                 init_error: dict | None = None) -> None:
        if recording.get("kind") != "nvml-recording":
            raise ValueError("not an NVML recording")
        self._doc = recording
        self._overrides = overrides or {}
        self._init_error = init_error
        self._position = -1

    def init(self) -> dict:
        if self._init_error:
            raise NvmlError(self._init_error["error"], self._init_error.get("code"),
                            self._init_error.get("text", ""))
        return {k: self._doc.get(k) for k in ("driver_version", "cuda_driver_version",
                                              "nvml_version", "device_count")}

    def begin_sample(self) -> None:
        self._position = (self._position + 1) % len(self._doc["samples"])

    def query(self, index: int, call: str) -> Any:
        sample = self._doc["samples"][max(self._position, 0)]
        answer = self._overrides.get(call)
        if answer is None:
            answer = sample["devices"][index]["calls"].get(call, {"missing": True})
        if "ok" in answer:
            return answer["ok"]
        if "error" in answer:
            raise NvmlError(answer["error"], answer.get("code"), answer.get("text", ""))
        raise NvmlError("NVMLError_FunctionNotFound", 13, call)
