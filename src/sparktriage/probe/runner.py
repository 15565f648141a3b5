"""Run a probe: discover, negotiate, execute the plan, evaluate the families, decide.

Every reply is handed to `on_record` as it completes (the CLI appends it to the run
directory), so nothing measured is lost even when the probe is interrupted. Requests of the
concurrent phase go out together (bounded by `concurrency`); the known-answer probes are also
sent one at a time first, which is the sequential half of the burst comparison.
"""

from __future__ import annotations

import asyncio
import random
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import httpx

from sparktriage.bench.client import ClientSettings, make_http_client
from sparktriage.bench.endpoint import choose_model, discover
from sparktriage.probe import (answers, baseline, calibrate, consistency, differential, generation, likelihood,
                               plan, sanity, verdict)
from sparktriage.probe.api import Reply, call
from sparktriage.probe.negotiate import Negotiation
from sparktriage.probe.observations import Observations
from sparktriage.progress import Observer
from sparktriage.store.rundir import SCHEMA_VERSION, utc_now


@dataclass(frozen=True)
class ProbeSettings:
    endpoint: str
    model: str | None = None
    api_key: str | None = None
    seed: int | None = None
    baseline: Path | None = None
    reference: str | None = None
    concurrency: int = 32
    timeout_s: float = 120.0


@dataclass
class ProbeOutcome:
    document: dict
    fingerprint: baseline.Fingerprint | None
    server_version: str | None


async def _execute(client: httpx.AsyncClient, requests: list[plan.Request], concurrency: int,
                   timeout_s: float, sink: Callable[[Reply], None]) -> dict[str, Reply]:
    gate = asyncio.Semaphore(concurrency)

    async def one(req: plan.Request) -> Reply:
        async with gate:
            reply = await call(client, req.id, req.path, req.body, timeout_s)
        sink(reply)
        return reply

    replies = await asyncio.gather(*(one(r) for r in requests))
    return {r.id: r for r in replies}


async def _retry_plain(client, replies: dict[str, Reply], timeout_s: float, sink) -> dict[str, bool]:
    """For each 5xx on a logprob request: does the same request without logprobs succeed?"""
    out = {}
    for rid, reply in replies.items():
        body = reply.body
        if reply.status is None or reply.status < 500 or not any(k in body for k in ("logprobs", "prompt_logprobs")):
            continue
        plain = {k: v for k, v in body.items() if k not in ("logprobs", "top_logprobs", "prompt_logprobs", "echo")}
        if "prompt_logprobs" in body:
            plain["max_tokens"] = 1
        again = await call(client, f"R:{rid}", reply.path, plain, timeout_s)
        sink(again)
        out[rid] = again.ok
    return out


async def _observe(client, model: str, caps, seed: int, passages, settings: ProbeSettings, sink,
                   progress: Observer) -> tuple[Observations, dict[str, bool]]:
    probe_plan = plan.build(model, seed, caps, passages)
    obs = Observations(caps, probe_plan.passages, probe_plan.probes, probe_plan.open_prompts)
    progress("phase", {"name": "sequential", "requests": len(probe_plan.phase("sequential"))})
    obs.replies.update(await _execute(client, probe_plan.phase("sequential"), 1, settings.timeout_s, sink))
    progress("phase", {"name": "concurrent", "requests": len(probe_plan.phase("concurrent"))})
    obs.replies.update(await _execute(client, probe_plan.phase("concurrent"), settings.concurrency,
                                      settings.timeout_s, sink))
    followups = []
    for i in range(len(obs.open_prompts)):
        gen = obs.get(f"D:{i}")
        if gen is None or not gen.ok or not caps.completions:
            continue
        ids = gen.choice.get("token_ids")
        prompt_ids = gen.choice.get("prompt_token_ids") or gen.doc.get("prompt_token_ids")
        if isinstance(ids, list) and ids and isinstance(prompt_ids, list) and caps.logprobs:
            followups.append(plan.rescore_request(i, model, prompt_ids, ids))
    if followups:
        progress("phase", {"name": "followup", "requests": len(followups)})
        obs.replies.update(await _execute(client, followups, settings.concurrency, settings.timeout_s, sink))
    retried = await _retry_plain(client, obs.replies, settings.timeout_s, sink)
    return obs, retried


async def _reference_print(settings: ProbeSettings, passages, seed: int, sink) -> baseline.Fingerprint:
    """Score the same passages on a live reference server (its own negotiation)."""
    async with make_http_client(ClientSettings(settings.reference, settings.api_key)) as ref:
        server = await discover(ref, settings.reference)
        model = choose_model(server, settings.model)
        caps = await Negotiation(ref, model, settings.timeout_s).run(server.max_model_len)
        reqs = [plan.Request(f"B:{p.name}", "concurrent", "/v1/completions", plan.passage_body(model, p.text, caps))
                for p in passages] if caps.prompt_logprobs_via else []
        replies = await _execute(ref, reqs, settings.concurrency, settings.timeout_s,
                                 lambda r: sink(r, "reference"))
        obs = Observations(caps, list(passages), [], [], replies)
        return baseline.from_observations(obs, model, {"kind": "reference", "url": server.base_url}, None)


async def run_probe(settings: ProbeSettings, progress: Observer, on_record: Callable[[dict], None]) -> ProbeOutcome:
    started = time.perf_counter()
    seed = settings.seed if settings.seed is not None else random.SystemRandom().randrange(1 << 30)
    ref_print = baseline.load(settings.baseline) if settings.baseline else None
    tokens = {"target": 0, "reference": 0}

    def sink(reply: Reply, where: str = "target") -> None:
        tokens[where] += reply.tokens
        on_record({**reply.record(), "server": where})

    async with make_http_client(ClientSettings(settings.endpoint, settings.api_key)) as client:
        server = await discover(client, settings.endpoint)
        model = choose_model(server, settings.model)
        progress("server", {"base_url": server.base_url, "version": server.version, "model": model})
        negotiation = Negotiation(client, model, settings.timeout_s)
        caps = await negotiation.run(server.max_model_len)
        for reply in negotiation.replies:
            sink(reply)
        progress("capabilities", caps.as_dict() | {"limitations": caps.limitations})
        passages = list(ref_print.passages) if ref_print else None
        obs, retried = await _observe(client, model, caps, seed, passages, settings, sink, progress)
    retried.update(negotiation.only_with_logprobs)
    if settings.reference:
        progress("phase", {"name": "reference", "requests": len(obs.passages)})
        ref_print = await _reference_print(settings, obs.passages, seed, sink)
    seq = answers.pass_results(obs, "C:seq:")
    answered = [v for v in seq.values() if v["read_from"] != "error"]
    answer_rate = {"passed": sum(v["passed"] for v in answered), "asked": len(answered)}
    families = [sanity.evaluate(obs, retried), likelihood.evaluate(obs), answers.evaluate(obs),
                generation.evaluate(obs), consistency.evaluate(obs)]
    here = baseline.from_observations(obs, model, {"kind": "endpoint", "url": server.base_url}, answer_rate,
                                      calibrate.summary(families))
    families.append(differential.evaluate(ref_print, here, answer_rate))
    cleared = calibrate.apply(families, ref_print.summary if ref_print else None)
    decided, reasons = verdict.decide(families)
    if cleared:
        reasons.append(f"off as much as on the baseline launch, so not counted: {', '.join(cleared)}")
    pat = verdict.pattern(decided, families)
    calibrated = any(f.name == "differential" and f.status != "skipped" for f in families)
    limitations = list(caps.limitations) + [f"{f.name} skipped: {f.reason}" for f in families
                                            if f.status == "skipped" and f.name != "differential"]
    document = {
        "schema_version": SCHEMA_VERSION, "kind": "probe", "created": utc_now(),
        "endpoint": server.base_url, "model": model, "server_version": server.version, "seed": seed,
        "verdict": decided, "pattern": pat, "pattern_name": verdict.PATTERNS.get(pat) if pat else None,
        "reasons": reasons, "advice": verdict.advice(decided, pat, calibrated),
        "confidence": "reduced" if limitations else "normal", "limitations": limitations,
        "families": [f.as_dict() for f in families],
        "baseline": ref_print.describe() if ref_print else None,
        "capabilities": caps.as_dict(), "requests": len(obs.replies) + len(negotiation.replies),
        "tokens_spent": tokens["target"], "reference_tokens_spent": tokens["reference"],
        "wall_s": round(time.perf_counter() - started, 3),
    }
    return ProbeOutcome(document, here if here.prints else None, server.version)
