"""What the launches showed, derived from their folders after teardown: one frozen record per
launch (`launch.py`), the acceptance it measured (`acceptance.py`, `counts.py`), the step times
inside it (`steptimes.py`, `pairtimes.py`), the correctness gate (`gate.py`, `stream_gate.py`,
`depth_gates.py`), and each depth's statistics over its launches (`stats.py`)."""
