"""Signing with OpenSSH itself: `ssh-keygen -Y sign`, for key files and ssh-agent keys alike.

OpenSSH is a requirement of the report's signing anyway (recipients verify with
`ssh-keygen -Y verify`), so sparktriage does not re-implement private-key handling or the agent
protocol: `ssh-keygen -y` reads a key file's public half (and says whether it needs a
passphrase), `ssh-add -L` lists the agent's keys, and `ssh-keygen -Y sign -n sparktriage` signs
(given a public key file, it asks the agent for the private half). Every call is an argv list
(never a shell), with a timeout, the message on stdin and the armored signature on stdout.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from sparktriage.errors import InputError
from sparktriage.signing.keys import PublicKey, parse_public_key, read_public_key

NAMESPACE = "sparktriage"
TIMEOUT_S = 60
ED25519 = "ssh-ed25519"


class AgentError(InputError):
    """The ssh-agent is missing or does not hold a usable key."""


def _run(argv: list[str], data: bytes = b"", sock: str | None = None) -> subprocess.CompletedProcess:
    env = None if sock is None else {**os.environ, "SSH_AUTH_SOCK": sock}
    try:
        return subprocess.run(argv, input=data, capture_output=True, timeout=TIMEOUT_S,
                              check=False, env=env)
    except FileNotFoundError as exc:
        raise InputError(f"{argv[0]} not found: OpenSSH is needed to sign reports "
                         "(apt-get install openssh-client)") from exc
    except subprocess.TimeoutExpired as exc:
        raise InputError(f"{argv[0]} did not answer within {TIMEOUT_S} s") from exc


def _said(done: subprocess.CompletedProcess) -> str:
    return " ".join(done.stderr.decode("utf-8", "replace").split())[:300]


@dataclass(frozen=True)
class KeygenSigner:
    """A signing key: a private key file, or a public key whose private half is in the agent."""

    public_key: PublicKey
    key_file: Path  # the private key file (unused for an agent key)
    agent: bool = False
    agent_socket: str | None = None  # the agent's socket (None: SSH_AUTH_SOCK)

    def sign(self, message: bytes, namespace: str = NAMESPACE) -> str:
        """The armored SSHSIG signature of `message` (`ssh-keygen -Y sign -n NAMESPACE`)."""
        if not self.agent:
            return self._sign(self.key_file, message, namespace)
        with tempfile.TemporaryDirectory(prefix="sparktriage-sign-") as tmp:
            pub = Path(tmp) / "agent-key.pub"  # only the public key: the agent signs
            pub.write_text(self.public_key.openssh() + "\n", encoding="ascii")
            return self._sign(pub, message, namespace)

    def _sign(self, key: Path, message: bytes, namespace: str) -> str:
        done = _run(["ssh-keygen", "-q", "-Y", "sign", "-n", namespace, "-f", str(key)], message,
                    self.agent_socket if self.agent else None)
        text = done.stdout.decode("ascii", "replace")
        if done.returncode != 0 or "BEGIN SSH SIGNATURE" not in text:
            where = "the agent" if self.agent else str(self.key_file)
            raise InputError(f"ssh-keygen could not sign with {where}: {_said(done) or 'no signature'}")
        return text


def file_signer(path: Path) -> KeygenSigner:
    """A signer for an unencrypted Ed25519 private key file; refuse others with advice."""
    try:
        head = path.read_bytes()[:4096]
    except OSError as exc:
        raise InputError(f"cannot read signing key {path}: {exc.strerror or exc}") from exc
    if b"BEGIN OPENSSH PRIVATE KEY" not in head and b"PRIVATE KEY-----" not in head:
        raise InputError(f"{path}: not an OpenSSH private key (ssh-keygen -t ed25519 makes one)")
    done = _run(["ssh-keygen", "-y", "-P", "", "-f", str(path)])
    if done.returncode != 0:
        said = _said(done)
        if "passphrase" in said.lower():
            raise InputError(
                f"{path}: the key is passphrase-protected",
                hint=f"load it into ssh-agent (ssh-add {path}) and sign with --sign agent "
                     f"or --sign {path}.pub")
        raise InputError(f"{path}: unreadable OpenSSH private key ({said})")
    key = parse_public_key(done.stdout.decode("ascii", "replace").strip(), str(path))
    if key.key_type != ED25519:
        raise InputError(f"{path}: only Ed25519 keys can sign reports (ssh-keygen -t ed25519)")
    pub_path = path.with_name(path.name + ".pub")
    if not key.comment and pub_path.is_file():
        try:
            key = PublicKey.from_blob(key.blob, read_public_key(pub_path).comment)
        except InputError:
            pass
    return KeygenSigner(key, path)


def agent_keys(socket_path: str | None = None) -> list[PublicKey]:
    """The keys the running ssh-agent holds (`ssh-add -L`)."""
    sock = socket_path or os.environ.get("SSH_AUTH_SOCK")
    if not sock:
        raise AgentError("no ssh-agent: SSH_AUTH_SOCK is not set (start one with eval $(ssh-agent))")
    done = _run(["ssh-add", "-L"], sock=sock)
    if done.returncode == 1:  # "The agent has no identities."
        return []
    if done.returncode != 0:
        raise AgentError(f"cannot talk to ssh-agent at {sock}: {_said(done)}")
    keys = []
    for number, line in enumerate(done.stdout.decode("ascii", "replace").splitlines(), start=1):
        if line.strip():
            keys.append(parse_public_key(line, f"ssh-add -L line {number}"))
    return keys


def agent_signer(wanted: PublicKey | None = None, socket_path: str | None = None) -> KeygenSigner:
    """The agent's key equal to `wanted`, or its first Ed25519 key."""
    keys = agent_keys(socket_path)
    if wanted is not None:
        match = [k for k in keys if k.blob == wanted.blob]
        if not match:
            raise AgentError(f"the ssh-agent does not hold the key {wanted.fingerprint} "
                             "(add it with ssh-add)")
        key = PublicKey.from_blob(match[0].blob, wanted.comment or match[0].comment)
    else:
        usable = [k for k in keys if k.key_type == ED25519]
        if not usable:
            raise AgentError("the ssh-agent holds no Ed25519 key (ssh-add ~/.ssh/id_ed25519)")
        key = usable[0]
    if key.key_type != ED25519:
        raise AgentError("only Ed25519 keys can sign reports (ssh-keygen -t ed25519)")
    return KeygenSigner(key, Path(), agent=True, agent_socket=socket_path)


__all__ = ["KeygenSigner", "AgentError", "file_signer", "agent_keys", "agent_signer", "NAMESPACE"]
