"""Fixtures of the launch tests (helpers live in launchkit.py)."""

from __future__ import annotations

import uuid

import pytest


@pytest.fixture
def mark() -> str:
    """A unique marker put in the model path and environment of a test's servers."""
    return f"mark-{uuid.uuid4().hex[:10]}"
