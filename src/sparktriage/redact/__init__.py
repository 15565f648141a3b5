"""The one redaction stage of sparktriage: secrets never reach a file, an archive or a terminal.

Standard library only (detect, argv, capture travel to the nodes with the agent). Modules:

- detect.py: the secret detector (`SecretScrubber`) and the books of stand-ins (`SecretBook`:
  `REDACTED-<kind>-<n>`, `StarBook`: `***`);
- run.py: the stand-in map of this run (one `SecretBook` per process: the same secret always
  gets the same stand-in), and `text`/`argv`/`url`/`headers`/`document` helpers over it that
  every writer of run directories and terminal output calls;
- argv.py: command lines (the value after a secret flag, `--flag=value`, `NAME=value`);
- capture.py: redaction on the nodes (HMAC stand-ins, `***<hex>`, environments and argv);
- documents.py: the walker of JSON/YAML documents and record files (strings, values under
  secret-looking keys, the element after a secret flag; a private key split over the records of
  a file is followed per field, and keys of records are never rewritten by it);
- anonymize.py: `--anonymize` (hosts, domains, IP addresses, users).

docs/redaction.md says what counts as a secret and where each stand-in appears.
"""
