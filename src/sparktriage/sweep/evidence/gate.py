"""The correctness gate: greedy outputs at a depth against depth 0, token by token.

At the first launch of each depth the engine sends every workload's prompt once more, greedy
(temperature 0), non-streaming, asking for the top-k logprobs of each generated token
(`gate-requests.jsonl` in the launch folder). A depth passes when its tokens equal depth 0's on
every prompt. A difference is allowed only at a near-tie: the two tokens are each within the
other's top-k and their logprobs differ by at most `TIE_NATS` under both runs; after such a
divergence the continuations condition on different prefixes, so later tokens are not compared.
Any other difference fails the depth, with the first differing position and both texts.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

import httpx

from sparktriage.probe.api import call
from sparktriage.store.documents import RecordWriter
from sparktriage.store.rundir import LaunchDir

TOP_K = 5
TIE_NATS = 0.1
CONTEXT_TOKENS = 8


@dataclass(frozen=True)
class GreedyOutput:
    """One prompt's greedy generation: tokens and, when the server gave them, top-k logprobs."""

    prompt: str
    tokens: tuple[str, ...]
    top: tuple[dict, ...] = ()
    error: str | None = None

    def as_dict(self) -> dict:
        return {"prompt": self.prompt, "tokens": list(self.tokens), "top": list(self.top),
                "error": self.error}

    @classmethod
    def from_dict(cls, doc: dict) -> "GreedyOutput":
        return cls(doc["prompt"], tuple(doc.get("tokens") or ()), tuple(doc.get("top") or ()),
                   doc.get("error"))


def _output(name: str, doc: dict | None, error: str | None) -> GreedyOutput:
    choice = ((doc or {}).get("choices") or [{}])[0] or {}
    lp = choice.get("logprobs") or {}
    tokens = lp.get("tokens")
    top = lp.get("top_logprobs") or ()
    if not tokens:  # no logprobs: token ids when returned, else the text as one token
        ids = choice.get("token_ids")
        tokens = [str(i) for i in ids] if ids else ([choice["text"]] if choice.get("text") else [])
        top = ()
    return GreedyOutput(name, tuple(str(t) for t in tokens),
                        tuple(t if isinstance(t, dict) else {} for t in top), error)


async def _collect(endpoint: str, model: str, prompts: dict[str, str], max_tokens: int,
                   writer: RecordWriter, api_key: str | None, timeout_s: float) -> list[GreedyOutput]:
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else None
    out = []
    async with httpx.AsyncClient(base_url=endpoint, headers=headers) as client:
        for name, prompt in prompts.items():
            body = {"model": model, "prompt": prompt, "max_tokens": max_tokens, "temperature": 0.0,
                    "logprobs": TOP_K, "stream": False, "ignore_eos": True}
            reply = await call(client, f"gate-{name}", "/v1/completions", body, timeout_s)
            if not reply.ok:  # a server without logprobs: the tokens alone
                body = {k: v for k, v in body.items() if k != "logprobs"}
                reply = await call(client, f"gate-{name}-plain", "/v1/completions", body, timeout_s)
            writer.append(reply.record())
            out.append(_output(name, reply.doc, reply.error))
    return out


def greedy_outputs(endpoint: str, model: str, launch: LaunchDir, prompts: dict[str, str],
                   max_tokens: int, api_key: str | None = None,
                   timeout_s: float = 300.0) -> list[GreedyOutput]:
    """Ask for every prompt's greedy output; raw replies go to gate-requests.jsonl."""
    with RecordWriter(launch.path / "gate-requests.jsonl") as writer:
        return asyncio.run(_collect(endpoint, model, prompts, max_tokens, writer, api_key, timeout_s))


def _near_tie(a: str, b: str, top_ref: dict, top_cand: dict) -> bool:
    for top in (top_ref, top_cand):
        if a not in top or b not in top:
            return False
        if abs(float(top[a]) - float(top[b])) > TIE_NATS:
            return False
    return True


def compare_one(ref: GreedyOutput, cand: GreedyOutput, near_ties: bool = True) -> dict:
    """One prompt: {state: pass|fail|unchecked, position, reason}. `near_ties` False: outputs
    without logprobs (the protocol's streams), where no difference can be told from a near-tie."""
    if ref.error or cand.error or not ref.tokens or not cand.tokens:
        return {"prompt": ref.prompt, "state": "unchecked", "position": None,
                "reason": f"no greedy output to compare ({ref.error or cand.error or 'empty'})"}
    for i, (a, b) in enumerate(zip(ref.tokens, cand.tokens)):
        if a == b:
            continue
        top_ref = ref.top[i] if i < len(ref.top) else {}
        top_cand = cand.top[i] if i < len(cand.top) else {}
        if _near_tie(a, b, top_ref, top_cand):
            return {"prompt": ref.prompt, "state": "pass", "position": i,
                    "reason": f"diverged at token {i} at a near-tie ({a!r} vs {b!r}, logprobs within "
                              f"{TIE_NATS} nats in both runs); later tokens not compared"}
        lo = max(0, i - CONTEXT_TOKENS)
        why = "not a near-tie" if near_ties else "no logprobs to tell a near-tie"
        return {"prompt": ref.prompt, "state": "fail", "position": i,
                "expected": "".join(ref.tokens[lo:i + CONTEXT_TOKENS]),
                "got": "".join(cand.tokens[lo:i + CONTEXT_TOKENS]),
                "reason": f"greedy output differs at token {i}: depth 0 has {a!r}, this depth "
                          f"{b!r} ({why}); depth 0 ...{''.join(ref.tokens[lo:i + 4])!r}, "
                          f"this depth ...{''.join(cand.tokens[lo:i + 4])!r}"}
    if len(ref.tokens) != len(cand.tokens):
        i = min(len(ref.tokens), len(cand.tokens))
        return {"prompt": ref.prompt, "state": "fail", "position": i,
                "reason": f"greedy output length differs: {len(ref.tokens)} tokens at depth 0, "
                          f"{len(cand.tokens)} at this depth"}
    return {"prompt": ref.prompt, "state": "pass", "position": None,
            "reason": f"identical, {len(ref.tokens)} tokens"}


def gate(reference: list[GreedyOutput] | None, outputs: list[GreedyOutput] | None,
         probe: dict | None = None, near_ties: bool = True) -> dict:
    """The gate of one depth: {state: pass|fail|unchecked, reason, prompts, probe}."""
    probe_part = None
    if probe is not None:
        diff = next((f for f in probe.get("families") or [] if f.get("name") == "differential"), None)
        status = (diff or {}).get("status", "skipped")
        probe_part = {"verdict": probe.get("verdict"), "differential": status}
    if reference is None or outputs is None:
        state, reason, prompts = "unchecked", "no depth-0 reference or no output at this depth", []
    else:
        by_name = {o.prompt: o for o in outputs}
        prompts = [compare_one(r, by_name.get(r.prompt, GreedyOutput(r.prompt, (), (), "missing")),
                               near_ties) for r in reference]
        failed = [p for p in prompts if p["state"] == "fail"]
        checked = [p for p in prompts if p["state"] == "pass"]
        if failed:
            state, reason = "fail", f"{failed[0]['prompt']}: {failed[0]['reason']}"
        elif checked:
            state = "pass"
            reason = "; ".join(f"{p['prompt']}: {p['reason']}" for p in checked)
        else:
            state, reason = "unchecked", "; ".join(p["reason"] for p in prompts) or "no prompt"
    if probe_part and probe_part["differential"] not in ("ok", "skipped"):
        prior = reason if state == "fail" else None
        state = "fail"
        reason = (f"probe against the baseline: differential {probe_part['differential']} "
                  f"(verdict {probe_part['verdict']})") + (f"; {prior}" if prior else "")
    return {"state": state, "reason": reason, "prompts": prompts, "probe": probe_part}
