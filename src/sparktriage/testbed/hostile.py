"""Hostile inputs (oversized, deeply nested, malformed, adversarial), made on demand (tests, `benchmarks/bench_hostile.py`).

Each maker writes one input that once crashed, hung or exhausted sparktriage: alias bombs and
deep or huge YAML, archives with odd trees, truncated archives, deep JSON, and servers that
never end a stream or a page, send one enormous line, or send text UTF-8 cannot carry. The
servers listen on 127.0.0.1 only.
"""

from __future__ import annotations

import io
import json
import socket
import tarfile
import threading
from pathlib import Path

DEPLOYMENT_HEAD = """schema_version: 1
name: bomb
lab: {nodes: [{name: local, host: 127.0.0.1, gpu: none}]}
model: {path: /m, name: tiny}
engine: {vllm: /bin/true}
"""


def laughs(levels: int = 9, width: int = 9) -> str:
    """A "billion laughs" alias bomb as a YAML mapping (width ** levels strings expanded)."""
    lines = ['a0: &a0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for i in range(1, levels):
        lines.append(f"a{i}: &a{i} [" + ",".join([f"*a{i - 1}"] * width) + "]")
    return "\n".join(lines) + "\n"


def deployment_bomb() -> str:
    """A deployment whose `serve.extra` hides the bomb (about 400 bytes)."""
    return DEPLOYMENT_HEAD + "x-bomb:\n" + "".join("  " + line + "\n"
                                                   for line in laughs().splitlines())


def workload_bomb() -> str:
    return "name: bomb\nprompts: [hello]\nmax_tokens: 4\nextra_body:\n" + "".join(
        "  " + line + "\n" for line in laughs().splitlines())


def deep_yaml(depth: int = 5000) -> str:
    """A key whose value is block lists nested `depth` deep on one line (`- - - ... v`)."""
    return "x:\n  " + "- " * depth + "v\n"


def big_yaml(megabytes: int = 18) -> str:
    row = "- {a: 1, b: [x, y, z], c: some text here}\n"
    return "items:\n" + row * (megabytes * (1 << 20) // len(row))


def _tar(path: Path, members: list[tuple[str, bytes | None]], gz: bool = True) -> Path:
    with tarfile.open(path, "w:gz" if gz else "w") as tar:
        for name, data in members:
            info = tarfile.TarInfo(name)
            if data is None:
                info.type = tarfile.DIRTYPE
                info.mode = 0o755
                tar.addfile(info)
            else:
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
    return path


BUNDLE_JSON = json.dumps({"schema_version": 1, "kind": "sparktriage-bundle", "nodes": ["n"],
                          "origin": "collect"}).encode()


def many_members(path: Path, count: int = 2000) -> Path:
    line = json.dumps({"t": 1.0, "node": "n", "stream": "stdout", "line": "INFO hello"}) + "\n"
    members = [("b/bundle.json", BUNDLE_JSON)] + [
        (f"b/nodes/n{i}/logs/server.lines.jsonl", line.encode()) for i in range(count)]
    return _tar(path, members)


def file_then_member(path: Path) -> Path:
    return _tar(path, [("b/bundle.json", BUNDLE_JSON), ("b/nodes", b"a file"),
                       ("b/nodes/n/logs/server.lines.jsonl", b"{}\n")])


def dir_over_bundle_json(path: Path) -> Path:
    return _tar(path, [("b/bundle.json", None), ("b/bundle.json/x", b"1")])


def deep_bundle_json(path: Path, depth: int = 100_000) -> Path:
    return _tar(path, [("b/bundle.json", b"[" * depth + b"]" * depth)])


def truncated(source: Path, path: Path, keep: float = 0.5) -> Path:
    data = source.read_bytes()
    path.write_bytes(data[: max(1, int(len(data) * keep))])
    return path


# --- servers --------------------------------------------------------------------------------

class Server:
    """A tiny threaded HTTP/1.1 server on 127.0.0.1 answering every request with `respond`."""

    def __init__(self, respond) -> None:
        self.respond = respond
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.port = self.sock.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self.requests = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        self.sock.settimeout(0.2)
        while not self._stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            threading.Thread(target=self._handle, args=(conn,), daemon=True).start()

    def _handle(self, conn: socket.socket) -> None:
        with conn:
            conn.settimeout(30)
            while not self._stop.is_set():
                head = b""
                try:
                    while b"\r\n\r\n" not in head:
                        piece = conn.recv(65536)
                        if not piece:
                            return
                        head += piece
                    length = 0
                    for line in head.split(b"\r\n"):
                        if line.lower().startswith(b"content-length:"):
                            length = int(line.split(b":")[1])
                    body = head.split(b"\r\n\r\n", 1)[1]
                    while len(body) < length:
                        body += conn.recv(65536)
                    self.requests += 1
                    path = head.split(b" ")[1].decode()
                    if not self.respond(conn, path, body, self._stop):
                        return
                except OSError:
                    return

    def close(self) -> None:
        self._stop.set()
        self.sock.close()

    def __enter__(self) -> "Server":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _chunk(data: bytes) -> bytes:
    return f"{len(data):x}\r\n".encode() + data + b"\r\n"


SSE_HEAD = (b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
            b"Transfer-Encoding: chunked\r\n\r\n")


def event(text: str, finish: str | None = None, raw: bytes | None = None) -> bytes:
    """One OpenAI completion chunk as an SSE event (or `raw` as its JSON)."""
    doc = raw if raw is not None else json.dumps(
        {"id": "c1", "object": "chat.completion.chunk", "model": "m", "choices": [
            {"index": 0, "delta": {"content": text}, "finish_reason": finish}]}).encode()
    return b"data: " + doc + b"\n\n"


def endless_sse(conn, path, body, stop) -> bool:
    """Tokens forever: no finish_reason, no [DONE]."""
    conn.sendall(SSE_HEAD)
    piece = _chunk(event("lol ") * 64)
    while not stop.is_set():
        conn.sendall(piece)
    return False


def long_line_sse(size: int = 64 << 20):
    def respond(conn, path, body, stop) -> bool:
        conn.sendall(SSE_HEAD + _chunk(b"data: "))
        block = _chunk(b"x" * (1 << 20))
        for _ in range(size >> 20):
            if stop.is_set():
                break
            conn.sendall(block)
        conn.sendall(_chunk(b"\n\n") + b"0\r\n\r\n")
        return False
    return respond


ODD_PAYLOADS = {
    "lone-surrogate-escape": b'{"id":"c","choices":[{"index":0,"delta":{"content":"a\\ud800b"},'
                             b'"finish_reason":null}]}',
    "low-surrogate-escape": b'{"id":"c","choices":[{"index":0,"delta":{"content":"\\udfff"},'
                            b'"finish_reason":null}]}',
    "nul": b'{"id":"c","choices":[{"index":0,"delta":{"content":"a\\u0000b\x00"},'
           b'"finish_reason":null}]}'.replace(b"\x00", b""),
    "bom": b'\xef\xbb\xbf{"id":"c","choices":[{"index":0,"delta":{"content":"\xef\xbb\xbfx"},'
           b'"finish_reason":null}]}',
    "invalid-utf8": b'{"id":"c","choices":[{"index":0,"delta":{"content":"\xff\xfe\x80"},'
                    b'"finish_reason":null}]}',
    "overlong-encoding": b'{"id":"c","choices":[{"index":0,"delta":{"content":"\xc0\xaf\xe0\x80'
                         b'\xaf"},"finish_reason":null}]}',
    "cesu-surrogate-bytes": b'{"id":"c","choices":[{"index":0,"delta":{"content":"\xed\xa0\x80"},'
                            b'"finish_reason":null}]}',
}


def odd_sse(payload: bytes):
    """One odd chunk, then a normal finish and [DONE]."""
    def respond(conn, path, body, stop) -> bool:
        conn.sendall(SSE_HEAD + _chunk(event("", raw=payload)) + _chunk(event("end", "stop"))
                     + _chunk(b"data: [DONE]\n\n") + b"0\r\n\r\n")
        return True
    return respond


def endless_metrics(conn, path, body, stop) -> bool:
    conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nConnection: close\r\n\r\n")
    line = b"vllm:num_requests_running{model_name=\"m\"} 1\n" * 1000
    while not stop.is_set():
        conn.sendall(line)
    return False
