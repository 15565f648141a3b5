"""The incremental SSE decoder: exact events, any byte split, hostile bytes."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sparktriage.bench.sse import MAX_EVENT_BYTES, SSEDecoder, SSEError


def decode(pieces: list[bytes]) -> list[str]:
    decoder = SSEDecoder()
    events = []
    for piece in pieces:
        events.extend(decoder.feed(piece))
    return events + decoder.close()


def test_vllm_stream_shape():
    stream = (b'data: {"a": 1}\n\n'
              b'data: {"b": 2}\n\n'
              b"data: [DONE]\n\n")
    assert decode([stream]) == ['{"a": 1}', '{"b": 2}', "[DONE]"]


@pytest.mark.parametrize("eol", [b"\n", b"\r\n", b"\r"])
def test_every_line_ending(eol):
    stream = b"data: one" + eol + eol + b"data: two" + eol + eol
    assert decode([stream]) == ["one", "two"]


def test_multiline_data_comments_and_other_fields():
    stream = (b": keep-alive ping\n"
              b"event: message\nid: 7\nretry: 100\n"
              b"data: first line\ndata:second line\ndata\n\n")
    assert decode([stream]) == ["first line\nsecond line\n"]


def test_blank_lines_without_data_make_no_event():
    assert decode([b"\n\n\n: ping\n\n"]) == []


def test_final_event_without_blank_line_counts_at_close():
    decoder = SSEDecoder()
    assert decoder.feed(b"data: [DONE]") == []
    assert decoder.close() == ["[DONE]"]


def test_crlf_split_between_pieces_is_one_line_end():
    # A CR at the end of a piece may be the first half of CRLF: no empty line in between.
    assert decode([b"data: x\r", b"\n\r", b"\n"]) == ["x"]


def test_unexpected_line_is_an_error():
    with pytest.raises(SSEError, match="unexpected line"):
        decode([b"<html><body>502 Bad Gateway</body></html>\n\n"])


def test_invalid_utf8_is_kept_as_escapes_not_an_error():
    # issue 16: one odd byte from a server must not lose the measurement; the bytes survive as
    # surrogate escapes, which the record writer stores escaped and flagged
    assert decode([b"data: \xff\xfe\n\n"]) == ["\udcff\udcfe"]


def test_oversized_line_is_refused_without_growing_forever():
    decoder = SSEDecoder()
    with pytest.raises(SSEError, match="longer than"):
        decoder.feed(b"data: " + b"x" * (MAX_EVENT_BYTES + 1))


# --- properties -------------------------------------------------------------------------

_text = st.text(alphabet=st.characters(blacklist_characters="\r\n", blacklist_categories=("Cs",)),
                max_size=40)
_event = st.lists(_text, min_size=1, max_size=3)  # data lines of one event
_eol = st.sampled_from([b"\n", b"\r\n", b"\r"])


@st.composite
def stream_and_events(draw):
    events = draw(st.lists(_event, min_size=0, max_size=8))
    eol = draw(_eol)  # one style per stream: a CR then an LF is one CRLF line end
    out = b""
    for lines in events:
        if draw(st.booleans()):
            out += b": comment" + eol
        for line in lines:
            out += b"data: " + line.encode("utf-8") + eol
        out += eol
    return out, ["\n".join(lines) for lines in events]


@st.composite
def splits(draw, data: bytes):
    cuts = sorted(draw(st.lists(st.integers(0, len(data)), max_size=12)))
    pieces, last = [], 0
    for cut in cuts:
        pieces.append(data[last:cut])
        last = cut
    pieces.append(data[last:])
    return pieces


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_any_split_gives_the_same_events(data):
    stream, expected = data.draw(stream_and_events())
    pieces = data.draw(splits(stream))
    assert decode([stream]) == expected
    assert decode(pieces) == expected
    assert decode([bytes([b]) for b in stream]) == expected  # one byte at a time


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=300), st.data())
def test_random_bytes_never_crash_except_with_sseerror(blob, data):
    pieces = data.draw(splits(blob))
    try:
        events = decode(pieces)
    except SSEError:
        return
    assert all(isinstance(e, str) for e in events)
