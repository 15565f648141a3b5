"""Signing and verifying report folders with OpenSSH: a sha256sum `MANIFEST` over every file
(manifest.py), signed as an `SSHSIG` signature by `ssh-keygen -Y sign` (sshkeygen.py, chosen from
`--sign` by signing.py), and checked by `sparktriage verify` (verify.py: integrity, signature,
identity through an allowed-signers file). Reading keys and signatures needs only the SSH wire
encoding (wire.py, keys.py, sshsig.py); demokey.py makes the demo's throwaway key.

Below `report/` in the import graph: the report states its signer and calls `sign_folder`;
nothing here knows what a report says (docs/verification.md).
"""
