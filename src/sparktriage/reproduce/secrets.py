"""Secrets in client inputs become named placeholders, in every written byte and in the output.

A value is a secret when its name says so (`HF_TOKEN`, `*_KEY`, `*_TOKEN`, `--api-key`, the
names of `sparktriage.redact.detect.secret_name`) or when the project's one detector finds it by
shape or context (an `hf_...` token in any value, a password inside a URL, `Bearer ...`).
Each gets a placeholder `<supply:NAME>`: the consultant sets the real value on the lab. The
values themselves stay in memory only, so that the writer can check that none was written.
"""

from __future__ import annotations

import re

from sparktriage.redact.detect import SecretScrubber, secret_name

PREFIX = "<supply:"
_NAME = re.compile(r"[^A-Za-z0-9_.-]+")


def placeholder(name: str) -> str:
    return f"{PREFIX}{name}>"


class Placeholders:
    """Hands out placeholders and remembers which values they stand for (in memory)."""

    def __init__(self) -> None:
        self.names: dict[str, str] = {}  # placeholder name -> where it was found
        self._values: dict[str, str] = {}  # secret value -> placeholder name
        self._counters: dict[str, int] = {}
        self._scrubber = SecretScrubber(self)

    # the book protocol of sparktriage.redact.detect (a stand-in per secret value)
    hits = 0

    def stand_in(self, kind: str, value: str) -> str:
        if value.startswith(PREFIX):
            return value
        if value in self._values:
            return placeholder(self._values[value])
        number = self._counters.get(kind, 0) + 1
        self._counters[kind] = number
        return self._remember(f"{kind}-{number}", value, "found by the secret detector")

    def _remember(self, name: str, value: str, where: str) -> str:
        name = _NAME.sub("_", name)[:80]
        if value in self._values:
            return placeholder(self._values[value])
        self._values[value] = name
        self.names.setdefault(name, where)
        return placeholder(name)

    def named(self, name: str, value: str, where: str) -> str:
        """The placeholder of a value whose name marks it secret (an env var, an option)."""
        if not value or value.startswith(PREFIX):
            if value.startswith(PREFIX):
                self.names.setdefault(value[len(PREFIX):-1], where)
            return value
        if value in self._values:
            return placeholder(self._values[value])
        base, number = name, 1
        bound = set(self._values.values())
        if base in self.names and base not in bound:  # declared before its value was seen
            return self._remember(base, value, self.names[base])
        while base in self.names:  # same name, another value (two nodes' tokens)
            number += 1
            base = f"{name}_{number}"
        return self._remember(base, value, where)

    def declare(self, name: str, where: str) -> str:
        """A placeholder for a secret whose value the input does not carry (`-e HF_TOKEN`)."""
        self.names.setdefault(name, where)
        return placeholder(name)

    def env_value(self, name: str, value: str, where: str) -> str:
        if secret_name(name):
            return self.named(name, value, where)
        return self.text(value)

    def text(self, value: str) -> str:
        """Any other string: secrets found by shape or context replaced."""
        if not value:
            return value
        for secret, name in self._values.items():
            if secret and secret in value:
                value = value.replace(secret, placeholder(name))
        self._scrubber.reset()
        return self._scrubber.scrub(value)

    def deep(self, data, env: bool = False):
        """A document with every string scrubbed; inside `env` blocks (keys `env`, and the
        blocks of `node_env`) a secret-looking variable name makes its value a placeholder."""
        if isinstance(data, str):
            return self.text(data)
        if isinstance(data, list):
            return [self.deep(v) for v in data]
        if isinstance(data, dict):
            out = {}
            for key, value in data.items():
                if env and isinstance(key, str) and isinstance(value, str) and secret_name(key):
                    out[key] = self.env_value(key, value, "a setting")
                elif key == "node_env" and isinstance(value, dict):
                    out[key] = {k: self.deep(v, env=True) for k, v in value.items()}
                else:
                    out[key] = self.deep(value, env=key == "env")
            return out
        return data

    def leaked(self, blob: str) -> list[str]:
        """Placeholder names whose secret value appears in `blob` (must be empty)."""
        return [name for value, name in self._values.items() if len(value) >= 8 and value in blob]

    def scrub_blob(self, blob: str) -> str:
        for value, name in sorted(self._values.items(), key=lambda kv: -len(kv[0])):
            if len(value) >= 8:
                blob = blob.replace(value, placeholder(name))
        return blob

    @property
    def supply(self) -> list[str]:
        return sorted(self.names)

    def used_in(self, blob: str) -> list[str]:
        """The placeholder names that `blob` (the written deployment) holds: the values to
        supply on the lab; a placeholder only in a setting the deployment does not carry (a
        container `--name`, a client address replaced by the lab's) is not asked for."""
        return sorted(name for name in self.names if placeholder(name) in blob)
