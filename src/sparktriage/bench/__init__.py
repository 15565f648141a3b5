"""The delivered-token protocol: streaming client, workloads, raw records, summaries."""
