"""Reports: a redacted, versioned document built from a run directory, rendered as Markdown and
PDF with plots, listed in a sha256sum MANIFEST and signed as an OpenSSH SSHSIG signature.

Pipeline (build.py): inputs → redact → model → plots → markdown/pdf → data copy → manifest →
signature. Verification (verify.py) needs no sparktriage on the recipient's side; see
docs/report.md, docs/verification.md and docs/redaction.md.
"""
