"""Test-bed only: give vLLM's CPU platform a Ray device key, so vLLM's Ray placement runs.

vLLM CPU has no Ray device key (`CpuPlatform.ray_device_key == ""`), so on a Ray cluster it
stops with `current platform cpu does not support ray.` before it asks Ray for anything. With
`SPARKTRIAGE_TESTBED_RAY_SHIM=KEY` in the environment this module (loaded by the `.pth` file
provision/setup-ray.sh puts into the vLLM test-bed venv, never into sparktriage's wheel) sets
`CpuPlatform.ray_device_key = KEY` right after `vllm.platforms.cpu` is imported, and does
nothing else. Without the variable it does nothing at all. docs/testbed.md, "Ray in the test bed, and the Ray shim".
"""

import os
import sys

_KEY = os.environ.get("SPARKTRIAGE_TESTBED_RAY_SHIM", "")
_TARGET = "vllm.platforms.cpu"


class _Finder:
    """A meta-path finder that wraps the loader of vllm.platforms.cpu (and only that module)."""

    def find_spec(self, name, path=None, target=None):
        if name != _TARGET:
            return None
        sys.meta_path.remove(self)
        try:
            import importlib.util
            spec = importlib.util.find_spec(name)
        finally:
            sys.meta_path.insert(0, self)
        if spec is None or spec.loader is None:
            return spec
        loader = spec.loader
        original = loader.exec_module

        def exec_module(module):
            original(module)
            module.CpuPlatform.ray_device_key = _KEY
            # worded without "name = value": the bundle's redaction takes `..._key = 'x'` for a
            # secret and would replace the resource name everywhere
            print(f"sparktriage test-bed Ray shim on: the CPU platform's Ray device is {_KEY}",
                  file=sys.stderr, flush=True)

        loader.exec_module = exec_module
        return spec


if _KEY and not any(isinstance(f, _Finder) for f in sys.meta_path):
    sys.meta_path.insert(0, _Finder())
