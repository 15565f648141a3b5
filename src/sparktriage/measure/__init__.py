"""Measurement steps against one launch (protocol, probe, stalls, logs), shared by the session
(demo, selfcheck) and the sweep engine; below both in the import graph."""
