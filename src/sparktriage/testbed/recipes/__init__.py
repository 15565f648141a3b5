"""Recipes of the test bed that ship with the package: scripts run with the vLLM venv's Python.

`make_tiny_model.py OUT_DIR [--draft]` builds the tiny Llama (and its draft) the real-vLLM
tests serve; `provision/setup.sh` runs it from here, and an installed package can too:
`$VLLM_VENV/bin/python "$(python -c 'from sparktriage.testbed.recipes import path; print(path())')" OUT`.
"""

from __future__ import annotations

from pathlib import Path


def path(name: str = "make_tiny_model.py") -> Path:
    """The file of a shipped recipe."""
    return Path(__file__).with_name(name)
