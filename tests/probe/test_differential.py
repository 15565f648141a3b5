"""KL over top-k lists and the baseline comparison thresholds."""

from __future__ import annotations

import math

import pytest

from sparktriage.probe.baseline import PassagePrint
from sparktriage.probe.differential import compare_passage, kl_topk


def test_kl_of_identical_lists_is_zero_and_grows_with_difference():
    a = [(1, math.log(0.6)), (2, math.log(0.3)), (3, math.log(0.05))]
    assert kl_topk(a, a) == pytest.approx(0.0, abs=1e-9)
    b = [(1, math.log(0.3)), (2, math.log(0.6)), (3, math.log(0.05))]
    c = [(4, math.log(0.9)), (5, math.log(0.05))]
    assert 0.1 < kl_topk(a, b) < kl_topk(a, c)


def test_compare_counts_only_decisive_positions_for_agreement():
    decisive = (7, -0.1, ((7, -0.1), (8, -3.0)))
    near_tie = (7, -0.7, ((7, -0.69), (8, -0.7)))
    base = PassagePrint("p", (1, 2, 3), (decisive, near_tie))
    flipped = (7, -0.7, ((8, -0.69), (7, -0.7)))
    cand = PassagePrint("p", (1, 2, 3), (decisive, flipped))
    row = compare_passage(base, cand)
    assert row["decisive_positions"] == 1 and row["top1_agreement"] == 1.0
    assert row["delta_nll"] == pytest.approx(0.0, abs=1e-9)
