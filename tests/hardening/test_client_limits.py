"""Issue 16: the streaming client enforces what it asked for, and every request has a record."""

from __future__ import annotations

import asyncio
import json
import time

import pytest

from sparktriage.bench.client import ClientSettings, make_stream_client, stream_request
from sparktriage.errors import InputError
from sparktriage.metrics.prometheus import scrape
from sparktriage.limits import LINE_MAX_BYTES
from sparktriage.store.documents import RecordWriter, read_records
from sparktriage.testbed import hostile

BODY = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 16,
        "stream": True}


def _run(url: str, bodies: list[dict], stall: float = 10.0) -> list[dict]:
    settings = ClientSettings(base_url=url, stall_timeout_s=stall, request_timeout_s=60.0)

    async def go():
        async with make_stream_client(settings) as client:
            return [await stream_request(client, settings, "/v1/chat/completions", body)
                    for body in bodies]
    return asyncio.run(go())


def test_endless_stream_stops_after_the_requested_tokens():
    # before: no finish, no [DONE]: the body was buffered until the 1,800 s deadline (3 GB in 6 s)
    with hostile.Server(hostile.endless_sse) as server:
        started = time.monotonic()
        records = _run(server.url, [BODY, BODY])
        assert time.monotonic() - started < 20
    for record in records:  # the connection was closed and the next request went on
        assert record["status"] == "error" and record["reason"].startswith("overlong: "), record
        assert 16 <= len(record["chunks"]) <= 16 + 64  # asked + margin, no more kept
    assert server.requests == 2


def test_one_huge_line_is_line_too_long_in_linear_time():
    # before: one 64 MiB SSE line cost 45 s of CPU (quadratic buffering)
    with hostile.Server(hostile.long_line_sse(64 << 20)) as server:
        cpu = time.process_time()
        (record,) = _run(server.url, [BODY])
        assert time.process_time() - cpu < 5
    assert record["status"] == "error" and record["reason"].startswith("line-too-long: ")
    assert str(LINE_MAX_BYTES) in record["reason"]


@pytest.mark.parametrize("name", sorted(hostile.ODD_PAYLOADS))
def test_every_unicode_oddity_still_gets_a_record(name, tmp_path):
    # before: an escaped lone surrogate made the encoder raise while writing the record: exit 70
    # and an empty requests.jsonl
    with hostile.Server(hostile.odd_sse(hostile.ODD_PAYLOADS[name])) as server:
        records = _run(server.url, [BODY, BODY, BODY])
    path = tmp_path / "requests.jsonl"
    with RecordWriter(path) as writer:
        for record in records:
            writer.append(record)
    back = list(read_records(path))
    assert len(back) == 3
    for record in back:
        assert record["status"] == "ok", record
        assert [c["text"] for c in record["chunks"]][-1] == "end"
        text = json.dumps(record, ensure_ascii=False)
        text.encode("utf-8")  # nothing UTF-8 cannot carry was read back
    if "surrogate" in name or name in ("invalid-utf8", "overlong-encoding"):
        assert all(r.get("escaped") is True for r in back)
        assert "\\ud" in back[0]["chunks"][0]["text"] or "\\udc" in back[0]["chunks"][0]["text"]


def test_record_writer_escapes_and_flags(tmp_path):
    path = tmp_path / "r.jsonl"
    with RecordWriter(path) as writer:
        writer.append({"text": "a\ud800b", "nested": [{"k\udfff": "\x00\ufeff"}]})
    (record,) = read_records(path)
    assert record == {"text": "a\\ud800b", "nested": [{"k\\udfff": "\x00\ufeff"}],
                      "escaped": True}
    path.write_text('{"line": "x\\ud800y"}\n')
    (record,) = read_records(path)
    assert record == {"line": "x\\ud800y"}


def test_endless_metrics_page_is_cut_at_the_byte_cap():
    # before: the size check ran after reading everything: 3 GB
    with hostile.Server(hostile.endless_metrics) as server:
        started = time.monotonic()
        with pytest.raises(InputError, match="metrics page exceeds the limit of 16 MiB"):
            scrape(server.url + "/metrics", timeout_s=30)
        assert time.monotonic() - started < 20
