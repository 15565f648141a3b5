"""Command lines: the value after a secret flag, `--flag=value`, `NAME=value`, and secrets in
any other element (URL credentials, key shapes), replaced through one book's stand-ins.

Standard library only (the node agent redacts captured command lines with it).
"""

from __future__ import annotations

import re
from typing import Callable, Iterable

from sparktriage.redact.detect import SECRET_FLAG, SecretScrubber, secret_name

SECRET_FLAGS = frozenset({
    "--api-key", "--hf-token", "--token", "--password", "--secret", "--ssl-keyfile-password",
    "--aws-secret-access-key", "--auth", "--authorization",
})
_INLINE = re.compile(
    r"^(--?[A-Za-z0-9_.-]*(?:token|key|secret|password|passwd|auth|authorization|credentials?)=)"
    r"(.+)$", re.IGNORECASE)


def is_secret_flag(arg: str) -> bool:
    """True for `--api-key`, `--hf-token`, `--db-password`, ... (the next element is a secret)."""
    return arg in SECRET_FLAGS or bool(SECRET_FLAG.match(arg))


def redact_argv(argv: Iterable, scrubber: SecretScrubber,
                is_secret_name: Callable[[str], bool] = secret_name) -> list[str]:
    """A copy of `argv` with every secret replaced by the scrubber's book."""
    out: list[str] = []
    hide_next = False
    for arg in argv:
        arg = str(arg)
        if hide_next:
            out.append(scrubber.replace("flag-value", arg))
            hide_next = False
            continue
        if is_secret_flag(arg):
            out.append(arg)
            hide_next = True
            continue
        match = _INLINE.match(arg)
        if match:
            out.append(match.group(1) + scrubber.replace("flag-value", match.group(2)))
            continue
        name, sep, value = arg.partition("=")
        if sep and value and not arg.startswith("-") and is_secret_name(name):
            out.append(name + "=" + scrubber.replace("secret", value))  # HF_TOKEN=...
            continue
        scrubber.reset()  # one element is one string: no key block carried between them
        out.append(scrubber.scrub(arg))
    return out


__all__ = ["SECRET_FLAGS", "is_secret_flag", "redact_argv"]
