"""Stall classification: detect where a startup made no or slow progress, and name the cause.

Rules are data (`rules/`, docs/rules.md); this package loads and validates them, detects
stall and failure periods on the merged timeline of an evidence bundle or a plain log, scores
every rule against each period and builds the `stalls` document (docs/stalls.md). Entry
points: `analyze.load_rules`, `analyze.analyze`, `check.run_checks`.
"""
