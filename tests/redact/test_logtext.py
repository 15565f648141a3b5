"""Secrets in logs never reach a document."""

from __future__ import annotations

from sparktriage.logs.document import analyze
from sparktriage.logs.parser import parse_lines
from sparktriage.redact.logtext import redact, secret_name


def test_redact_pairs_and_lone_values():
    assert redact("api_key='abc' model=m") == "api_key='***' model=m"
    assert "hf_abcdefghijklmnopqrstu" not in redact("token hf_abcdefghijklmnopqrstu end")
    assert "sekrit" not in redact('"password": "sekrit", "x": 1')
    assert redact("Authorization: Bearer abcdefgh12345678") == "Authorization: Bearer ***"
    # the one detector (redact/detect.py) also finds URL passwords and secret flags
    assert redact("GET https://user:pw123456@hub/x") == "GET https://user:***@hub/x"
    assert redact("--api-key sk-abcdefghijklmnopqrstuvwx --port 8000") == "--api-key *** --port 8000"
    assert redact("max_tokens=256 tokenizer=llama") == "max_tokens=256 tokenizer=llama"
    assert [secret_name(n) for n in ("api_key", "hf_token", "token", "max_tokens", "tokenizer")] == [
        True, True, True, False, False]


def test_planted_secrets_are_gone_from_the_logs_document():
    lines = [
        "(APIServer pid=1) INFO 01-01 00:00:00 [x.py:1] non-default args: {'api_key': 'plain-secret', "
        "'hf_token': 'hf_plantedplantedplanted', 'max_tokens': 5}",
        "(APIServer pid=1) WARNING 01-01 00:00:01 [x.py:2] calling https://hub with Bearer plantedbearer123",
        "(APIServer pid=1) ERROR 01-01 00:00:02 [x.py:3] failed: password=hunter2hunter2",
    ]
    doc = analyze(parse_lines(lines))
    text = repr(doc)
    for secret in ("plain-secret", "hf_plantedplantedplanted", "plantedbearer123", "hunter2hunter2"):
        assert secret not in text
    assert doc["args"]["max_tokens"] == 5
