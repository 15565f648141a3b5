"""`sparktriage verify`: check a report folder's signature, signer and every file digest."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from sparktriage.cli import console
from sparktriage.cli.exit_codes import ExitCode
from sparktriage.errors import UsageError


UNTRUSTED = "signature valid, signer not trusted: give --key or --allowed-signers"


SHOWN = 50  # paths listed per kind on the terminal; --json lists every one


def _listed(kind: str, paths: list[str]) -> list[str]:
    lines = [f"  {kind}: {p}" for p in paths[:SHOWN]]
    if len(paths) > SHOWN:
        lines.append(f"  ... and {len(paths) - SHOWN} more {kind} (--json lists them all)")
    return lines


def render_lines(result: VerifyResult, anchor: TrustAnchor | None) -> list[str]:
    """The verification result as plain lines (stdout)."""
    lines = [f"report: {result.report_dir}"]
    if result.manifest_problem:
        lines.append(f"MANIFEST: UNREADABLE: {result.manifest_problem}")
    else:
        lines.append(f"files: {result.files_checked} checked against MANIFEST")
        lines += _listed("MODIFIED", result.modified)
        lines += _listed("REMOVED", result.removed)
        lines += _listed("ADDED", result.added)
        if result.integrity_ok:
            lines.append("  every digest matches; nothing added or removed")
    if result.signature == "valid":
        lines.append(f"signature: valid (namespace sparktriage), key {result.signer_fingerprint}")
    else:
        lines.append(f"signature: {result.signature.upper()}: {result.signature_problem}")
    if result.signer_fingerprint and result.signature != "valid":
        lines.append(f"  key named in the signature: {result.signer_fingerprint}")
    if anchor is None and result.signature == "valid" and not result.untrusted_allowed:
        lines.append(UNTRUSTED)
    if anchor is None:
        if result.signer_fingerprint:
            lines.append(f"signer: identity NOT established (no --allowed-signers or --key): integrity "
                         f"was checked against the key inside the signature, {result.signer_fingerprint}; "
                         "confirm that fingerprint with the signer")
    elif result.trust == "trusted":
        who = ", ".join(result.principals) or "the given key"
        lines.append(f"signer: trusted: {who} ({anchor.source})")
    elif result.trust == "untrusted":
        lines.append(f"signer: NOT TRUSTED: {result.trust_problem}")
    lines += _listed("LINK OR NOT A REGULAR FILE (not followed)", result.links)
    lines.append("result: OK" if result.ok else "result: FAILED")
    return lines


def verify(
    report_dir: Path = typer.Argument(..., metavar="REPORT_DIR", help="Report folder (holds MANIFEST and MANIFEST.sig)."),
    allowed: Optional[Path] = typer.Option(None, "--allowed-signers", help="ssh-keygen allowed-signers file to trust."),
    key: Optional[Path] = typer.Option(None, "--key", help="OpenSSH public key file (KEY.pub) to trust."),
    identity: Optional[str] = typer.Option(None, "--identity", help="Require this principal of the allowed-signers file."),
    json_out: Optional[str] = typer.Option(None, "--json", help="Write the result to PATH, or - for stdout."),
    allow_untrusted: bool = typer.Option(False, "--allow-untrusted", help="Accept a valid signature by any key (no --key or --allowed-signers); exit 0 then."),
) -> None:
    """Verify a report's signature, its signer and the digest of every file."""
    from sparktriage.signing import allowed_signers
    from sparktriage.signing.keys import read_public_key
    from sparktriage.signing.verify import TrustAnchor, verify as verify_folder
    if allowed is not None and key is not None:
        raise UsageError("give either --allowed-signers or --key, not both")
    if identity is not None and allowed is None:
        raise UsageError("--identity needs --allowed-signers")
    anchor = None
    if allowed is not None:
        anchor = TrustAnchor(signers=tuple(allowed_signers.read(allowed)), source=str(allowed),
                             identity=identity)
    elif key is not None:
        anchor = TrustAnchor(key=read_public_key(key), source=str(key))
    result = verify_folder(report_dir, anchor, allow_untrusted=allow_untrusted)
    out = console.data_console(json_out)
    for line in render_lines(result, anchor):
        out.print(line, markup=False, highlight=False)
    console.write_json(result.as_dict(), json_out)
    if not result.ok:
        raise typer.Exit(ExitCode.FINDINGS)
