"""The gate without non-streaming requests: the protocol's own greedy streams, depth 0 against k.

Some gateways refuse non-streaming requests, so the gate's greedy requests (sweep.evidence.gate)
fail. The protocol's requests are greedy too (temperature 0, `ignore_eos`) and every launch of a
sweep sends the same prompts with the same max tokens, so the streamed output of a launch at depth k
can be compared with depth 0's: the first measured ok request of each workload, as token ids when
the stream carried them (`return_token_ids`), else as text (compared character by character). The
streams carry no top-k logprobs, so a difference cannot be told from a near-tie: any difference in
the compared prefix fails the depth, and the reason says so. A workload sampled at a temperature
above 0 is not compared.
"""

from __future__ import annotations

from pathlib import Path

from sparktriage.bench.workload import Workload
from sparktriage.errors import SparktriageError
from sparktriage.store.documents import read_records
from sparktriage.sweep.evidence.gate import GreedyOutput

TEXT_CHARS_PER_TOKEN = 4  # without token ids, the compared prefix in characters


def _first_ok(path: Path, workload: str) -> dict | None:
    try:
        for record in read_records(path):
            if (record.get("workload") == workload and not record.get("warmup")
                    and record.get("status") == "ok" and record.get("chunks")):
                return record
    except SparktriageError:
        return None
    return None


def _tokens(record: dict, limit: int) -> tuple[tuple[str, ...], str]:
    chunks = [c for c in record.get("chunks") or [] if isinstance(c, dict)]
    if chunks and all(isinstance(c.get("ids"), list) for c in chunks):
        ids = [str(i) for c in chunks for i in c["ids"]]
        return tuple(ids[:limit]), "token ids"
    text = "".join(str(c.get("text") or "") for c in chunks)
    return tuple(text[:limit * TEXT_CHARS_PER_TOKEN]), "text"


def protocol_outputs(launch: Path, workloads: tuple[Workload, ...], tokens: int) -> list[GreedyOutput] | None:
    """Each greedy workload's first measured stream of a launch folder (None when none is there)."""
    path = launch / "requests.jsonl"
    if not path.is_file():
        return None
    out = []
    for workload in workloads:
        if workload.temperature > 0:
            continue
        record = _first_ok(path, workload.name)
        if record is None:
            out.append(GreedyOutput(workload.name, (), (), "no measured ok stream"))
            continue
        found, unit = _tokens(record, tokens)
        out.append(GreedyOutput(workload.name, found, (), None if found else f"no {unit} in the stream"))
    return out or None


def unit(launch: Path, workloads: tuple[Workload, ...]) -> str:
    """What the comparison compares in this launch's streams (token ids or text)."""
    for workload in workloads:
        record = _first_ok(launch / "requests.jsonl", workload.name)
        if record is not None:
            return _tokens(record, 1)[1]
    return "text"
