"""Sessions: the consultant's diagnosis as a declared, resumable plan (probe, protocol, sweep,
stall classification, report) run by `runner.py`, with `demo` and `selfcheck` as its presets;
the steps against one launch live in `sparktriage.measure`."""
