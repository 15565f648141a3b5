"""Session tests: deployments whose `vllm serve` is the project's simulator (helpers in
session_helpers.py)."""

from __future__ import annotations

import pytest

from session_helpers import write_deployment


@pytest.fixture
def sim_deployment(tmp_path):
    return write_deployment(tmp_path)
