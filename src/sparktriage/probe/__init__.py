"""FP4 garbage detection through the OpenAI API: signal families, verdict, baselines.

Flow (docs/garbage.md): `plan` declares every request of a probe; `runner` negotiates what the
server accepts, sends the requests (concurrently, with one sequential pass) and keeps every raw
reply; the family modules (`sanity`, `likelihood`, `answers`, `generation`, `consistency`,
`differential`) turn replies into numbers, evidence and a status; `verdict` combines them,
names the failure pattern (F1-F8) and says what to try next; `baseline` saves and reads the
fingerprint of a known-good launch.
"""
