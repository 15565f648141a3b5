"""Prometheus `/metrics`: scraping a page (bounded), parsing it, counter deltas over a window."""
