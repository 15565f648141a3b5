"""Statistics: per-launch summaries, t-intervals, launch-level aggregation."""
