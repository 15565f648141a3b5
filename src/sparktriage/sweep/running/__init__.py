"""Running a sweep's launches: the engine loop (one launch at a time through measure.loop, the
policy asked for the next depth after each), the two-stream phase inside a launch, the state
that makes a sweep resumable (`sweep-state.json`), and `--rebuild`."""
