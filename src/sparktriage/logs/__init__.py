"""vLLM logs: line parsing, the scanner and its compiled path, the startup timeline, series, facts and the `logs` document."""
