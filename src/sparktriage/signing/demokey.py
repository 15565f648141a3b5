"""A throwaway Ed25519 signing key for the demo's report, made by `ssh-keygen` itself."""

from __future__ import annotations

import subprocess
from pathlib import Path

from sparktriage.errors import InputError


def make_demo_key(path: Path, comment: str = "sparktriage-demo") -> Path:
    """Write PATH (private, mode 0600, no passphrase) and PATH.pub (with `comment`); return PATH."""
    path.parent.mkdir(parents=True, exist_ok=True)
    for old in (path, path.with_name(path.name + ".pub")):
        old.unlink(missing_ok=True)  # ssh-keygen would ask before overwriting
    try:
        done = subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", comment,
                               "-f", str(path)], capture_output=True, timeout=60, check=False,
                              stdin=subprocess.DEVNULL)
    except (FileNotFoundError, subprocess.TimeoutExpired) as exc:
        raise InputError(f"cannot make the demo's signing key with ssh-keygen: {exc}") from exc
    if done.returncode != 0:
        said = " ".join(done.stderr.decode("utf-8", "replace").split())[:300]
        raise InputError(f"ssh-keygen could not make the demo's signing key: {said}")
    return path
