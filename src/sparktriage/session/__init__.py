"""Sessions: the steps of a diagnosis (probe, protocol, stall classification) composed into
the commands that run several of them (`demo`)."""
