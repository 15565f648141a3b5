"""Recount the text a stream delivered through the server's own `/tokenize` (vLLM's endpoint),
for answers whose stream carried no usage and no token ids: counting chunks with text is not
counting tokens (a chunk can carry several), so the server's tokenizer settles the total.

`recount()` returns one record per such request, `{workload, index, counted, tokenized, error}`;
a server without `/tokenize` yields records whose `tokenized` is None and whose `error` says
why. At most `MAX_RECOUNT` requests are sent, each with a deadline and a size-capped answer.
"""

from __future__ import annotations

from pathlib import Path

import httpx

from sparktriage.bench.client import normalize_base_url
from sparktriage.bench.records import token_account
from sparktriage.errors import SparktriageError
from sparktriage.store.documents import loads_bounded, read_records

MAX_RECOUNT = 40
TIMEOUT_S = 10.0
ANSWER_MAX_BYTES = 4 << 20


def _uncounted(requests_path: Path) -> list[tuple[str, int, str, int]]:
    """(workload, index, delivered text, chunk count) of the ok answers without a count source."""
    found = []
    for record in read_records(requests_path):
        if record.get("type") != "request" or record.get("status") != "ok":
            continue
        account = token_account(record)
        if account.source not in ("chunks", "none"):
            continue
        text = "".join(c.get("text") or "" for c in record.get("chunks") or [] if isinstance(c, dict))
        if text:
            found.append((str(record.get("workload")), record.get("index"), text, account.total))
    return found[:MAX_RECOUNT]


def recount(endpoint: str, model: str | None, requests_path: Path,
            api_key: str | None = None) -> list[dict]:
    """The `/tokenize` count of every uncounted answer in `requests_path` (see module doc)."""
    if not requests_path.is_file() or model is None:
        return []
    todo = _uncounted(requests_path)
    if not todo:
        return []
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    out = []
    with httpx.Client(base_url=normalize_base_url(endpoint), timeout=TIMEOUT_S, headers=headers,
                      trust_env=False) as client:
        for workload, index, text, counted in todo:
            entry = {"workload": workload, "index": index, "counted": counted, "tokenized": None,
                     "error": None}
            try:
                with client.stream("POST", "/tokenize", json={"model": model, "prompt": text,
                                                              "add_special_tokens": False}) as answer:
                    body = bytearray()
                    for block in answer.iter_raw(65536):
                        body += block
                        if len(body) > ANSWER_MAX_BYTES:
                            raise ValueError("answer too large")
                    status = answer.status_code
                doc = loads_bounded(bytes(body), "/tokenize") if status == 200 else None
                count = doc.get("count") if isinstance(doc, dict) else None
                if isinstance(count, int) and not isinstance(count, bool) and count >= 0:
                    entry["tokenized"] = count
                else:
                    entry["error"] = f"/tokenize answered HTTP {status} without a count"
            except (httpx.HTTPError, ValueError, SparktriageError) as exc:
                entry["error"] = "/tokenize failed: " + (" ".join(str(exc).split())[:200] or type(exc).__name__)
            out.append(entry)
            if entry["error"] and entry["tokenized"] is None and not out[:-1]:
                break  # a server without /tokenize: one try says so
    return out
