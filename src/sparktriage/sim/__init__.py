"""A simulated OpenAI-compatible server with an exact token schedule, faults and a send trace.

`sparktriage simulate` runs it from the command line; tests and benchmarks start it in its own
process with `sim.process.SimProcess` and read the ground truth with `sim.truth.truth()`.
See docs/simulator.md.
"""
