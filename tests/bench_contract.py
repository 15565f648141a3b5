"""The JSON contract of `bench` (issue 2), checked field by field; shared by several tests."""

from __future__ import annotations

import math

STATUSES = {"ok", "error", "incomplete"}


def _number_or_none(value) -> bool:
    return value is None or (isinstance(value, (int, float)) and not isinstance(value, bool)
                             and math.isfinite(value))


def check_bench_document(doc: dict) -> None:
    """Assert the contract: names and types exactly as the issue fixes them."""
    assert isinstance(doc["schema_version"], int)
    assert isinstance(doc["endpoint"], str) and doc["endpoint"].startswith("http")
    assert isinstance(doc["model"], str) and doc["model"]
    assert isinstance(doc["workloads"], list) and doc["workloads"]
    for workload in doc["workloads"]:
        assert isinstance(workload["name"], str)
        assert isinstance(workload["requests"], list)
        for request in workload["requests"]:
            assert isinstance(request["warmup"], bool)
            assert request["status"] in STATUSES
            assert isinstance(request["output_tokens"], int) and not isinstance(request["output_tokens"], bool)
            for key in ("ttft_s", "decode_tok_s", "e2e_tok_s"):
                assert _number_or_none(request[key]), (key, request[key])
            assert isinstance(request["chunks"], int)
        decode = workload["summary"]["decode_tok_s"]
        assert set(decode) >= {"mean", "ci95_low", "ci95_high", "median", "n"}
        measured_ok = [r for r in workload["requests"] if not r["warmup"] and r["status"] == "ok"
                       and r["decode_tok_s"] is not None]
        assert decode["n"] == len(measured_ok)
        for key in ("mean", "ci95_low", "ci95_high", "median"):
            assert _number_or_none(decode[key])
        if decode["n"] >= 2:
            assert decode["ci95_low"] <= decode["mean"] <= decode["ci95_high"]
            values = [r["decode_tok_s"] for r in measured_ok]
            assert abs(decode["mean"] - sum(values) / len(values)) < 1e-9 * max(1.0, abs(decode["mean"]))
