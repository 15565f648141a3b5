"""Reconciliation: delivered tokens against the server's log windows and `/metrics` counter deltas."""
