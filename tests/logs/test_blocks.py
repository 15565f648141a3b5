"""BlockReader gives exactly the blocks of the read-split-carry scheme it replaced, without a copy
per block, for any stream, block size, line cut and carry."""

from __future__ import annotations

import io
import random
import zlib

from hypothesis import given, settings
from hypothesis import strategies as st

from sparktriage.logs.blocks import BlockReader


def reference_blocks(stream, block: int, max_line: int):
    """The earlier scheme, kept here as the model: read `block` bytes, yield up to the last
    newline, cut a line longer than `max_line` (one byte over, plus a newline) and skip its rest,
    give a last unterminated line a newline."""
    tail = b""
    skipping = False
    while True:
        chunk = stream.read(block)
        if not chunk:
            break
        data = tail + chunk if tail else chunk
        tail = b""
        if skipping:
            cut = data.find(b"\n")
            if cut < 0:
                continue
            skipping = False
            data = data[cut + 1:]
        end = data.rfind(b"\n")
        if end >= 0:
            body, tail = data[: end + 1], data[end + 1:]
            if body:
                yield body
        else:
            tail = data
        if len(tail) > max_line:
            yield tail[: max_line + 1] + b"\n"
            tail = b""
            skipping = True
    if tail and not skipping:
        yield tail + b"\n"


def _carry(block: bytes, seed: int) -> int:
    """A consumer that sometimes leaves the last few bytes of a block for the next one."""
    r = random.Random(zlib.crc32(block) + seed)
    return r.randint(max(0, len(block) - 12), len(block)) if r.random() < 0.5 else len(block)


def _old(data: bytes, size: int, max_line: int, seed: int) -> list[bytes]:
    out, carry = [], b""
    for b in reference_blocks(io.BytesIO(data), size, max_line):
        block = carry + b if carry else b
        out.append(block)
        carry = block[_carry(block, seed):]
    if carry:
        out.append(carry)
    return out


def _new(data: bytes, size: int, max_line: int, seed: int) -> list[bytes]:
    out = []
    reader = BlockReader(io.BytesIO(data), size, max_line)
    for buf, start, end in reader:
        block = bytes(buf[start:end])
        out.append(block)
        reader.consumed = start + _carry(block, seed)
    return out


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from([b"a", b"bb", b"\n", b"\r\n", b"x" * 30, b"\xff"]), max_size=60),
       st.integers(1, 40), st.integers(1, 50), st.integers(0, 1000))
def test_blocks_are_those_of_the_old_scheme(pieces, size, max_line, seed):
    data = b"".join(pieces)
    assert _new(data, size, max_line, seed) == _old(data, size, max_line, seed)


def test_every_byte_once_and_blocks_end_with_a_newline():
    data = b"".join(b"line %d\n" % i for i in range(5000)) + b"no newline at the end"
    reader = BlockReader(io.BytesIO(data), 1000)
    seen = []
    for buf, start, end in reader:
        assert buf[end - 1:end] == b"\n"
        seen.append(bytes(buf[start:end]))
    assert b"".join(seen) == data + b"\n"


def test_the_buffer_does_not_grow_with_the_stream():
    data = b"x" * 99 + b"\n"
    reader = BlockReader(io.BytesIO(data * 20000), 4096)
    for _ in reader:
        pass
    assert len(reader._buf) < 3 * 4096
