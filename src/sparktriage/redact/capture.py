"""Redaction at capture: secrets in environment variables and command lines never leave the node.

What is a secret is decided by the one detector (redact/detect.py) and the one argv rule
(redact/argv.py), both shipped with the agent (collect/shipping.py); this module adds the
capture's own stand-ins and the environment-name rules of the collectors. Standard library only.

A secret is replaced by a stand-in `***<8 hex>`: an HMAC of the value under a key that the
collecting machine generates per collection and never writes into the bundle. The same
secret therefore gets the same stand-in on every node of one collection (so the cross-node
diff still sees "same token" or "different token"), and the stand-in reveals nothing about it.
"""

from __future__ import annotations

import hashlib
import hmac
import re

from sparktriage.redact.argv import redact_argv
from sparktriage.redact.detect import SecretScrubber, secret_name

SECRET_NAME = re.compile(
    r"(TOKEN(?!IZER)|SECRET|PASSW|PASSWD|PWD|API_?KEY|ACCESS_?KEY|PRIVATE_?KEY|CREDENTIAL|AUTH|COOKIE|"
    r"SESSION|SIGNATURE|_KEY$|^KEY$)", re.IGNORECASE)
NOT_SECRET = frozenset({"PWD", "OLDPWD", "KEY_INDEX"})


class _Book:
    """The detector's book interface over the capture's stand-ins (the kind is not kept)."""

    def __init__(self, redactor: "Redactor") -> None:
        self.redactor = redactor

    def stand_in(self, kind: str, value: str) -> str:
        return self.redactor.stand_in(value)


class Redactor:
    """Replace secrets by stable stand-ins (see module doc)."""

    def __init__(self, key: bytes) -> None:
        self._key = key

    def stand_in(self, secret: str) -> str:
        digest = hmac.new(self._key, secret.encode("utf-8", "replace"), hashlib.sha256)
        return "***" + digest.hexdigest()[:8]

    def is_secret_name(self, name: str) -> bool:
        upper = name.upper()
        if upper in NOT_SECRET:
            return False
        return bool(SECRET_NAME.search(upper)) or secret_name(name)

    def env(self, env: dict) -> dict:
        """A copy of an environment with secret values replaced."""
        return {k: (self.stand_in(v) if v and self.is_secret_name(k) else self.text(v))
                for k, v in env.items()}

    def text(self, text: str) -> str:
        """Secrets embedded in free text, found by the one detector."""
        if not text:
            return text
        return SecretScrubber(_Book(self)).scrub(text)

    def args(self, argv: list) -> list:
        """A copy of an argv with the values of secret options replaced."""
        return redact_argv(argv, SecretScrubber(_Book(self)), self.is_secret_name)
