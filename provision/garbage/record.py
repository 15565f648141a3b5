"""Record what real vLLM answers the probe for every catalogue variant (run once; committed).

Usage: .venv/bin/python provision/garbage/record.py [VARIANT ...]

Serves each variant of `testbed/garbage/bugs.CATALOGUE` (all of them by default) with the test
bed's real vLLM CPU build, behind the recording proxy, runs exactly the probes the variant
tests run (`testbed/garbage/scenario.probe_variant`, seed `scenario.SEED`) and writes every HTTP
exchange to `provision/garbage/recordings/<variant>.json.xz`. The variant tests
(tests/probe/test_vllm_variants.py) replay these files and, for their live variants, check that
today's vLLM still answers exactly what is recorded. Rerun this script when the probe's requests
change (seed, prompts, passages, negotiation), when the trained model changes, or when vLLM is
upgraded: the replay then fails with "no recorded response" or "recordings stale".

Controls come first (the bugs are probed against their fingerprints; a bug recorded alone uses
the controls' fingerprints replayed from their committed recordings). Two servers run at a time,
as in the tests; every server is stopped before the script exits.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from sparktriage.testbed.garbage.bugs import CATALOGUE, by_name
from sparktriage.testbed.garbage.harness import expectation_met
from sparktriage.testbed.garbage.scenario import SEED, record_variant, recording_path, replay_variant, stages
from sparktriage.testbed.paths import locate
from sparktriage.testbed.replay import exchanges

AT_ONCE = 2


def main(argv: list[str]) -> int:
    wanted = {by_name(name).name for name in argv} or {v.name for v in CATALOGUE}
    work = Path(tempfile.mkdtemp(prefix="garbage-record-"))
    os.environ.setdefault("SPARKTRIAGE_TESTBED_CACHE", str(work / "caches"))
    os.environ.setdefault("VLLM_RPC_BASE_PATH", tempfile.mkdtemp(prefix="st-ipc-"))
    try:
        _record(locate().check(), wanted, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


def _record(bed, wanted: set[str], work: Path) -> None:
    baselines: dict[str, Path] = {}
    started = time.time()
    for stage in stages():
        todo = [v for v in stage if v.name in wanted]
        with ThreadPoolExecutor(AT_ONCE) as pool:
            runs = {v.name: pool.submit(record_variant, bed, v, SEED, baselines, work) for v in todo}
        for variant in stage:
            if variant.name in runs:
                run, recording = runs[variant.name].result()
                size = recording.save(recording_path(variant.name))
                print(f"{variant.name}: {run.row['verdict']} (expectation met: {expectation_met(run.row)}), "
                      f"{len(recording.exchanges)} exchanges, {size / 1024:.0f} KiB", file=sys.stderr)
            elif variant.severity == "control":  # a baseline the recorded bugs need
                run = replay_variant(exchanges.load(recording_path(variant.name)), variant, SEED, baselines, work)
            else:
                continue
            if run.fingerprint is not None:
                baselines[variant.fmt or "bf16"] = run.fingerprint
    print(f"recorded {len(wanted)} variant(s) in {time.time() - started:.0f} s", file=sys.stderr)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
