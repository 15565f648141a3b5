"""The garbage probe's families in words: one sentence each, and their numbers as table rows.

A family of `probe.json` carries a name, a status, free-form `numbers` (scalars, short maps,
per-passage lists) and evidence lines. The report states each family as one sentence (what it
checks, what it found) and lists its scalar numbers in a table with headers (family, quantity,
value), never as `key=value` strings; per-passage lists stay in data/probe.json.
"""

from __future__ import annotations

from sparktriage.report.values import as_dict, as_list, fixed, num, text

WHAT = {  # what each family checks (docs/garbage.md)
    "sanity": "checks for logprobs a working model cannot produce (NaN, infinite, positive, missing)",
    "likelihood": "measures how well the model predicts known text, in bits per byte",
    "answers": "asks trivial questions with known answers",
    "generation": "looks for collapse in open-ended generations (repeats, one-token floods)",
    "consistency": "compares decode against prefill logprobs and sequential against burst answers",
    "differential": "scores the same tokens here and on a known-good baseline launch",
}
WHAT.update({"logprob-sanity": WHAT["sanity"], "known-answer": WHAT["answers"],
             "reference-likelihood": WHAT["likelihood"]})  # the families' long names
STATUS = {"ok": "passed", "suspect": "found suspect signs", "garbage": "found garbage",
          "skipped": "was skipped"}
MAX_NUMBERS = 8


def _value(value) -> str | None:
    if isinstance(value, bool):
        return "yes" if value else "no"
    if num(value) is not None:
        return fixed(float(value), 4)
    if isinstance(value, str) and len(value) <= 40:
        return value
    return None


def _quantity(key: str) -> str:
    return str(key).replace("_", " ")


def number_rows(name: str, numbers: dict) -> list[list[str]]:
    """[family, quantity, value] for the family's scalar numbers (and one level of short maps)."""
    rows: list[list[str]] = []
    for key, value in numbers.items():
        if isinstance(value, dict):
            for sub, inner in value.items():
                shown = _value(inner)
                if shown is not None:
                    rows.append([name, f"{_quantity(key)}: {_quantity(sub)}", shown])
        elif isinstance(value, list):
            rows.append([name, _quantity(key), f"{len(value)} entries (data/probe.json)"])
        else:
            shown = _value(value)
            if shown is not None:
                rows.append([name, _quantity(key), shown])
    return rows[:MAX_NUMBERS]


def sentence(family: dict) -> str:
    """One sentence: the family, what it checks, its status, and its first piece of evidence."""
    name = text(family.get("name")) or "?"
    status = text(family.get("status")) or "?"
    what = WHAT.get(name, "is a probe family")
    evidence = [e for e in as_list(family.get("evidence")) if isinstance(e, str) and e]
    said = f"The {name} family {what}; it {STATUS.get(status, status)}"
    reason = text(family.get("reason"))
    if status == "skipped" and reason:
        said += f" ({reason})"
    elif evidence:
        said += f": {evidence[0].rstrip('.')}"
    return (said + ".")[:400]


def family_entry(family: dict) -> dict:
    """{name, status, sentence, numbers: [[family, quantity, value]], evidence} of one family."""
    name = text(family.get("name")) or "?"
    return {"name": name, "status": text(family.get("status")) or "?",
            "sentence": sentence(family),
            "numbers": number_rows(name, as_dict(family.get("numbers"))),
            "evidence": [e[:300] for e in as_list(family.get("evidence")) if isinstance(e, str)][:3]}


NUMBER_HEADERS = ["family", "quantity", "value"]
_SHOWN = ("verdict", "pattern", "baseline", "tokens_spent", "wall_s", "families")


def groups(launches: list[dict]) -> list[tuple[list[str], dict]]:
    """Launches whose probe result reads the same (verdict, pattern, baseline, tokens, wall
    time, every family's sentence and numbers) as one group: (labels, the first launch), in the
    order of first appearance, so that the report prints each distinct result once."""
    out: list[tuple[list[str], dict]] = []
    seen: dict[str, int] = {}
    for launch in launches:
        key = repr([launch.get(k) for k in _SHOWN])
        if key in seen:
            out[seen[key]][0].append(launch["label"])
        else:
            seen[key] = len(out)
            out.append(([launch["label"]], launch))
    return out


def group_title(labels: list[str]) -> str:
    """`Launch L001` or `Launches L001, L002 (the same result)`."""
    if len(labels) == 1:
        return f"Launch {labels[0]}"
    return f"Launches {', '.join(labels)} (the same result)"


__all__ = ["NUMBER_HEADERS", "family_entry", "group_title", "groups", "number_rows", "sentence"]
