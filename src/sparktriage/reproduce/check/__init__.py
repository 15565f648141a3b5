"""Check: the lab's side (`capture` live, `labfacts` from a file), the diff that matters
(`diff`), config traps as rules-as-data (`facts`, `traps`), KV connectors and vLLM variables
a release does not ship (`kvcheck`, `envcheck`).
"""
