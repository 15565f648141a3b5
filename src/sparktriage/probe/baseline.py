"""Baseline fingerprints: what a known-good launch of the same checkpoint returned.

A fingerprint holds the exact passages that were scored (so a later run scores the very same
text, including the random copy list), their prompt token ids (a different tokenizer means a
different checkpoint: no comparison), and for every scored position the token's logprob and
the top-k alternatives, plus the known-answer pass rate. Saved as versioned JSON
(docs/formats.md, "Probe fingerprint"); `load()` refuses other kinds and versions in one line.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

from sparktriage import __version__
from sparktriage.errors import InputError
from sparktriage.probe.likelihood import scored_all
from sparktriage.probe.observations import Observations
from sparktriage.probe.passages import Passage, from_dicts
from sparktriage.store.documents import read_document, write_document
from sparktriage.store.rundir import utc_now

KIND = "sparktriage-probe-fingerprint"
VERSION = 1


@dataclass(frozen=True)
class PassagePrint:
    name: str
    token_ids: tuple[int, ...]
    positions: tuple[tuple[int | str, float, tuple[tuple[int | str, float], ...]], ...]  # token, lp, top


@dataclass(frozen=True)
class Fingerprint:
    source: dict  # where it came from: {"kind": "file", "path"} or {"kind": "reference", "url"}
    model: str | None
    created: str | None
    top_k: int
    passages: tuple[Passage, ...]
    prints: dict[str, PassagePrint]
    answers: dict | None  # {"passed", "asked"}
    summary: dict | None = None  # the saving launch's reference-free family numbers (calibrate.py)

    def describe(self) -> dict:
        return {**self.source, "model": self.model, "created": self.created, "top_k": self.top_k,
                "passages": sorted(self.prints)}


def _lp(value: float) -> float | None:
    return value if math.isfinite(value) else None


def from_observations(obs: Observations, model: str | None, source: dict, answers: dict | None,
                      summary: dict | None = None) -> Fingerprint:
    prints = {}
    for name, scored in scored_all(obs).items():
        prints[name] = PassagePrint(name, scored.token_ids, tuple(
            (p.token, p.logprob, tuple(p.top)) for p in scored.positions))
    return Fingerprint(source, model, utc_now(), obs.caps.prompt_logprobs, tuple(obs.passages), prints, answers,
                       summary)


def to_document(fp: Fingerprint, endpoint: str, server_version: str | None) -> dict:
    return {
        "kind": KIND, "fingerprint_version": VERSION, "created": fp.created, "tool_version": __version__,
        "endpoint": endpoint, "server_version": server_version, "model": fp.model, "top_k": fp.top_k,
        "passages": [{"name": p.name, "text": p.text, "kind": p.kind, "score_from": p.score_from,
                      "control_of": p.control_of} for p in fp.passages],
        "scores": {name: {"token_ids": list(pp.token_ids),
                          "positions": [[tok, _lp(v), [[t, _lp(x)] for t, x in top]] for tok, v, top in pp.positions]}
                   for name, pp in fp.prints.items()},
        "answers": fp.answers,
        "summary": fp.summary,
    }


def save(fp: Fingerprint, path: Path, endpoint: str, server_version: str | None) -> None:
    try:
        write_document(path, {"schema_version": 1, **to_document(fp, endpoint, server_version)})
    except OSError as exc:
        raise InputError(f"cannot write the baseline to {path}: {exc.strerror or exc}") from exc


def _num(value) -> float:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else math.nan


def load(path: Path) -> Fingerprint:
    doc = read_document(path)
    if not isinstance(doc, dict) or doc.get("kind") != KIND:
        raise InputError(f"{path}: not a sparktriage probe fingerprint (write one with --save-baseline)")
    if doc.get("schema_version") != 1 or doc.get("fingerprint_version") != VERSION:
        raise InputError(f"{path}: fingerprint version {doc.get('fingerprint_version')} is not supported "
                         f"(this sparktriage reads {VERSION})")
    try:
        passages = tuple(from_dicts(doc["passages"]))
        prints = {}
        for name, item in doc["scores"].items():
            positions = tuple((tok, _num(v), tuple((t, _num(x)) for t, x in top))
                              for tok, v, top in item["positions"])
            prints[name] = PassagePrint(name, tuple(int(i) for i in item["token_ids"]), positions)
        return Fingerprint({"kind": "file", "path": str(path)}, doc.get("model"), doc.get("created"),
                           int(doc.get("top_k") or 0), passages, prints, doc.get("answers"), doc.get("summary"))
    except (KeyError, TypeError, ValueError) as exc:
        raise InputError(f"{path}: malformed fingerprint ({type(exc).__name__}: {exc})") from exc
