"""Evidence: parsers of what servers and nodes said (vLLM logs, py-spy dumps, Prometheus text,
samples) and the merged, node-tagged timeline built from them. Pure functions of files."""
