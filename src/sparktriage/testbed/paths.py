"""Where the test bed lives: the vLLM venv, the tiny models, the per-run caches."""

from __future__ import annotations

import os
from dataclasses import dataclass, replace
from pathlib import Path

from sparktriage.errors import LaunchError

SETUP_HINT = "run `bash provision/setup.sh` from the sparktriage repository first"


def repo_root() -> Path | None:
    """The source checkout this package runs from (editable install), if any."""
    here = Path(__file__).resolve()
    for parent in here.parents:
        if (parent / "provision" / "setup-vllm.sh").exists():
            return parent
    return None


@dataclass(frozen=True)
class Testbed:
    """Paths of an installed test bed."""

    vllm_venv: Path
    root: Path  # holds models/ and scratch caches
    # One folder for the compile and model-information caches of every server started from this
    # bed (VLLM_CACHE_ROOT, TORCHINDUCTOR_CACHE_DIR), as a lab node keeps them between starts;
    # None: each server gets fresh ones in its own scratch folder.
    cache: Path | None = None

    @property
    def vllm(self) -> Path:
        return self.vllm_venv / "bin" / "vllm"

    @property
    def python(self) -> Path:
        return self.vllm_venv / "bin" / "python"

    def model(self, name: str = "tiny-llama") -> Path:
        return self.root / "models" / name

    def with_cache(self, folder: Path) -> "Testbed":
        """This bed, its servers sharing the caches in `folder`."""
        return replace(self, cache=folder)

    def check(self, model: str = "tiny-llama") -> "Testbed":
        """Raise a one-line LaunchError when the venv or the model is missing."""
        if not self.vllm.exists():
            raise LaunchError(f"no vLLM CPU build at {self.vllm_venv}", hint=SETUP_HINT)
        if not (self.model(model) / "config.json").exists():
            raise LaunchError(f"no tiny model at {self.model(model)}", hint=SETUP_HINT)
        return self


def locate() -> Testbed:
    """The test bed given by the environment, or the one beside the source checkout; its
    servers share the caches in SPARKTRIAGE_TESTBED_CACHE when that is set."""
    root = repo_root()
    venv = os.environ.get("SPARKTRIAGE_VLLM_VENV")
    bed = os.environ.get("SPARKTRIAGE_TESTBED")
    if venv is None and root is not None:
        venv = str(root / ".venv-vllm")
    if bed is None and root is not None:
        bed = str(root / ".testbed")
    if venv is None or bed is None:
        raise LaunchError("cannot find the vLLM test bed", hint="set SPARKTRIAGE_VLLM_VENV and "
                          "SPARKTRIAGE_TESTBED, or " + SETUP_HINT)
    cache = os.environ.get("SPARKTRIAGE_TESTBED_CACHE")
    return Testbed(Path(venv), Path(bed), Path(cache) if cache else None)
