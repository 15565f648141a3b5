"""Findings ranked by impact: what stands between the client and good numbers.

Each finding is derived from a section of the report document (never from text a renderer
made) and carries what was observed, the evidence that decided it, its cause as a stable id
(a stall rule id, a garbage pattern, the sweep decision, a config trap id), the fix, the
expected gain and a confidence. The gain is *measured* where this run measured it (the sweep's
best depth against the configured one; launches without a stall against launches with it; a
warm compile cache against the cold first start), otherwise *estimated* and labelled so.

Ranking (docs/report.md, Page one): wrong output first (every number from it is void), then
throughput (by the relative gain), startup (by seconds lost per launch), configuration traps,
and last the quality of the measurement itself (instability). Within a tier the larger gain
ranks first; ties keep a fixed order so the ranking is deterministic.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from statistics import median

from sparktriage.config import speculative_flag
from sparktriage.report.roofline import ceiling_at
from sparktriage.report.sweep import decision_text
from sparktriage.report.readable import count, duration, p_value, percent, rate, signed_rate
from sparktriage.report.values import as_dict, as_list, integer, text

TIERS = ("correctness", "throughput", "startup", "configuration", "measurement")


@dataclass(frozen=True)
class Gain:
    """What fixing a finding is expected to give, and how that is known."""

    basis: str  # measured | estimated | none (no speed gain: correctness or measurement)
    text: str


@dataclass(frozen=True)
class Finding:
    """One ranked finding of page one."""

    area: str  # one of TIERS
    title: str
    observed: str
    evidence: list[str]
    cause: str  # a stable id
    fix: str
    gain: Gain
    confidence: str  # high | medium | low
    impact: float = 0.0  # ranking key within the area (larger first)
    launches: list[str] = field(default_factory=list)

    def as_dict(self, rank: int) -> dict:
        out = asdict(self)
        return {"rank": rank, **out}


def _confidence(value) -> str:
    if isinstance(value, str) and value in ("high", "medium", "low"):
        return value
    if isinstance(value, (int, float)):
        return "high" if value >= 0.8 else "medium" if value >= 0.5 else "low"
    return "medium"


def _launch_list(labels: list[str]) -> str:
    return ", ".join(labels) if len(labels) <= 4 else f"{labels[0]} … {labels[-1]} ({len(labels)} launches)"


def depth_of_launches(sections: dict) -> dict[str, int]:
    """The sweep depth of each launch the report's sweep section lists (label -> depth)."""
    return {l["label"]: p["depth"] for p in sections["sweep"].get("points", []) for l in p["launches"]}


def garbage(sections: dict) -> list[Finding]:
    """Launches whose garbage probe says garbage or suspect, grouped by verdict and pattern."""
    from sparktriage.probe.verdict import ADVICE, PATTERNS

    groups: dict[tuple, list[dict]] = {}
    for launch in sections["probe"].get("launches", []):
        if launch["verdict"] in ("garbage", "suspect"):
            groups.setdefault((launch["verdict"], launch["pattern"]), []).append(launch)
    depth_of = depth_of_launches(sections)
    out = []
    for (verdict, pattern), launches in sorted(groups.items(), key=lambda kv: (kv[0][0] != "garbage", str(kv[0][1]))):
        labels = [l["label"] for l in launches]
        depths = sorted({depth_of[x] for x in labels if x in depth_of})
        where = f" at speculative depth {', '.join(map(str, depths))}" if depths else ""
        failed = [f for f in launches[0]["families"] if f["status"] in ("suspect", "garbage")]
        evidence = [f"{f['name']}: {f['status']}" + (f" ({'; '.join(f['evidence'][:1])})" if f["evidence"] else "")
                    for f in failed[:3]] or ["the probe's verdict (no failing family listed)"]
        advice = ADVICE.get(pattern or "", [])
        out.append(Finding(
            area="correctness",
            title=f"Output is {verdict}{where}" + (f": {PATTERNS.get(pattern, pattern)}" if pattern else ""),
            observed=f"the garbage probe says {verdict} in {count(len(labels), 'launch', 'launches')} "
                     f"({_launch_list(labels)}){where}",
            evidence=evidence, cause=f"probe/{pattern or verdict}",
            fix=advice[0] if advice else "relaunch with a reference MoE backend and compare (docs/garbage.md)",
            gain=Gain("none", "correct output; throughput measured on these launches is void"),
            confidence="high" if verdict == "garbage" else "medium", impact=len(labels), launches=labels))
    return out


def configured_depth(deployment: dict | None) -> int | None:
    """The speculative depth the deployment runs with (0 when it configures none); None when
    the run has no deployment.yaml."""
    if deployment is None:
        return None
    return speculative_flag.one_stream_depth(speculative_flag.in_document(deployment))


def unchecked_gate(sections: dict) -> list[Finding]:
    """The recommended depth's greedy output was never compared with depth 0's while another
    depth's was: said on page one (docs/sweep.md, "Correctness gate")."""
    sw = sections["sweep"]
    note = sw["gate_note"] if sw["status"] == "present" else None
    if not note:
        return []
    depth = sw["decision"]["depth"]
    return [Finding("correctness", f"Depth {depth} is recommended with its greedy output unchecked",
                    note, [note], "sweep/gate-unchecked",
                    f"check depth {depth}'s greedy output before relying on it: rerun the sweep with "
                    "the gate's requests allowed through (non-streaming, logprobs), or keep the "
                    "protocol's streamed requests greedy so the gate can compare them",
                    Gain("none", "no speed gain: a correctness check not made"), "medium")]


def sweep(sections: dict, configured: int | None) -> tuple[list[Finding], list[str]]:
    """The sweep's best depth against the configured one: a finding, or a healthy line."""
    sw = sections["sweep"]
    if sw["status"] != "present" or sw["decision"]["depth"] is None:
        return [], []
    chosen = sw["decision"]["depth"]
    points = {p["depth"]: p for p in sw["points"]}
    best = points.get(chosen)
    provisional = sw["decision"]["provisional"]
    if configured == chosen:
        return [], [f"speculative depth: the configured depth {chosen} is the sweep's choice "
                    f"({rate(best['mean']) if best else 'rate not measured'})"]
    evidence = [c["statement"] for c in sw["comparisons"]][:2]
    if sw["decision"]["reason"]:
        evidence.insert(0, f"decision: {sw['decision']['reason']}")
    fix = f"set speculative num_speculative_tokens to {chosen}" if chosen else "turn speculative decoding off"
    base = points.get(configured) if configured is not None else None
    if best is None or best["mean"] is None:
        return [], []
    if base is None or base["mean"] is None:
        gain = Gain("estimated", f"the configured depth ({configured if configured is not None else 'unknown'}) "
                                 f"was not measured; depth {chosen} delivered {rate(best['mean'])}")
        return [Finding("throughput", f"Speculative depth {chosen} is the sweep's best",
                        f"the sweep chose {decision_text(sw['decision'])}",
                        evidence, "sweep/decision", fix, gain, "low", 0.0)], []
    # the sweep's own test of the chosen depth against this one (sweep.json `comparisons`): its
    # difference is the one stated; the means' difference only where the sweep made no test
    test = next((c["test"] for c in sw["comparisons"] if c["versus"] == configured), None)
    p, significant = (test["p_value"], test["significant"]) if test else (None, False)
    diff = test["difference"] if test and test["difference"] is not None else best["mean"] - base["mean"]
    relative = diff / base["mean"] if base["mean"] else 0.0
    if not test:
        sig, confidence = "the sweep gives no test against this depth", "low"
    elif p is None:
        sig, confidence = "one launch per depth: significance not known", "low"
    elif significant:
        sig, confidence = f"significant, Welch {p_value(p)}", "medium" if provisional else "high"
    else:
        sig, confidence = f"not significant, Welch {p_value(p)}", "low"
    gain = Gain("measured", f"{signed_rate(diff)} ({'+' if relative >= 0 else '−'}{percent(abs(relative))}) "
                            f"delivered decode, depth {chosen} against the configured depth {configured}; {sig}")
    roof = sections["roofline"]

    def share(mean: float, depth: int | None) -> str:
        ceiling = ceiling_at(roof, depth)
        return f" ({percent(mean / ceiling)} of the roofline ceiling of its depth)" if ceiling else ""

    # the sweep's own launches (a session's protocol launch is another launch of depth 0)
    observed = (f"in the sweep's launches, configured depth {configured}: {rate(base['mean'])}"
                f"{share(base['mean'], configured)} over "
                f"{count(base['n'], 'launch', 'launches')}; depth {chosen}: {rate(best['mean'])}"
                f"{share(best['mean'], chosen)} over {count(best['n'], 'launch', 'launches')}"
                + (f"; the sweep chose {decision_text(sw['decision'])}"
                   if sw["decision"]["word"] else ""))
    if p is not None and not significant:
        return [], [f"speculative depth: depth {chosen} is not significantly faster than the configured "
                    f"depth {configured} ({signed_rate(diff)}, Welch {p_value(p)})"]
    return [Finding("throughput", f"Speculative depth {configured} is not the best: use depth {chosen}",
                    observed, evidence, "sweep/decision", fix, gain, confidence, relative)], []


def stalls(sections: dict) -> tuple[list[Finding], list[str]]:
    """Startup stalls grouped by rule id; the gain measured from launches without the stall."""
    launches = [l for l in sections["startup"].get("launches", []) if l["classified"]]
    if not launches:
        return [], []
    by_rule: dict[str, list[tuple[dict, dict]]] = {}
    for launch in launches:
        for f in launch["findings"]:
            by_rule.setdefault(f["id"], []).append((launch, f))
    if not by_rule:
        return [], [f"no startup stall: {count(len(launches), 'launch', 'launches')} classified, none found"]
    out = []
    for rule, hits in sorted(by_rule.items()):
        stalled = sorted({l["label"] for l, _ in hits})
        first = hits[0][1]
        stall_s = median(f["duration_s"] for _, f in hits if f["duration_s"] is not None) \
            if any(f["duration_s"] is not None for _, f in hits) else None
        ready_bad = [l["ready_s"] for l in launches if l["label"] in stalled and l["ready_s"] is not None]
        ready_ok = [l["ready_s"] for l in launches if l["label"] not in stalled and l["ready_s"] is not None]
        if ready_bad and ready_ok:
            saved = median(ready_bad) - median(ready_ok)
            compared = (f"launches without it were ready after {duration(median(ready_ok))} (median of "
                        f"{len(ready_ok)}), launches with it after {duration(median(ready_bad))} (median of "
                        f"{len(ready_bad)})")
            if saved > 0:
                gain = Gain("measured", f"{duration(saved)} per affected launch: {compared}")
            else:
                saved = 0.0
                gain = Gain("measured", f"none measurable in time to serving: {compared}")
        else:
            saved = stall_s or 0.0
            gain = Gain("estimated", f"up to {duration(stall_s)} per launch (the stall's length; every "
                                     "classified launch has it, so none shows the start without it)")
        nodes = sorted({f["node"] or "all nodes" for _, f in hits})
        observed = (f"{first['kind']} in {first['phase'] or 'an unknown phase'} on "
                    f"{', '.join(nodes[:3])}{' …' if len(nodes) > 3 else ''} for {duration(stall_s)} "
                    f"(median) in {len(stalled)} of {count(len(launches), 'classified launch', 'classified launches')}")
        out.append(Finding("startup", f"Startup stall: {rule}", observed, list(first["evidence"][:3]),
                           f"stall/{rule}", first["fix"] or "see docs/stalls.md for the rule",
                           gain, _confidence(first["confidence"]), saved * len(stalled) / len(launches),
                           stalled))
    return out, []


def _compile_s(launch: dict) -> float | None:
    spans = [p["duration_s"] for p in launch["phases"] if "compile" in p["name"] and p["duration_s"] is not None]
    return max(spans) if spans else None


def compile_cache(sections: dict) -> list[Finding]:
    """The first launch's compile phase against later ones (a warm compile cache), measured."""
    launches = [l for l in sections["startup"].get("launches", []) if _compile_s(l) is not None]
    if len(launches) < 2:
        return []
    cold, warm = _compile_s(launches[0]), median(_compile_s(l) for l in launches[1:])
    if cold < 1.5 * warm or cold - warm < 10.0:
        return []
    saved = cold - warm
    return [Finding("startup", "Cold compile cache on the first start",
                    f"compile took {duration(cold)} on the first launch ({launches[0]['label']}) and "
                    f"{duration(warm)} (median) on the {len(launches) - 1} later ones",
                    [f"{launches[0]['label']}: compile {duration(cold)}",
                     f"later launches: median compile {duration(warm)}"],
                    "startup/cold-compile-cache",
                    "keep vLLM's compile cache (VLLM_CACHE_ROOT) on persistent storage between starts",
                    Gain("measured", f"{duration(saved)} on a cold start (warm cache against cold, this run)"),
                    "high" if len(launches) >= 3 else "medium", saved, [launches[0]["label"]])]


def instability(sections: dict) -> tuple[list[Finding], list[str]]:
    """Configurations whose launch means spread more than their within-launch noise predicts."""
    pools = [p for p in sections["protocol"].get("across", []) if p["n_launches"] >= 2]
    if not pools:
        return [], []
    unstable = [p for p in pools if not p["stable"]]
    if not unstable:
        return [], [f"stable across launches: {count(len(pools), 'configuration')} within their "
                    "within-launch noise"]
    worst = max(unstable, key=lambda p: (p["between_variance"] or 0) / max(p["within_variance"] or 1e-12, 1e-12))
    names = [p["workload"] + ("" if p["depth"] is None else f" depth {p['depth']}") for p in unstable]
    return [Finding("measurement", "Results vary from launch to launch",
                    f"{len(unstable)} of {count(len(pools), 'configuration')} unstable across launches "
                    f"({', '.join(names[:4])}{' …' if len(names) > 4 else ''})",
                    list(worst["reasons"][:2]), "stats/unstable-across-launches",
                    "run more launches per configuration and look for what changes between starts "
                    "(placement, clocks, page cache)",
                    Gain("none", "no speed gain; intervals over launches shrink with more launches"),
                    "medium", len(unstable) / len(pools))], []


def traps(reproduce: dict | None) -> list[Finding]:
    """Config traps that fire in reproduce.json (rules/config/<id>.yaml)."""
    out = []
    for hit in as_list(as_dict(reproduce).get("traps")):
        if not isinstance(hit, dict) or hit.get("status", "fires") != "fires":
            continue
        severity = text(hit.get("severity")) or "medium"
        out.append(Finding("configuration", f"Config trap: {text(hit.get('setting')) or hit.get('id')}",
                           text(hit.get("why")) or "", [f"reproduce.json: trap {hit.get('id')} fires "
                                                        f"({text(hit.get('source')) or 'client config'})"],
                           f"trap/{hit.get('id')}", text(hit.get("fix")) or "",
                           Gain("estimated", "not measured by this run (the trap's rule names the risk)"),
                           {"high": "high", "medium": "medium"}.get(severity, "low"),
                           {"high": 3.0, "medium": 2.0, "low": 1.0}.get(severity, 0.0)))
    return out


# What a client of a checked server feels (session/findings.py ids, docs/selfcheck.md): answers
# that do not arrive are wrong output; the rest cost throughput.
_CLIENT_FIXES = {
    "no-answer": "check the engine is alive (its log, /health) before clients are sent to it",
    "not-ready": "make one short chat request succeed before serving clients",
    "empty-answer": "check the chat template and the model: the answer holds no text",
    "empty-answers": "check the chat template and stop settings: answers come back empty",
    "reasoning-only": "enable the reasoning parser's content split or read reasoning_content in clients",
    "empty-at-limit": "raise max_tokens or lower the reasoning budget: the limit is spent before any content",
    "wrong-model": "check --served-model-name and any proxy that rewrites the model",
    "short-answers": "check the proxy or gateway for dropped ignore_eos/max_tokens, and the engine's stop settings",
    "failed-requests": "read the server log at the failed requests' times; a proxy may cut streams",
    "mid-stream-pause": "look for preemptions, prefill of other requests or a buffering proxy at the pause",
    "no-token-counts": "enable usage in streams (stream_options.include_usage) at the server or gateway",
    "preemptions": "raise gpu_memory_utilization or lower max_num_seqs/max_model_len: the KV cache is too small",
    "acceptance-collapse": "restart the drafter or turn speculation off until its acceptance is understood",
}
_CLIENT_THROUGHPUT = ("mid-stream-pause", "preemptions", "acceptance-collapse")


def client(documents: dict[str, dict | None]) -> list[Finding]:
    """The findings `selfcheck` judged for each launch (`selfcheck-findings.json`; caveats stay
    in that file and in selfcheck.json)."""
    out = []
    for label, doc in documents.items():
        for number, item in enumerate(as_list(as_dict(doc).get("findings"))):
            item = as_dict(item)
            cause = text(item.get("id"))
            if item.get("severity") != "finding" or cause is None:
                continue
            area = "throughput" if cause in _CLIENT_THROUGHPUT else "correctness"
            out.append(Finding(area, f"Clients feel it: {cause.replace('-', ' ')}",
                               text(item.get("text")) or cause, [f"{label}/selfcheck-findings.json"],
                               cause, _CLIENT_FIXES.get(cause, "see docs/selfcheck.md"),
                               Gain("none", "answers clients can use"), "high",
                               impact=-number, launches=[label]))
    return out


def ranked(findings: list[Finding]) -> list[dict]:
    """Findings in rank order, as report.json records with their rank (1 = costs the most)."""
    order = sorted(enumerate(findings), key=lambda kv: (TIERS.index(kv[1].area), -kv[1].impact, kv[0]))
    return [f.as_dict(rank) for rank, (_, f) in enumerate(order, start=1)]


__all__ = ["Finding", "Gain", "TIERS", "compile_cache", "configured_depth", "depth_of_launches",
           "garbage", "instability", "ranked", "stalls", "sweep", "traps"]
