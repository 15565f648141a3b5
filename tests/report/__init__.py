"""Report tests; a package so that its module names (report.test_redact) do not clash with
tests/logs/test_redact.py under pytest's default import mode."""
