"""Speculative-depth sweeps: the decision from per-launch delivered rates (docs/sweep.md)."""
