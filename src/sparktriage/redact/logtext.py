"""Redaction of secrets in what logs say before any of it is written to a document.

Logs are hostile input: argument dumps carry API keys and hub tokens, error lines carry URLs
with credentials. `redact` replaces every secret the one detector finds (detect.py:
known key shapes, bearer credentials, URL passwords, secret flags, values of secret-looking
names) by ***. `secret_name` says whether an argument name holds a secret. The lines of a
private key block are emptied earlier, in the log parser, per source (logs/parser.py with
detect.KeyBlocks), because each of them is a line of its own with its own log prefix.
"""

from __future__ import annotations

import re

from sparktriage.redact.detect import SecretScrubber, StarBook
from sparktriage.redact.detect import secret_name as _detector_name

# a cheap pre-check: lines without any of these cannot hold a secret the detector finds
# (most log lines), so the detector's regular expressions never run on them
_SECRET_HINTS = ("key", "token", "pass", "secret", "bearer", "auth", "://", "hf_", "sk-", "gh",
                 "nvapi-", "glpat-", "xox", "aiza", "akia", "asia", "eyj", "-----", "pwd",
                 "credential", "cookie")
_SECRET_NAME = re.compile(r"(?i)(?:api[_-]?key|(?:^|_)token$|password|passwd|secret)")


def redact(text: str) -> str:
    """Replace secrets (API keys, tokens, passwords, URL credentials) by ***."""
    if not text:
        return text
    low = text.lower()
    if not any(hint in low for hint in _SECRET_HINTS):
        return text
    return SecretScrubber(StarBook()).scrub(text)


def secret_name(name: str) -> bool:
    """Does this argument or field name hold a secret (api_key, hf_token, password, ...)?"""
    return _SECRET_NAME.search(name) is not None or _detector_name(name)
