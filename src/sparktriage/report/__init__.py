"""Reports: a redacted, versioned document built from a run directory, rendered as Markdown,
PDF and HTML with plots, then listed in a MANIFEST and signed by `sparktriage.signing`.

Pipeline (build.py): inputs → redact → model → plots → markdown/pdf/html → data copy →
manifest → signature. Verification (signing/verify.py) needs no sparktriage on the recipient's
side; see docs/report.md, docs/verification.md and docs/redaction.md.
"""
