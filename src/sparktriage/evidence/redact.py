"""Redaction of secrets in what logs say before any of it is written to a document.

Logs are hostile input: argument dumps carry API keys and hub tokens, error lines carry URLs
with credentials. `redact` replaces `key=value` / `"key": "value"` pairs whose key names a
secret, and values that look like one on their own (hf_…, sk-…, GitHub tokens, bearer
tokens), by ***. `secret_name` says whether an argument name holds a secret.
"""

from __future__ import annotations

import re

_SECRET_KV = re.compile(
    r"(?i)(['\"]?(?:[\w-]*(?:api[_-]?key|token|password|passwd|secret))['\"]?\s*[:=]\s*)"
    r"(?:'[^']*'|\"[^\"]*\"|[^\s,}]+)"
)
_SECRET_VALUES = re.compile(r"\b(?:hf_[A-Za-z0-9]{16,}|sk-[A-Za-z0-9_-]{16,}|gh[pousr]_[A-Za-z0-9]{20,})\b"
                            r"|(?i:bearer)\s+[A-Za-z0-9._~+/=-]{8,}")
_SECRET_NAME = re.compile(r"(?i)(?:api[_-]?key|(?:^|_)token$|password|passwd|secret)")
_SECRET_HINTS = ("key", "token", "pass", "secret", "bearer", "hf_", "sk-", "gh")


def redact(text: str) -> str:
    """Replace secrets (API keys, tokens, passwords) by ***."""
    if not text:
        return text
    low = text.lower()
    if not any(hint in low for hint in _SECRET_HINTS):
        return text
    text = _SECRET_KV.sub(lambda m: m.group(1) + "***", text)
    return _SECRET_VALUES.sub("***", text)


def secret_name(name: str) -> bool:
    """Does this argument or field name hold a secret (api_key, hf_token, password, ...)?"""
    return _SECRET_NAME.search(name) is not None
