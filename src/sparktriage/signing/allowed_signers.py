"""The `allowed_signers` file of `ssh-keygen -Y verify` (ssh-keygen(1), ALLOWED SIGNERS).

Each line: `principals [options] keytype base64-key [comment]`. Principals are comma-separated
patterns (`*` and `?` wildcards); options are comma-separated, among them `namespaces="a,b"`,
`valid-after=`, `valid-before=` (YYYYMMDD[HHMM[SS]][Z]) and `cert-authority`. Certificate
authorities are not supported here (reports are signed with plain keys); such lines are kept
but never match, and the verifier says so.
"""

from __future__ import annotations

import datetime as _dt
import fnmatch
from dataclasses import dataclass
from pathlib import Path

from sparktriage.errors import InputError
from sparktriage.signing.keys import PublicKey, parse_public_key


@dataclass(frozen=True)
class AllowedSigner:
    """One line of an allowed-signers file."""

    principals: tuple[str, ...]
    key: PublicKey
    namespaces: tuple[str, ...] | None
    valid_after: _dt.datetime | None
    valid_before: _dt.datetime | None
    cert_authority: bool
    line: int

    def allows_namespace(self, namespace: str) -> bool:
        return self.namespaces is None or any(fnmatch.fnmatchcase(namespace, pattern)
                                              for pattern in self.namespaces)

    def valid_at(self, when: _dt.datetime) -> bool:
        if self.valid_after is not None and when < self.valid_after:
            return False
        return self.valid_before is None or when <= self.valid_before

    def matches_identity(self, identity: str) -> bool:
        return any(fnmatch.fnmatchcase(identity, p) for p in self.principals)


def _tokens(line: str) -> list[str]:
    """Split on whitespace outside double quotes (quotes are kept inside tokens)."""
    tokens, current, quoted = [], [], False
    for ch in line:
        if ch == '"':
            quoted = not quoted
            current.append(ch)
        elif ch.isspace() and not quoted:
            if current:
                tokens.append("".join(current))
                current = []
        else:
            current.append(ch)
    if quoted:
        raise ValueError("unbalanced double quote")
    if current:
        tokens.append("".join(current))
    return tokens


def _split_options(text: str) -> list[str]:
    parts, current, quoted = [], [], False
    for ch in text:
        if ch == '"':
            quoted = not quoted
        if ch == "," and not quoted:
            parts.append("".join(current))
            current = []
        else:
            current.append(ch)
    parts.append("".join(current))
    return [p for p in parts if p]


def _time(value: str) -> _dt.datetime:
    utc = value.endswith("Z") or value.endswith("z")
    digits = value.rstrip("Zz")
    formats = {8: "%Y%m%d", 12: "%Y%m%d%H%M", 14: "%Y%m%d%H%M%S"}
    if len(digits) not in formats:
        raise ValueError(f"bad time {value!r}")
    parsed = _dt.datetime.strptime(digits, formats[len(digits)])
    if utc:
        return parsed.replace(tzinfo=_dt.timezone.utc)
    return parsed.astimezone()  # local time, as ssh-keygen reads it


def _is_key_type(token: str) -> bool:
    return token.startswith(("ssh-", "ecdsa-", "sk-", "rsa-")) or token.endswith("@openssh.com")


def parse_line(line: str, number: int, origin: str) -> AllowedSigner:
    try:
        tokens = _tokens(line)
    except ValueError as exc:
        raise InputError(f"{origin}:{number}: {exc}") from exc
    if len(tokens) < 3:
        raise InputError(f"{origin}:{number}: expected 'principals [options] keytype key'")
    principals = tuple(p.strip('"') for p in tokens[0].split(",") if p)
    rest = tokens[1:]
    options: list[str] = []
    if not _is_key_type(rest[0]):
        options = _split_options(rest[0])
        rest = rest[1:]
    if len(rest) < 2:
        raise InputError(f"{origin}:{number}: no public key after the principals and options")
    key = parse_public_key(" ".join(rest), f"{origin}:{number}")
    namespaces = valid_after = valid_before = None
    cert_authority = False
    for option in options:
        name, _, value = option.partition("=")
        name, value = name.lower(), value.strip('"')
        try:
            if name == "namespaces":
                namespaces = tuple(v for v in value.split(",") if v)
            elif name == "valid-after":
                valid_after = _time(value)
            elif name == "valid-before":
                valid_before = _time(value)
            elif name == "cert-authority":
                cert_authority = True
        except ValueError as exc:
            raise InputError(f"{origin}:{number}: {exc}") from exc
    return AllowedSigner(principals, key, namespaces, valid_after, valid_before, cert_authority,
                         number)


def read(path: Path) -> list[AllowedSigner]:
    """Parse an allowed-signers file (comments and blank lines skipped)."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"cannot read allowed signers {path}: {getattr(exc, 'strerror', None) or exc}") from exc
    signers = []
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if line and not line.startswith("#"):
            signers.append(parse_line(line, number, str(path)))
    if not signers:
        raise InputError(f"{path}: no allowed signer in the file")
    return signers


def line_for(identity: str, key: PublicKey, namespace: str) -> str:
    """The allowed-signers line a recipient adds to trust this key for this namespace."""
    return f'{identity} namespaces="{namespace}" {key.openssh()}'
