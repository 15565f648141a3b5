"""Validate every typed document of a run directory against its model (shared by the demo,
selfcheck and synthetic-run tests)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from sparktriage.documents import registry
from sparktriage.store.typed import load


def validate_run_dir(root: Path) -> Counter:
    """Load every file of `root` that has a model (by file name, bundles excluded: their files
    are captures, not stage documents); an invalid one raises InputError. Returns how many
    documents of each kind were validated."""
    seen: Counter = Counter()
    for path in sorted(root.rglob("*.json")):
        if "bundle" in path.relative_to(root).parts:
            continue
        model = registry.model_for_file(path.name)
        if model is not None:
            load(model, path, str(path.relative_to(root)))
            seen[model.NAME] += 1
    return seen
