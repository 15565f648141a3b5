"""Verify a report folder: its MANIFEST signature, the signer, and every file's digest.

Three independent questions, each answered in the result (never one opaque boolean):

1. integrity: does every file listed in MANIFEST still have its digest, and are there files
   that were removed from or added to the folder since it was signed?
2. signature: is `MANIFEST.sig` a valid SSHSIG signature of MANIFEST in namespace
   `sparktriage`, by the key it names? (`ssh-keygen -Y check-novalidate`)
3. identity: is that key trusted: equal to `--key`, or listed for the namespace in
   `--allowed-signers` (optionally for `--identity`)? (`ssh-keygen -Y find-principals` then
   `-Y verify -I PRINCIPAL`.) Without either, integrity is checked against the key inside the
   signature, the signer is not established, and the result is not ok (anyone can re-sign a
   changed report) unless `allow_untrusted` was asked for.

The cryptography is OpenSSH's. What stays in process: reading the signature's key and
namespace (sshsig.parse: the result names the signer, and a malformed file is said to be one),
and parsing the allowed-signers file to name a bad line and to say why a listed key was not
accepted (docs/verification.md).

Nothing in the folder is followed through a link: a symbolic link (to a file or a folder) or
anything but a regular file or folder in the report is listed in `links` and fails integrity,
and MANIFEST or MANIFEST.sig as a link is refused.
"""

from __future__ import annotations

import os
import stat
import subprocess
from dataclasses import asdict, dataclass, field
from pathlib import Path

from sparktriage.errors import InputError
from sparktriage.limits import MANIFEST_MAX_BYTES, MANIFEST_MAX_ENTRIES, limit_hit, size_text
from sparktriage.signing import allowed_signers, manifest, sshsig
from sparktriage.signing.keys import PublicKey

SCHEMA_VERSION = 1
MAX_SIGNATURE_BYTES = 64 * 1024  # an Ed25519 SSHSIG is about 300 bytes


@dataclass(frozen=True)
class TrustAnchor:
    """What the verifier trusts: one key, or an allowed-signers file (optionally one identity)."""

    key: PublicKey | None = None
    signers: tuple[allowed_signers.AllowedSigner, ...] = ()
    source: str | None = None  # the file it came from (for an allowed-signers file: its path)
    identity: str | None = None


@dataclass
class VerifyResult:
    """Everything verification found; `ok` is true only when nothing failed."""

    report_dir: str
    files_checked: int = 0
    modified: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    added: list[str] = field(default_factory=list)
    manifest_problem: str | None = None
    signature: str = "missing"  # valid | invalid | missing | malformed
    signature_problem: str | None = None
    signer_key: str | None = None
    signer_fingerprint: str | None = None
    trust: str = "none"  # trusted | untrusted | none (no anchor given)
    trust_problem: str | None = None
    principals: list[str] = field(default_factory=list)
    links: list[str] = field(default_factory=list)  # symlinks and non-regular files found
    untrusted_allowed: bool = False  # --allow-untrusted: a valid signature by anyone is ok

    @property
    def integrity_ok(self) -> bool:
        return self.manifest_problem is None and not (self.modified or self.removed or self.added
                                                      or self.links)

    @property
    def ok(self) -> bool:
        trusted = self.trust == "trusted" or (self.trust == "none" and self.untrusted_allowed)
        return self.integrity_ok and self.signature == "valid" and trusted

    @property
    def identity_established(self) -> bool:
        return self.signature == "valid" and self.trust == "trusted"

    def as_dict(self) -> dict:
        out = {"schema_version": SCHEMA_VERSION, "kind": "sparktriage-verify", **asdict(self)}
        out.update(ok=self.ok, integrity_ok=self.integrity_ok,
                   identity_established=self.identity_established)
        return out


def _odd_entries(folder: Path) -> list[str]:
    """Paths below `folder` that are symbolic links or neither regular files nor folders."""
    odd = []
    for dirpath, dirnames, filenames in os.walk(folder, followlinks=False):
        base = Path(dirpath)
        for name in dirnames + filenames:
            path = base / name
            mode = path.lstat().st_mode
            if stat.S_ISLNK(mode) or not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
                odd.append(path.relative_to(folder).as_posix())
    return sorted(odd)


def _check_files(folder: Path, entries: list[manifest.Entry], result: VerifyResult) -> None:
    listed = {e.path for e in entries}
    result.links = _odd_entries(folder)
    for entry in entries:
        path = folder / entry.path
        if entry.path in result.links or any(entry.path.startswith(p + "/") for p in result.links):
            continue  # not read through a link; reported in `links`
        if not (path.is_file()):
            result.removed.append(entry.path)
            continue
        result.files_checked += 1
        try:
            digest = manifest.sha256_file(path)
        except OSError:
            digest = None  # unreadable now: it cannot be shown to be what was signed
        if digest != entry.digest:
            result.modified.append(entry.path)
    result.added = [p for p in manifest.folder_files(folder)
                    if p not in listed and p not in result.links]


def _keygen(argv: list[str], data: bytes) -> subprocess.CompletedProcess:
    try:
        return subprocess.run(["ssh-keygen", *argv], input=data, capture_output=True,
                              timeout=60, check=False)
    except FileNotFoundError as exc:
        raise InputError("ssh-keygen not found: OpenSSH is needed to verify reports "
                         "(apt-get install openssh-client)") from exc
    except subprocess.TimeoutExpired as exc:
        raise InputError("ssh-keygen did not answer within 60 s") from exc


def _check_signature(signature: sshsig.Signature, sig_path: Path, data: bytes) -> str | None:
    """None when `ssh-keygen -Y check-novalidate` accepts the signature, else why not."""
    if signature.namespace != sshsig.NAMESPACE:
        return f"signature namespace is {signature.namespace!r}, expected {sshsig.NAMESPACE!r}"
    done = _keygen(["-Y", "check-novalidate", "-n", sshsig.NAMESPACE, "-s", str(sig_path)], data)
    if done.returncode == 0:
        return None
    return "signature does not match MANIFEST (it was altered or signed over other content)"


def _principals(anchor: TrustAnchor, sig_path: Path, data: bytes) -> list[str]:
    """The principals of the allowed-signers file that `ssh-keygen -Y verify` accepts."""
    allowed = str(anchor.source)
    if anchor.identity is not None:
        candidates = [anchor.identity]
    else:
        found = _keygen(["-Y", "find-principals", "-f", allowed, "-s", str(sig_path)], b"")
        candidates = [p for p in found.stdout.decode("utf-8", "replace").split()
                      if found.returncode == 0 and p]
    good = []
    for principal in candidates:
        done = _keygen(["-Y", "verify", "-f", allowed, "-I", principal, "-n", sshsig.NAMESPACE,
                        "-s", str(sig_path)], data)
        if done.returncode == 0:
            good.append(principal)
    return sorted(set(good))


def _check_trust(signature: sshsig.Signature, anchor: TrustAnchor, result: VerifyResult,
                 sig_path: Path, data: bytes) -> None:
    key = signature.public_key
    if anchor.key is not None:
        if anchor.key.blob == key.blob:
            result.trust = "trusted"
        else:
            result.trust = "untrusted"
            result.trust_problem = (f"wrong key: signed by {key.fingerprint}, expected "
                                    f"{anchor.key.fingerprint} ({anchor.source})")
        return
    principals = _principals(anchor, sig_path, data) if result.signature == "valid" else []
    if principals:
        result.trust = "trusted"
        result.principals = principals
        return
    result.trust = "untrusted"
    matching = [s for s in anchor.signers if s.key.blob == key.blob]
    if not matching:
        ca = " (certificate authorities are not supported)" if any(
            s.cert_authority for s in anchor.signers) else ""
        result.trust_problem = f"signing key {key.fingerprint} is not in {anchor.source}{ca}"
        return
    lines = ", ".join(str(s.line) for s in matching)
    wanted = f" for identity {anchor.identity!r}" if anchor.identity else ""
    result.trust_problem = (f"signing key {key.fingerprint} is in {anchor.source} (line "
                            f"{lines}) but not for namespace {signature.namespace!r}{wanted} "
                            "at this time")


def _read_manifest(path: Path) -> bytes:
    """MANIFEST's bytes, refused (exit 2, one line) past its size or entry cap before any
    entry is parsed or any file read."""
    with open(path, "rb") as fh:
        data = fh.read(MANIFEST_MAX_BYTES + 1)
    if len(data) > MANIFEST_MAX_BYTES:
        raise limit_hit("MANIFEST", size_text(MANIFEST_MAX_BYTES), str(path))
    if data.count(b"\n") + (not data.endswith(b"\n")) > MANIFEST_MAX_ENTRIES:
        raise limit_hit("the number of MANIFEST lines", f"{MANIFEST_MAX_ENTRIES} lines",
                        str(path))
    return data


def verify(folder: Path, anchor: TrustAnchor | None = None,
           allow_untrusted: bool = False) -> VerifyResult:
    """Verify a report folder; InputError only when it is not a report folder at all."""
    if folder.is_symlink() or not folder.is_dir():
        raise InputError(f"{folder}: no such report folder" + (" (a symbolic link, not followed)"
                                                             if folder.is_symlink() else ""))
    for name in (manifest.MANIFEST, manifest.SIGNATURE):
        if (folder / name).is_symlink():
            raise InputError(f"{folder / name}: a symbolic link (not followed)")
    manifest_path = folder / manifest.MANIFEST
    if not manifest_path.is_file():
        raise InputError(f"{folder}: no MANIFEST, so this is not a sparktriage report folder")
    result = VerifyResult(report_dir=str(folder), untrusted_allowed=allow_untrusted)
    data = _read_manifest(manifest_path)
    try:
        entries = manifest.parse(data)
    except manifest.ManifestFormatError as exc:
        result.manifest_problem = str(exc)
        entries = []
    if result.manifest_problem is None:
        _check_files(folder, entries, result)
    sig_path = folder / manifest.SIGNATURE
    if not sig_path.is_file():
        result.signature_problem = "MANIFEST.sig is missing: the report is not signed"
        return result
    if sig_path.stat().st_size > MAX_SIGNATURE_BYTES:
        result.signature = "malformed"
        result.signature_problem = f"MANIFEST.sig is larger than {MAX_SIGNATURE_BYTES} bytes"
        return result
    try:
        signature = sshsig.parse(sig_path.read_text(encoding="utf-8", errors="replace"))
    except sshsig.SignatureFormatError as exc:
        result.signature = "malformed"
        result.signature_problem = str(exc)
        return result
    result.signer_key = signature.public_key.openssh()
    result.signer_fingerprint = signature.public_key.fingerprint
    problem = _check_signature(signature, sig_path, data)
    result.signature = "valid" if problem is None else "invalid"
    result.signature_problem = problem
    if anchor is not None:
        _check_trust(signature, anchor, result, sig_path, data)
    return result
