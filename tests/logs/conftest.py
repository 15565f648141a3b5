"""Fixtures of the log tests: the compiled scanner, required where it should have been built."""

from __future__ import annotations

import pytest

import compiled_required


@pytest.fixture(scope="module")
def compiled_extension():
    """`sparktriage.logs._fastscan`; every test that uses it fails when it is missing, unless
    SPARKTRIAGE_NO_COMPILER=1 says this machine has no compiler (then they skip)."""
    return compiled_required.require()
