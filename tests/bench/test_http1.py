"""The lean HTTP/1.1 reader: framing over any split into socket reads, and real sockets."""

from __future__ import annotations

import asyncio
import socket
import threading

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sparktriage.bench import http1
from sparktriage.bench.http1 import Client, HTTPFailure, _Connection, _parse_head, _pieces


def chunked(parts: list[bytes]) -> bytes:
    return b"".join(b"%x\r\n%s\r\n" % (len(p), p) for p in parts if p) + b"0\r\n\r\n"


def feed(conn: _Connection, data: bytes, cuts: list[int]) -> None:
    last = 0
    for cut in sorted(cuts) + [len(data)]:
        if cut > last:
            conn.data_received(data[last:cut])
            last = cut


def receive(response: bytes, cuts: list[int]) -> tuple[_Connection, list[tuple[float, bytes]]]:
    conn = _Connection()
    end = response.index(b"\r\n\r\n") + 4
    head_cut = [c for c in cuts if c < end]
    feed(conn, response[:end], head_cut)  # the head first (as `send` waits for it)
    _parse_head(conn, "POST")
    conn._mode = "body"
    feed(conn, response[end:], [c - end for c in cuts if c > end])
    conn._scan()
    return conn, _pieces(conn)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.binary(min_size=1, max_size=60), max_size=12), st.data())
def test_chunked_body_is_reassembled_from_any_split(parts, data):
    head = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n"
    response = head + chunked(parts)
    cuts = data.draw(st.lists(st.integers(1, len(response) - 1), max_size=20))
    conn, pieces = receive(response, cuts)
    assert conn.body_end == len(response)
    assert b"".join(p for _, p in pieces) == b"".join(parts)
    times = [t for t, _ in pieces]
    assert times == sorted(times)
    read_times = {t for t, _ in conn.reads}
    assert all(t in read_times for t in times)  # every piece carries the time of its read


@settings(max_examples=100, deadline=None)
@given(st.binary(max_size=200), st.data())
def test_content_length_body_from_any_split(body, data):
    response = b"HTTP/1.1 400 Bad Request\r\ncontent-length: %d\r\n\r\n%s" % (len(body), body)
    cuts = data.draw(st.lists(st.integers(1, len(response) - 1), max_size=10))
    conn, pieces = receive(response, cuts)
    assert conn.body_end == len(response)
    assert b"".join(p for _, p in pieces) == body


def test_informational_response_is_skipped():
    conn = _Connection()
    conn.data_received(b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok")
    head = _parse_head(conn, "POST")
    assert head.status == 200 and conn.framing == "length"


def test_bad_chunk_size_is_a_protocol_error():
    conn = _Connection()
    conn.data_received(b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n")
    _parse_head(conn, "POST")
    conn._mode = "body"
    conn.data_received(b"zz\r\nhello\r\n")
    assert conn.frame_error and "bad chunk size" in conn.frame_error


def test_not_http_is_a_protocol_error():
    conn = _Connection()
    conn.data_received(b"SSH-2.0-OpenSSH_9.6\r\n\r\n")
    with pytest.raises(HTTPFailure, match="not an HTTP response"):
        _parse_head(conn, "GET")


class _OneShotServer:
    """A raw TCP server answering each connection with fixed bytes, then doing `then`."""

    def __init__(self, reply: bytes, then: str = "close") -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen()
        self.port = self.sock.getsockname()[1]
        self.reply, self.then = reply, then
        self.requests: list[bytes] = []
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.requests.append(conn.recv(65536))
            conn.sendall(self.reply)
            if self.then == "hang":
                threading.Event().wait(5)
            conn.close()

    def close(self) -> None:
        self.sock.close()


def run(coro):
    return asyncio.run(coro)


def test_close_delimited_body_and_request_shape():
    server = _OneShotServer(b"HTTP/1.0 200 OK\r\ncontent-type: text/plain\r\n\r\nall of it")
    try:
        async def go():
            client = Client(f"http://127.0.0.1:{server.port}/base", {"X-Test": "1"})
            conn, t0, head = await client.send("POST", "/v1/x", b"{}", {"Content-Type": "application/json"},
                                               5.0, 1e12)
            body = await client.read_body(conn, 5.0, 1e12)
            return head, body
        head, body = run(go())
        assert head.status == 200 and body.complete and body.failure is None
        assert b"".join(p for _, p in body.pieces) == b"all of it"
        request = server.requests[0]
        assert request.startswith(b"POST /base/v1/x HTTP/1.1\r\n")
        assert b"X-Test: 1\r\n" in request and b"Content-Length: 2\r\n" in request
        assert request.endswith(b"\r\n\r\n{}")
    finally:
        server.close()


def test_stall_is_reported_with_what_arrived():
    reply = b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n5\r\nhello\r\n"
    server = _OneShotServer(reply, then="hang")
    try:
        async def go():
            client = Client(f"http://127.0.0.1:{server.port}", {})
            conn, _, _ = await client.send("GET", "/", b"", {}, 5.0, 1e12)
            return await client.read_body(conn, 0.3, 1e12)
        body = run(go())
        assert not body.complete and body.failure.kind == "stall"
        assert b"".join(p for _, p in body.pieces) == b"hello"
    finally:
        server.close()


def test_connection_refused_is_a_connect_failure():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # bound, not listening: refused

        async def go():
            await Client(f"http://127.0.0.1:{port}", {}).send("GET", "/", b"", {}, 1.0, 1e12)
        with pytest.raises(HTTPFailure) as info:
            run(go())
        assert info.value.kind == "connect" and "refused" in str(info.value)


def test_only_http_urls():
    with pytest.raises(ValueError):
        Client("ftp://example.org", {})
    assert Client("https://example.org", {}).port == 443 and http1.MAX_HEAD > 0
