"""The redaction stage's parts: the run's stand-in map, argv, URLs, headers, the walker, the
terminal stream, and private key blocks split over records and log lines."""

from __future__ import annotations

import io
import json

import pytest

from sparktriage.bundle.export_redact import BundleScrubber
from sparktriage.logs.scan import analyze_inputs
from sparktriage.redact import run as redaction
from sparktriage.redact.capture import Redactor as CaptureRedactor
from sparktriage.redact.detect import KeyBlocks
from sparktriage.redact.documents import DocumentRedactor
from sparktriage.redact.stream import RedactingStream

KEY = "flagkey-Zq8Lm3Vt6Xb1Nc9Rk4Wd7"
HF = "hf_Zq8Lm3Vt6Xb1Nc9Rk4Wd7Hs2Jp5Ty0"
BODY = ["MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7VJTUt9Us8cKj",
        "MZR4Jx5pT0q8lQ3nB9vY2xW6kR1sD4fG7hJ0mN3pQ6tV9yB2cE5gH8jK1lM4nP7q",
        "Zx9Kq2Lm4Vb"]


@pytest.fixture(autouse=True)
def fresh_run():
    redaction.new_run()
    yield
    redaction.new_run()


def test_the_same_secret_gets_the_same_stand_in_everywhere_in_a_run():
    argv = redaction.argv(["bench", "--api-key", KEY, f"--token={HF}",
                           "--endpoint", "http://admin:Ur1P4ss@127.0.0.1:8000", "HF_TOKEN=" + HF])
    stand_in = argv[2]
    assert stand_in.startswith("REDACTED-") and KEY not in " ".join(argv) and HF not in " ".join(argv)
    assert argv[3] == f"--token={argv[6].split('=', 1)[1]}"  # HF: one stand-in in both places
    assert argv[4] == "--endpoint" and "Ur1P4ss" not in argv[5] and "admin:" in argv[5]
    document = redaction.document({"args": {"api_key": KEY}, "text": f"using {KEY}"})
    assert document["args"]["api_key"] == stand_in and document["text"] == f"using {stand_in}"
    assert redaction.text(f"key {KEY} again") == f"key {stand_in} again"


def test_urls_and_headers():
    assert redaction.url("https://user:S3cretPw@host:1/v1") == \
        "https://user:REDACTED-url-password-1@host:1/v1"
    assert redaction.url("http://127.0.0.1:8000") == "http://127.0.0.1:8000"
    headers = redaction.headers({"Authorization": "Bearer abcdefgh12345678", "X-Api-Key": KEY,
                                 "Content-Type": "application/json"})
    assert headers["Content-Type"] == "application/json"
    assert all(v.startswith("REDACTED-") for k, v in headers.items() if k != "Content-Type")


def test_help_metavars_and_paths_are_not_secrets():
    for text in ("  --api-key <str>   Bearer token", "  --api-key TEXT", "  --token KEY",
                 "error: --sign /tmp/x/missing-key: no such key file"):
        assert redaction.text(text) == text


def test_capture_argv_keeps_its_hmac_stand_ins():
    capture = CaptureRedactor(b"k" * 32)
    out = capture.args(["vllm", "serve", "--api-key", KEY, f"--hf-token={HF}", "HF_TOKEN=" + HF])
    assert out[3].startswith("***") and out[4].startswith("--hf-token=***")
    assert out[4].split("=", 1)[1] == out[5].split("=", 1)[1]  # same value, same stand-in


def _records(key_lines):
    records = [{"t": 1.0, "node": "a", "line": "loading -----BEGIN OPENSSH PRIVATE KEY-----"}]
    records += [{"t": 2.0 + i, "node": "a", "line": line} for i, line in enumerate(key_lines)]
    records.append({"t": 9.0, "node": "a", "line": "-----END OPENSSH PRIVATE KEY-----"})
    records.append({"t": 10.0, "node": "a", "line": "INFO after the key"})
    return records


def test_export_never_rewrites_record_keys_after_a_key_block():
    text = "".join(json.dumps(r) + "\n" for r in _records(BODY))
    out = BundleScrubber().file("nodes/a/logs/server.lines.jsonl", text.encode()).decode()
    rows = [json.loads(line) for line in out.splitlines()]
    assert [sorted(r) for r in rows] == [["line", "node", "t"]] * len(rows)
    assert [r["t"] for r in rows] == [1.0, 2.0, 3.0, 4.0, 9.0, 10.0] and rows[1]["node"] == "a"
    assert not any(b in out for b in BODY)
    assert rows[-1]["line"] == "INFO after the key"


def test_the_walker_follows_a_key_block_per_field_only():
    walker = DocumentRedactor()
    rows = [walker.value(r) for r in _records(BODY)]
    assert all(r["line"].startswith("REDACTED-private-key-") for r in rows[1:4])
    assert rows[4]["line"].startswith("REDACTED-private-key-")  # the END line is in the block
    assert rows[5]["line"] == "INFO after the key"


def test_the_terminal_stream_replaces_a_printed_key_block():
    inner = io.StringIO()
    stream = RedactingStream(inner)
    stream.write("-----BEGIN OPENSSH PRIVATE KEY-----\n" + "\n".join(BODY) + "\n")
    stream.write("-----END OPENSSH PRIVATE KEY-----\nbye ")
    stream.write(f"{HF}\n")
    stream.flush()
    assert not any(b in inner.getvalue() for b in BODY) and HF not in inner.getvalue()
    assert inner.getvalue().endswith("bye REDACTED-hf-token-1\n")


def test_key_blocks_follow_lines_until_end():
    blocks = KeyBlocks()
    seen = [blocks.inside(line) for line in
            ["a", "x -----BEGIN RSA PRIVATE KEY-----", BODY[0], "-----END RSA PRIVATE KEY-----", "b"]]
    assert seen == [False, True, True, True, False]


@pytest.mark.parametrize("compiled_path", [None, False])
def test_a_prefixed_key_block_leaves_no_line_in_the_logs_document(tmp_path, compiled_path):
    pre = "(APIServer pid=1) ERROR 11-29 20:55:0{} [api_server.py:9] "
    lines = [pre.format(1) + "cannot load: -----BEGIN OPENSSH PRIVATE KEY-----"]
    lines += [pre.format(2) + body for body in BODY]
    lines += [pre.format(3) + "-----END OPENSSH PRIVATE KEY-----", pre.format(4) + "later error"]
    log = tmp_path / "k.log"
    log.write_text("\n".join(lines) + "\n")
    document = analyze_inputs([str(log)], compiled_path=compiled_path)
    text = json.dumps(document)
    assert not any(b in text for b in BODY)
    assert document["errors"][-1]["text"] == "later error"
    assert [e["text"] for e in document["errors"][:-1]] == ["***"] * (len(BODY) + 2)


def test_a_false_positive_word_is_not_spread_through_later_output():
    """`bearer credentials` in prose is replaced where it stands, but the word is not
    remembered: later lines that say "credentials" or "run directory" stay whole; a
    credential-shaped value is remembered and replaced later too."""
    from sparktriage.redact.detect import SecretBook, SecretScrubber

    scrub = SecretScrubber(SecretBook())
    scrub.scrub("send the bearer credentials to the server")
    assert scrub.scrub("no credentials were needed") == "no credentials were needed"
    scrub.scrub('"password": " directory"')
    assert scrub.scrub("run directory: /tmp/x") == "run directory: /tmp/x"
    token = "Zq8Lm3Vt6Rr2Kp9"
    first = scrub.scrub(f"--api-key {token}")
    assert token not in first
    assert token not in scrub.scrub(f"echo {token} again")
