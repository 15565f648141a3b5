"""A minimal ssh-agent client: list identities and ask for a signature (draft-miller-ssh-agent).

Messages are `uint32 length || byte type || payload` over the UNIX socket named by
`SSH_AUTH_SOCK`. Only the two requests signing needs are implemented: REQUEST_IDENTITIES (11 →
12) and SIGN_REQUEST (13 → 14). The private key never leaves the agent.
"""

from __future__ import annotations

import os
import socket
from dataclasses import dataclass

from sparktriage.errors import InputError
from sparktriage.report.keys import ED25519, PublicKey
from sparktriage.report.wire import Reader, WireError, string, uint32

FAILURE = 5
REQUEST_IDENTITIES = 11
IDENTITIES_ANSWER = 12
SIGN_REQUEST = 13
SIGN_RESPONSE = 14
_MAX_MESSAGE = 256 * 1024
_TIMEOUT_S = 30.0


class AgentError(InputError):
    """The agent cannot be reached or refused a request."""


class AgentClient:
    """One connection to an ssh-agent."""

    def __init__(self, socket_path: str | None = None) -> None:
        path = socket_path or os.environ.get("SSH_AUTH_SOCK")
        if not path:
            raise AgentError("no ssh-agent: SSH_AUTH_SOCK is not set",
                             hint="start one (eval $(ssh-agent)) and ssh-add your key")
        self.path = path

    def _request(self, message_type: int, payload: bytes) -> tuple[int, Reader]:
        message = bytes([message_type]) + payload
        try:
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
                sock.settimeout(_TIMEOUT_S)
                sock.connect(self.path)
                sock.sendall(uint32(len(message)) + message)
                length = int.from_bytes(_recv_exact(sock, 4), "big")
                if length == 0 or length > _MAX_MESSAGE:
                    raise AgentError(f"ssh-agent at {self.path} sent a {length}-byte message")
                reply = _recv_exact(sock, length)
        except OSError as exc:
            raise AgentError(f"cannot talk to ssh-agent at {self.path}: {exc.strerror or exc}") from exc
        return reply[0], Reader(reply[1:])

    def identities(self) -> list[PublicKey]:
        """Every key the agent holds (any type), with its comment."""
        kind, reader = self._request(REQUEST_IDENTITIES, b"")
        if kind != IDENTITIES_ANSWER:
            raise AgentError(f"ssh-agent refused to list keys (reply type {kind})")
        keys = []
        try:
            for _ in range(reader.uint32()):
                blob = reader.string()
                comment = reader.string().decode("utf-8", errors="replace")
                try:
                    keys.append(PublicKey.from_blob(blob, comment))
                except WireError:
                    continue  # a key type we cannot parse (certificates, ...): not ours to use
        except WireError as exc:
            raise AgentError(f"malformed identities answer from ssh-agent ({exc})") from exc
        return keys

    def sign(self, key: PublicKey, data: bytes) -> bytes:
        """Ask the agent to sign data with key; returns the SSH signature blob."""
        kind, reader = self._request(SIGN_REQUEST, string(key.blob) + string(data) + uint32(0))
        if kind == FAILURE:
            raise AgentError(f"ssh-agent refused to sign with {key.fingerprint}",
                             hint="is the key still loaded, or does the agent ask for confirmation?")
        if kind != SIGN_RESPONSE:
            raise AgentError(f"unexpected reply type {kind} from ssh-agent")
        try:
            blob = reader.string()
        except WireError as exc:
            raise AgentError(f"malformed signature from ssh-agent ({exc})") from exc
        return blob


def _recv_exact(sock: socket.socket, n: int) -> bytes:
    chunks = []
    while n:
        chunk = sock.recv(n)
        if not chunk:
            raise OSError("agent closed the connection")
        chunks.append(chunk)
        n -= len(chunk)
    return b"".join(chunks)


@dataclass(frozen=True)
class AgentSigner:
    """A key held by ssh-agent, used as a Signer."""

    public_key: PublicKey
    client: AgentClient

    def sign(self, data: bytes) -> bytes:
        blob = self.client.sign(self.public_key, data)
        if not self.public_key.verify(blob, data):
            raise AgentError("ssh-agent returned a signature that does not verify")
        return blob


def agent_signer(wanted: PublicKey | None = None, socket_path: str | None = None) -> AgentSigner:
    """The agent's key matching `wanted`, or its only/first Ed25519 key when None."""
    client = AgentClient(socket_path)
    keys = [k for k in client.identities() if k.key_type == ED25519]
    if wanted is not None:
        for key in keys:
            if key.blob == wanted.blob:
                return AgentSigner(key, client)
        raise AgentError(f"ssh-agent does not hold the key {wanted.fingerprint}",
                         hint="ssh-add the matching private key")
    if not keys:
        raise AgentError("ssh-agent holds no Ed25519 key", hint="ssh-add ~/.ssh/id_ed25519")
    return AgentSigner(keys[0], client)
