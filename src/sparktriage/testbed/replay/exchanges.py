"""Recorded HTTP exchanges: their keys, the recording file, and the comparison of two recordings.

An `Exchange` is one request (method, path with query, body in canonical form) and the
response it got (status, headers, body bytes exactly as sent: a streamed body is the whole
byte stream). The canonical form of a JSON body is its re-serialization with sorted keys and no
spaces, so two clients that order fields differently ask the same thing; any other body is kept
as base64. Requests with the same key keep their order: the probe sends some bodies twice (a
sequential and a burst copy), and the n-th request with a key gets the n-th response recorded
for it.

A recording file is LZMA-compressed JSON (`schema_version`, `kind`, free-form `meta`,
`exchanges` sorted by key, so the same answers always give the same file). `load()` caps the
file, its decompressed size and its number of exchanges, and checks every field's type.

`differences()` says where a fresh recording differs from a committed one after canonicalizing
exactly what a server makes up per request or per start: the `id`, `created` and
`system_fingerprint` (vLLM's differs on every start) of an OpenAI answer; in `/v1/models`,
each card's `created`, `root` (the served folder) and its permissions' `id` and `created`;
the `date`, `x-request-id` and `content-length` headers. Everything else must be equal: status,
headers, every string, token id and integer exactly, and every float within `FLOAT_RTOL`
relative (at least absolute for |x| < 1): vLLM CPU's logprobs of the probe's burst (the same
requests batched together) differ by a few float32 steps (about 5e-7) from run to run, as the
batch's composition changes the summation order; tokens and texts do not change. A prompt
logprob's `rank` orders those floats, so a token whose logprob agrees within `FLOAT_RTOL` may
swap places with a neighbour as close: a rank one apart counts as equal there, and only there.
"""

from __future__ import annotations

import base64
import json
import lzma
from collections import defaultdict, deque
from dataclasses import dataclass, field
from pathlib import Path

from sparktriage.errors import InputError
from sparktriage.limits import limit_hit, size_text

SCHEMA_VERSION = 1
KIND = "sparktriage-http-recording"
FILE_MAX_BYTES = 4 << 20  # one compressed recording
DECOMPRESSED_MAX_BYTES = 64 << 20
EXCHANGES_MAX = 10_000
VOLATILE_FIELDS = frozenset({"id", "created", "system_fingerprint"})  # of an answer, top level
VOLATILE_HEADERS = frozenset({"date", "x-request-id", "content-length"})
HOP_HEADERS = frozenset({"connection", "keep-alive", "transfer-encoding", "content-length", "date"})
SHOWN = 8  # differences listed at most
FLOAT_RTOL = 1e-5  # about 100 float32 steps; the burst's run-to-run jitter is about 4

Key = tuple[str, str, str]


def canonical_body(body: bytes) -> str:
    """The canonical form of a request body (see the module doc)."""
    if not body:
        return ""
    try:
        doc = json.loads(body)
    except (ValueError, RecursionError):
        return "base64:" + base64.b64encode(body).decode("ascii")
    return json.dumps(doc, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


@dataclass(frozen=True)
class Exchange:
    """One request and the response a server gave it."""

    method: str
    path: str
    request: str  # canonical_body() of what was sent
    status: int
    headers: tuple[tuple[str, str], ...]  # response headers, lower-case names, hop-by-hop dropped
    body: bytes

    @property
    def key(self) -> Key:
        return (self.method, self.path, self.request)

    def header(self, name: str) -> str | None:
        return next((v for k, v in self.headers if k == name), None)

    def as_dict(self) -> dict:
        doc = {"method": self.method, "path": self.path, "request": self.request, "status": self.status,
               "headers": [list(h) for h in self.headers]}
        try:
            doc["body"] = self.body.decode("utf-8")
        except UnicodeDecodeError:
            doc["body_base64"] = base64.b64encode(self.body).decode("ascii")
        return doc


def response_headers(pairs) -> tuple[tuple[str, str], ...]:
    """The headers worth keeping from (name, value) pairs: lower-case, hop-by-hop ones dropped."""
    return tuple((k.lower(), v) for k, v in pairs if k.lower() not in HOP_HEADERS)


def describe(key: Key) -> str:
    """A request in one line for messages (body cut at 160 characters)."""
    method, path, body = key
    return f"{method} {path} {body[:160]}{'...' if len(body) > 160 else ''}".rstrip()


@dataclass
class Recording:
    """The exchanges of one recorded session and what they were recorded from (`meta`)."""

    meta: dict
    exchanges: list[Exchange] = field(default_factory=list)

    def queues(self) -> dict[Key, deque[Exchange]]:
        """Responses per request key, in recorded order."""
        out: dict[Key, deque[Exchange]] = defaultdict(deque)
        for ex in self.exchanges:
            out[ex.key].append(ex)
        return dict(out)

    def save(self, path: Path) -> int:
        """Write the recording (LZMA JSON); returns the file's size in bytes."""
        ordered = sorted(self.exchanges, key=lambda ex: ex.key)  # stable: same-key order kept
        doc = {"schema_version": SCHEMA_VERSION, "kind": KIND, "meta": self.meta,
               "exchanges": [ex.as_dict() for ex in ordered]}
        data = lzma.compress(json.dumps(doc, ensure_ascii=False, separators=(",", ":")).encode("utf-8"),
                             preset=9 | lzma.PRESET_EXTREME)
        if len(data) > FILE_MAX_BYTES:
            raise limit_hit("the compressed recording", size_text(FILE_MAX_BYTES), str(path))
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        return len(data)


def _read_bounded(path: Path) -> bytes:
    with path.open("rb") as fh:
        raw = fh.read(FILE_MAX_BYTES + 1)
    if len(raw) > FILE_MAX_BYTES:
        raise limit_hit("the recording file", size_text(FILE_MAX_BYTES), str(path))
    decompressor = lzma.LZMADecompressor()
    try:
        data = decompressor.decompress(raw, max_length=DECOMPRESSED_MAX_BYTES + 1)
    except lzma.LZMAError as exc:
        raise InputError(f"{path}: not an LZMA recording ({exc})") from exc
    if len(data) > DECOMPRESSED_MAX_BYTES:
        raise limit_hit("the decompressed recording", size_text(DECOMPRESSED_MAX_BYTES), str(path))
    if not decompressor.eof:
        raise InputError(f"{path}: the recording is truncated")
    return data


def _exchange(doc: object, where: str) -> Exchange:
    if not isinstance(doc, dict):
        raise InputError(f"{where}: an exchange must be an object")
    fields = {"method": str, "path": str, "request": str, "status": int, "headers": list}
    for name, kind in fields.items():
        if not isinstance(doc.get(name), kind):
            raise InputError(f"{where}: field {name!r} must be a {kind.__name__}")
    headers = doc["headers"]
    if not all(isinstance(h, list) and len(h) == 2 and all(isinstance(p, str) for p in h) for h in headers):
        raise InputError(f"{where}: headers must be [name, value] string pairs")
    if isinstance(doc.get("body"), str):
        body = doc["body"].encode("utf-8")
    elif isinstance(doc.get("body_base64"), str):
        body = base64.b64decode(doc["body_base64"], validate=True)
    else:
        raise InputError(f"{where}: no body or body_base64")
    return Exchange(doc["method"], doc["path"], doc["request"], doc["status"],
                    tuple((k, v) for k, v in headers), body)


def load(path: Path) -> Recording:
    """Read a recording file (bounded; every field checked)."""
    try:
        doc = json.loads(_read_bounded(path))
    except (ValueError, RecursionError) as exc:
        raise InputError(f"{path}: not a JSON recording ({exc})") from exc
    if not isinstance(doc, dict) or doc.get("kind") != KIND or doc.get("schema_version") != SCHEMA_VERSION:
        raise InputError(f"{path}: not a {KIND} document of schema_version {SCHEMA_VERSION}")
    items, meta = doc.get("exchanges"), doc.get("meta")
    if not isinstance(items, list) or not isinstance(meta, dict):
        raise InputError(f"{path}: 'exchanges' must be a list and 'meta' an object")
    if len(items) > EXCHANGES_MAX:
        raise limit_hit("the number of exchanges", str(EXCHANGES_MAX), str(path))
    return Recording(meta, [_exchange(item, f"{path}: exchange {i}") for i, item in enumerate(items)])


def _canonical_doc(path: str, doc: object) -> object:
    """`doc` with the fields a server makes up per request or per start blanked (module doc)."""
    if not isinstance(doc, dict):
        return doc
    doc = {k: ("<volatile>" if k in VOLATILE_FIELDS else v) for k, v in doc.items()}
    if path.startswith("/v1/models") and isinstance(doc.get("data"), list):
        cards = []
        for card in doc["data"]:
            if isinstance(card, dict):
                card = {k: ("<volatile>" if k in ("created", "root") else v) for k, v in card.items()}
                if isinstance(card.get("permission"), list):
                    card["permission"] = [_canonical_doc("", p) for p in card["permission"]]
            cards.append(card)
        doc["data"] = cards
    return doc


def canonical_response(ex: Exchange) -> tuple:
    """What must be equal between two recordings of the same request (module doc)."""
    headers = tuple(sorted(h for h in ex.headers if h[0] not in VOLATILE_HEADERS))
    try:  # NaN and Infinity literals compared as their spelling (NaN != NaN as a float)
        body = _canonical_doc(ex.path, json.loads(ex.body, parse_constant=lambda name: f"<{name}>"))
    except (ValueError, RecursionError):
        body = ex.body
    return ex.status, headers, body


def differences(fresh: list[Exchange], committed: list[Exchange]) -> list[str]:
    """Where `fresh` differs from `committed` (matched by key and order); [] when they agree."""
    mine, theirs = Recording({}, fresh).queues(), Recording({}, committed).queues()
    found = []
    for key in sorted(set(mine) | set(theirs)):
        a, b = list(mine.get(key, ())), list(theirs.get(key, ()))
        if len(a) != len(b):
            found.append(f"{describe(key)}: asked {len(a)} time(s), recorded {len(b)}")
        for i, (x, y) in enumerate(zip(a, b)):
            cx, cy = canonical_response(x), canonical_response(y)
            body = first_difference(cx[2], cy[2])
            what = [name for name, u, v in zip(("status", "headers"), cx, cy) if u != v] + (["body"] if body else [])
            if what:
                found.append(f"{describe(key)} (#{i + 1}): {', '.join(what)} differ{body}")
    return found


def first_difference(a: object, b: object, where: str = "$") -> str:
    """Where two canonical bodies first differ, as ` at PATH: A != B` ('' when equal; floats
    within FLOAT_RTOL count as equal)."""
    if isinstance(a, float) and isinstance(b, float):
        close = abs(a - b) <= FLOAT_RTOL * max(1.0, abs(a), abs(b))
        return "" if close else f" at {where}: {a} != {b}"
    if type(a) is not type(b) or not isinstance(a, (dict, list)):
        return "" if a == b else f" at {where}: {str(a)[:60]} != {str(b)[:60]}"
    if isinstance(a, dict):
        if _tied_rank(a, b):
            return ""
        for k in sorted(set(a) | set(b)):
            if k not in a or k not in b:
                return f" at {where}.{k}: only in {'fresh' if k in a else 'committed'}"
            found = first_difference(a[k], b[k], f"{where}.{k}")
            if found:
                return found
        return ""
    if len(a) != len(b):
        return f" at {where}: {len(a)} items != {len(b)}"
    for i, (x, y) in enumerate(zip(a, b)):
        found = first_difference(x, y, f"{where}[{i}]")
        if found:
            return found
    return ""


def _tied_rank(a: dict, b: dict) -> bool:
    """A logprob entry whose logprob agrees within FLOAT_RTOL and whose rank is one apart: the
    rank orders floats, so a neighbour within the same rounding noise swaps places with it (the
    CPU kernels' thread count decides the last bits); anything else is compared key by key."""
    if set(a) != set(b) or not {"logprob", "rank"} <= set(a):
        return False
    la, lb, ra, rb = a["logprob"], b["logprob"], a["rank"], b["rank"]
    if not (isinstance(la, float) and isinstance(lb, float) and isinstance(ra, int)
            and isinstance(rb, int)) or abs(ra - rb) != 1:
        return False
    if abs(la - lb) > FLOAT_RTOL * max(1.0, abs(la), abs(lb)):
        return False
    return all(first_difference(a[k], b[k]) == "" for k in a if k not in ("logprob", "rank"))


def summary(found: list[str]) -> str:
    """The first SHOWN differences, one per line, and how many more there are."""
    lines = found[:SHOWN]
    if len(found) > SHOWN:
        lines.append(f"... and {len(found) - SHOWN} more")
    return "\n".join(lines)
