"""Mutated launch scripts (the reproduce inputs and corpus, cut and spliced with shell syntax):
the bash reader answers each with a deployment or a one-line input error, in bounded time,
and never runs anything."""

from __future__ import annotations

import random
import subprocess
import time
from pathlib import Path

import pytest

from sparktriage.errors import InputError
from sparktriage.reproduce.importers.common import Ctx
from sparktriage.reproduce.importers.serve import import_script
from sparktriage.reproduce.model import InputRef
from sparktriage.reproduce.secrets import Placeholders

HERE = Path(__file__).parent
SOURCES = sorted(HERE.glob("inputs/*.sh")) + sorted(HERE.glob("corpus/*/*.sh"))
TOKENS = list("$(){}[]'\"`\\;&|<>#=\n -:!*?@%/~") + [
    "if ", " then ", "fi", "case ", " in ", "esac", ";;", "do ", "done", "$((", "<<EOF\n",
    "\nEOF\n", "${", "$@", "bash -c '", 'ssh h "', 'docker exec n bash -lc "', "eval ",
    "f() { ", " }", "f ", "for x in a; do ", "while [[ $# -gt 0 ]]; do ", ":(){ :|:& };:"]


def _mutate(rng: random.Random, text: str) -> str:
    chars = list(text)
    for _ in range(rng.randint(1, 8)):
        at = rng.randrange(len(chars) + 1)
        roll = rng.random()
        if roll < 0.4 and chars:
            del chars[min(at, len(chars) - 1)]
        elif roll < 0.85:
            chars.insert(at, rng.choice(TOKENS))
        else:
            chars = chars[:at]
    return "".join(chars)


def _no_process(*_args, **_kw):
    raise AssertionError("the bash reader tried to start a process")


@pytest.mark.parametrize("seed", range(4))
def test_mutated_scripts_read_or_refused_in_bounded_time(seed: int, monkeypatch) -> None:
    monkeypatch.setattr(subprocess, "Popen", _no_process)
    rng = random.Random(seed)
    texts = [p.read_text() for p in SOURCES]
    assert len(texts) >= 10
    outcomes = {"read": 0, "refused": 0}
    for _ in range(150):
        text = _mutate(rng, rng.choice(texts))
        ctx = Ctx(InputRef(path="m.sh", kind="serve"), Placeholders())
        start = time.monotonic()
        try:
            result = import_script(text, ctx, {})
            ray_only = (result.deployment.get("engine") or {}).get("backend") == "ray"
            assert (result.deployment.get("model") or {}).get("path") or ray_only
            outcomes["read"] += 1
        except InputError as exc:
            assert "\n" not in exc.one_line()
            outcomes["refused"] += 1
        assert time.monotonic() - start < 5
    assert outcomes["read"] > 0 and outcomes["refused"] > 0
