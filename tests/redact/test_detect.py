"""Secret patterns: planted secrets in every shape are replaced; ordinary text is left alone."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sparktriage.redact.detect import SecretBook, SecretScrubber, secret_name

PLANTED = [
    ("vllm serve /m --api-key sk-proj-Zq8vT3xK9mW2pL5nR7sB4dF6 --port 8000", "sk-proj-Zq8vT3xK9mW2pL5nR7sB4dF6"),
    ("vllm serve /m --api-key=shortpass77", "shortpass77"),
    ("--hf-token 'hf_abcDEF1234567890ghij'", "hf_abcDEF1234567890ghij"),
    ("export HF_TOKEN=hf_QwErTyUiOpAsDfGhJkLz", "hf_QwErTyUiOpAsDfGhJkLz"),
    ("HUGGING_FACE_HUB_TOKEN=plainvalue123", "plainvalue123"),
    ("password: hunter2", "hunter2"),
    ('{"db_password": "c0rrect horse"}', "c0rrect horse"),
    ("non-default args: {'model': '/m', 'api_key': ['plainsecret123']}", "plainsecret123"),
    ("Namespace(api_key='k3y-in-namespace', port=8000)", "k3y-in-namespace"),
    ("git clone https://deploy:Tr0ub4dor@git.example.com/repo.git", "Tr0ub4dor"),
    ("Authorization: Bearer abcdefghijklmnopqrst", "abcdefghijklmnopqrst"),
    ("curl -H 'Authorization: Basic dXNlcjpwYXNzd29yZA=='", "dXNlcjpwYXNzd29yZA=="),
    ("aws_access_key_id = AKIAIOSFODNN7EXAMPLE", "AKIAIOSFODNN7EXAMPLE"),
    ("aws_secret_access_key=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"),
    ("NGC_API_KEY=nvapi-AbCdEfGhIjKlMnOpQrStUvWx", "nvapi-AbCdEfGhIjKlMnOpQrStUvWx"),
    ("token ghp_abcdefghijklmnopqrstuvwxyz0123456789", "ghp_abcdefghijklmnopqrstuvwxyz0123456789"),
    ("jwt eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U", "dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U"),
    ("-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA1x\nabc\n-----END RSA PRIVATE KEY-----", "MIIEpAIBAAKCAQEA1x"),
    ("clientSecret: s3cr3t-value", "s3cr3t-value"),
    # an assignment inside the value of another ("failed: password=...") is found too
    ("ERROR failed: password=hunter2hunter2", "hunter2hunter2"),
    ("retry 3: upstream: api_key=k-nested-777 rejected", "k-nested-777"),
    ("INFO args: Namespace(api_key='k-plain-secret-7', port=8000)", "k-plain-secret-7"),
]

UNCHANGED = [
    "max_tokens=256 token_source: ids num_speculative_tokens: 3",
    "INFO 01-02 03:04:05 [loader.py:12] Loading weights took 12.31 seconds",
    "vllm serve /models/m --max-tokens 256 --tokenizer /models/tok --port 8000",
    "http://127.0.0.1:8000/v1/completions",
    "revision 3f786850e387550fdab836ed7e6dc881de23001b",
    "Avg generation throughput: 40.7 tokens/s, Running: 1 reqs",
    "the key insight: weights are read once per token",
    "api_key: set",
    "sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
]


@pytest.mark.parametrize("text, secret", PLANTED)
def test_planted_secret_is_replaced(text, secret):
    scrubber = SecretScrubber(SecretBook())
    out = scrubber.scrub(text)
    assert secret not in out, out
    assert "REDACTED-" in out


@pytest.mark.parametrize("text", UNCHANGED)
def test_ordinary_text_is_left_alone(text):
    assert SecretScrubber(SecretBook()).scrub(text) == text


def test_same_secret_same_stand_in_everywhere_and_distinct_secrets_differ():
    scrubber = SecretScrubber(SecretBook())
    a = scrubber.scrub("--api-key=alpha-secret-1")
    b = scrubber.scrub("api_key: alpha-secret-1")
    c = scrubber.scrub("--api-key=beta-secret-2")
    assert a.split("=")[1] == b.split(": ")[1]
    assert a.split("=")[1] != c.split("=")[1]


def test_private_key_split_over_log_lines_is_removed_line_by_line():
    scrubber = SecretScrubber(SecretBook())
    lines = ["starting", "-----BEGIN OPENSSH PRIVATE KEY-----",
             "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW",
             "QyNTUxOQAAACDW3Uv1x9sX1X0f7J1e", "-----END OPENSSH PRIVATE KEY-----", "done"]
    out = [scrubber.scrub(line) for line in lines]
    assert out[0] == "starting" and out[-1] == "done"
    assert all(line not in "".join(out[1:5]) for line in lines[2:4])
    assert out[1].startswith("-----SCRUBBED OPENSSH PRIVATE KEY-----")


@pytest.mark.parametrize("name, secret", [
    ("HF_TOKEN", True), ("api_key", True), ("OPENAI_API_KEY", True), ("dbPassword", True),
    ("client-secret", True), ("AWS_SECRET_ACCESS_KEY", True), ("max_tokens", False),
    ("token_source", False), ("password_file", False), ("num_speculative_tokens", False),
    ("SSH_AUTH_SOCK", False), ("monkey", False), ("keys", False), ("api_keys", True),
    ("public_key", False), ("signer_pubkey", False), ("private_key", True),
])
def test_secret_names(name, secret):
    assert secret_name(name) is secret


_SECRETS = st.sampled_from([s for _, s in PLANTED if len(s) >= 16 and s.startswith(("sk-", "hf_", "nvapi-", "ghp_", "AKIA"))])


@settings(max_examples=200, deadline=None)
@given(prefix=st.text(max_size=40), secret=_SECRETS, suffix=st.text(max_size=40),
       sep=st.sampled_from([" ", "\n", "=", ": ", "'", '"', ",", "(", "\t"]))
def test_shaped_secrets_never_survive_in_random_text(prefix, secret, suffix, sep):
    text = prefix + sep + secret + sep + suffix
    out = SecretScrubber(SecretBook()).scrub(text)
    assert secret not in out


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=300))
def test_scrub_never_crashes(text):
    assert isinstance(SecretScrubber(SecretBook()).scrub(text), str)
