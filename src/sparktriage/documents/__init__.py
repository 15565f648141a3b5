"""Typed documents: the pydantic model of every document one stage writes and a later stage
reads (bench, launch, logs, stalls, probe, reconcile, sweep, selfcheck, demo, report, launch
result), one module per document, and `registry` listing them by name.

They live together, below every stage, because stages read each other's documents (the report
reads stalls', bench's, ...) and a model beside its stage would make the packages import each
other. A model imports nothing of sparktriage but its base, `store.typed`.
"""
