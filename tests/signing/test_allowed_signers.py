"""Parsing `allowed_signers` files as ssh-keygen(1) defines them."""

from __future__ import annotations

import datetime as dt

import pytest

from sparktriage.errors import InputError
from sparktriage.signing import allowed_signers
from sparktriage.signing.sshkeygen import file_signer


def test_lines_with_and_without_options(report_keys, tmp_path):
    key = file_signer(report_keys["main"]).public_key
    path = tmp_path / "allowed"
    path.write_text("# comment\n\n"
                    f"alice@example.com,bob@* {key.openssh()} laptop key\n"
                    f'carol@example.com namespaces="file,sparktriage",valid-before="20000101" {key.openssh()}\n'
                    f'ca@example.com cert-authority {key.openssh()}\n')
    alice, carol, ca = allowed_signers.read(path)
    assert alice.principals == ("alice@example.com", "bob@*") and alice.namespaces is None
    assert alice.matches_identity("bob@corp") and not alice.matches_identity("eve@corp")
    assert carol.namespaces == ("file", "sparktriage") and carol.allows_namespace("sparktriage")
    assert not carol.valid_at(dt.datetime.now(dt.timezone.utc))
    assert ca.cert_authority and alice.line == 3


@pytest.mark.parametrize("content, fragment", [
    ("alice\n", "expected"),
    ('alice namespaces="x\n', "unbalanced"),
    ("alice ssh-ed25519 !!!\n", "malformed public key"),
    ("# nothing\n", "no allowed signer"),
    ('alice valid-after="2020" ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIJ+Wq1vLnWnQhG4iL8M2xB4oM0r4fUuZp0Kx2q3hGmQX\n', "bad time"),
])
def test_malformed_files_give_file_and_line(tmp_path, content, fragment):
    path = tmp_path / "allowed"
    path.write_text(content)
    with pytest.raises(InputError, match=fragment) as info:
        allowed_signers.read(path)
    assert str(path) in info.value.one_line()
