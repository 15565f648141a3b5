"""The depth model: delivered rate at every depth from acceptance counts and a fitted step cost.

    throughput(k) = TPS(k) / step(k)

TPS(k), tokens per engine step, comes from counts (sweep.model.acceptance_model: one launch at the
deepest depth gives every shallower depth); step(k) is a two-parameter curve fitted to the step
times of every launch (sweep.model.stepfit). A parametric curve pools every launch into two numbers
instead of one mean per depth, so fewer launches decide (the rule: sweep.policy.model_rule).

`build(launches, depths, shape)` returns a `DepthModel` in one of three states:
* `used`: every planned depth is predicted and no check failed;
* `rejected`: a check failed (lack of fit, drafter depends on k, short drafts, step time not
  monotone): the black-box rule decides, with every launch already made;
* `not-enough-data`: a depth-0 launch, a launch at the deepest depth with acceptance counts, or
  a second depth is still missing (or, with `available` false, will never come: rates compared
  end to end, no acceptance counts).
Pure: the same launches give the same model (docs/sweep.md, "The depth model").
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from functools import cached_property

from sparktriage.stats.tdist import t_ppf
from sparktriage.sweep.model import acceptance_model, fitchecks, ratiofit, rejection, stepfit
from sparktriage.sweep.model.acceptance_model import AcceptanceModel, Check
from sparktriage.sweep.evidence.counts import Counts, pooled
from sparktriage.sweep.model.ratiofit import RatioFit, RatioPoint
from sparktriage.sweep.model.stepfit import StepFit, StepPoint, StepShape
from sparktriage.sweep.evidence.steptimes import StepRatio


EARLY_ALPHA = 0.01  # per check, spent over the looks before the model would settle
GATE_ALPHA = 0.04  # each step-curve check (lack_of_fit, jump, monotone) when the model would settle
# Two-stream ratios stand in for the launch-level guards (sweep.policy.model_rule.surprises) only while
# the launches' spread around the pinned curve stays within this (the field's 6.5% launch spread
# and its estimation error at a few df). Benchmark, 300 sweeps: a 1.3x jump keyed on each
# sequence's draft length, which the pairs cannot see, left a spread of 20-23% and was named
# wrong in 51% of sweeps without this gate, 2.3% with it at 0.085 (4.7% at 0.10); the holding
# scenarios took 7.6 launches against 7.3 without it (docs/sweep.md "The two-stream phase").
PAIR_SPREAD_MAX = 0.085
CONTENDER_ALPHA = 0.01  # the contender check then (sweep.policy.model_rule.contender_check)


@dataclass(frozen=True)
class ModelLaunch:
    """One ok, pooled launch as the model reads it."""

    label: str
    depth: int
    rate: float  # delivered decode rate of the deciding workload, tok/s (the launch mean)
    counts: Counts | None = None
    ratio: StepRatio | None = None  # verify over plain step time inside the launch
    pair: StepRatio | None = None  # a step of two streams over one stream's, inside the launch

    @property
    def share(self) -> float:
        """q: the share of the launch's steps that drafted (1 at depth 0 or without counts)."""
        return 1.0 if self.depth == 0 or self.counts is None else self.counts.drafted_share

    @property
    def step_s(self) -> float | None:
        """Tokens per engine step over the delivered rate (None without counts at depth ≥ 1)."""
        if self.rate <= 0:
            return None
        if self.depth == 0:
            return 1.0 / self.rate
        if self.counts is None or not self.counts.share_known:
            return None  # without q a no-match step cannot be priced as the plain step it is
        return self.counts.tokens_per_step / self.rate


@dataclass(frozen=True)
class DepthModel:
    """The model after some launches (see module doc)."""

    state: str  # used | rejected | not-enough-data
    reason: str
    available: bool
    shape: StepShape
    depths: tuple[int, ...]
    launches: tuple[ModelLaunch, ...] = ()
    acceptance: AcceptanceModel | None = None
    steps: StepFit | None = None
    checks: tuple[Check, ...] = ()
    excluded: tuple[dict, ...] = ()
    rejected_after: str | None = None  # the launch after which a check first failed
    looks: dict = field(default_factory=dict)  # check name -> times it has run (level spending)
    gated: bool = False  # the checks are the gate's (run when the model would settle)
    rejected_by: str | None = None  # the check that rejected the model (it stands afterwards)
    ratios: RatioFit | None = None  # the slope from step times inside launches (steps is pinned to it)

    @property
    def usable(self) -> bool:
        return self.state == "used"

    @property
    def rejection(self) -> str | None:
        """Why the model was rejected, in one sentence a client can follow: which term did
        not fit and what the launches measured (sweep.model.rejection; None unless rejected)."""
        return rejection.sentence(self)

    @property
    def reuse(self) -> dict | None:
        """Routing reuse as the step curve has it: the value, its 95% range, fitted or the
        prior range kept (None for a shape it does not enter, or before a curve)."""
        if self.steps is None or not self.steps.shape.reusable:
            return None
        fit = self.steps.as_dict()
        return {"value": fit["routing_reuse"], "ci95": fit["routing_reuse_ci95"],
                "fitted": self.steps.reuse_fitted, "from": fit["routing_reuse_from"]}

    @property
    def ratio_covered(self) -> bool:
        """Every measured speculative depth has a step-time ratio measured inside a launch (a
        verify step's cost cannot jump at a measured width unseen). With two-stream ratios only
        while the launches' spread around the curve stays within PAIR_SPREAD_MAX: a pair does not
        see a cost keyed on each sequence's draft length, whose misfit inflates that spread."""
        if self.ratios is None:
            return False
        seen = {p.depth for p in self.ratios.points}
        if self.ratios.points[0].kind == "pair":
            sigma = self.steps.sigma if self.steps is not None else None
            if sigma is None or sigma > PAIR_SPREAD_MAX:
                return False
        return all(l.depth in seen for l in self.launches if l.depth > 0)

    def predicts(self, depth: int) -> bool:
        if self.steps is None:
            return False
        return depth == 0 or (self.acceptance is not None and self.acceptance.covers(depth))

    def share(self, depth: int) -> float:
        """q at `depth`: its own counts' drafted share, else the reference's (1 at depth 0)."""
        if depth == 0 or self.acceptance is None:
            return 1.0
        return self.acceptance.drafted_share(depth)

    @cached_property
    def _measured_ratios(self) -> dict[int, tuple[float, float]]:
        """Per depth, log ρ from its own launches' step-time ratios (inverse-variance mean) and
        its sd (the ranking asks for it at every slope of its grid)."""
        weights: dict[int, list[tuple[float, float]]] = {}
        for p in self.ratios.points if self.ratios is not None else ():
            if p.kind == "verify":
                weights.setdefault(p.depth, []).append((1.0 / (p.sd * p.sd), p.y))
        return {d: (sum(w * y for w, y in v) / sum(w for w, _ in v),
                    1.0 / math.sqrt(sum(w for w, _ in v))) for d, v in weights.items()}

    def measured_ratio(self, depth: int) -> tuple[float, float] | None:
        """log ρ at `depth` and its sd; None when no launch of that depth measured one."""
        return self._measured_ratios.get(depth)

    def log_step(self, depth: int, slope: float | tuple[float, float] | None = None) -> float:
        """log mean step at `depth` over a plain step: from the depth's own ratio where a launch
        measured one (a verify step's cost is then measured, not read off the curve), else from
        the curve at the fitted slope (or another)."""
        assert self.steps is not None
        q = self.share(depth)
        found = self.measured_ratio(depth) if depth else None
        if found is not None:
            return math.log1p(q * (math.exp(found[0]) - 1.0))
        return self.steps.log_h(depth, slope, q)

    def log_step_var(self, depth: int) -> float:
        """Variance of `log_step` where it comes from measured ratios (0 on the curve)."""
        found = self.measured_ratio(depth) if depth else None
        if found is None:
            return 0.0
        q, rho = self.share(depth), math.exp(found[0])
        return (q * rho / (1.0 + q * (rho - 1.0)) * found[1]) ** 2

    def log_rate(self, depth: int, slope: float | tuple[float, float] | None = None) -> float:
        """log predicted rate at `depth` (at the fitted slope, or another), t0 included."""
        assert self.steps is not None
        tps = 1.0 if depth == 0 else self.acceptance.tokens_per_step(depth)  # type: ignore[union-attr]
        return math.log(tps) - self.steps.log_t0 - self.log_step(depth, slope)

    def log_sd(self, depth: int) -> float:
        """Counting sd of log TPS(depth)."""
        return 0.0 if depth == 0 or self.acceptance is None else self.acceptance.log_sd(depth)

    def prediction(self, depth: int) -> dict:
        """Predicted rate with its 95% interval (launch spread and counting error), and its terms."""
        assert self.steps is not None
        rate = math.exp(self.log_rate(depth))
        found = self.measured_ratio(depth) if depth else None
        step_sd = self.steps.log_step_sd(depth, self.share(depth))
        if step_sd is not None and found is not None:
            step_sd = math.sqrt(self.steps.sigma ** 2 / self.steps.n + self.log_step_var(depth))  # type: ignore[operator]
        low = high = None
        if step_sd is not None and self.steps.df >= 1:
            half = t_ppf(0.975, self.steps.df) * math.hypot(step_sd, self.log_sd(depth))
            low, high = rate * math.exp(-half), rate * math.exp(half)
        acc = self.acceptance
        al = 1.0 if depth == 0 or acc is None else acc.acceptance_length(depth)
        al_low, al_high = (al, al) if depth == 0 or acc is None else acc.acceptance_interval(depth)
        measured = [l.rate for l in self.launches if l.depth == depth]
        return {"depth": depth, "tok_s": rate, "ci95_low": low, "ci95_high": high,
                "acceptance_length": al, "acceptance_ci95": [al_low, al_high],
                "tokens_per_step": 1.0 if depth == 0 or acc is None else acc.tokens_per_step(depth),
                "acceptance_source": (acc.source(depth) if acc is not None
                                      else "none (no speculation)"),
                "step_ms": math.exp(self.steps.log_t0 + self.log_step(depth)) * 1e3,
                "step_ratio": math.exp(self.log_step(depth)),
                "verify_step_ratio": math.exp(self.steps.log_h(depth) if found is None else found[0]),
                "step_source": ("none (no speculation)" if depth == 0 else "measured inside launches"
                                if found is not None else "the fitted curve"),
                "drafted_share": self.share(depth),
                "expert_ratio": (self.steps.shape.g(depth) + 1.0  # at the fitted reuse
                                 if self.shape.kind == "expert-union" else None),
                "measured_launches": len(measured),
                "measured_mean_tok_s": sum(measured) / len(measured) if measured else None}

    def as_dict(self) -> dict:
        predicted = ([self.prediction(d) for d in self.depths if self.predicts(d)]
                     if self.steps is not None else [])
        checks = [c.as_dict() for c in self.checks]
        return {
            "state": self.state, "reason": self.reason, "available": self.available,
            "rejected_after": self.rejected_after, "rejected_by": self.rejected_by,
            "rejection": self.rejection,
            "inputs": {"launches": [l.label for l in self.launches],
                       "excluded": list(self.excluded), "step_shape": self.shape.as_dict(),
                       "acceptance_from": (None if self.acceptance is None else
                                           f"depth {self.acceptance.reference.depth}'s counts "
                                           f"({self.acceptance.reference.source})"),
                       "step_times": "tokens per engine step (counts) ÷ delivered decode rate",
                       "step_ratios": (None if self.ratios is None else
                                       ("verify ÷ plain step time inside launches "
                                        if self.ratios.points[0].kind == "verify" else
                                        "two-stream ÷ one-stream step time inside launches ")
                                       + f"({len(self.ratios.points)} launch(es))")},
            "parameters": None if self.steps is None else self.steps.as_dict(),
            "routing_reuse": self.reuse,
            "step_ratios": None if self.ratios is None else self.ratios.as_dict(),
            "predicted": predicted,
            "fit_test": next((c for c in checks if c["name"] == "lack_of_fit"), None),
            "checks": checks, "looks": dict(self.looks), "gated": self.gated}


def _inputs(launches: list[ModelLaunch]) -> tuple[list[ModelLaunch], list[dict]]:
    used, excluded = [], []
    for launch in launches:
        if launch.step_s is None:
            excluded.append({"label": launch.label, "reason": _unpriced(launch)})
        else:
            used.append(launch)
    return used, excluded


UNKNOWN_SHARE = ("the share of steps where the drafter found no match is not measured (counts "
                 "without a generated-token count, and no exact chunk counts to take the steps "
                 "from), so a step that drafts nothing, which costs a plain step, cannot be "
                 "priced")


def _unpriced(launch: ModelLaunch) -> str:
    if not launch.depth:
        return "no rate"
    if launch.counts is None:
        return "no acceptance counts (no /metrics counters for this launch)"
    return UNKNOWN_SHARE if not launch.counts.share_known else "no rate"


def level(name: str, looks: dict, gate: bool = False) -> float:
    """The level of a check's next look. After every launch a check may reject the model only
    on strong evidence: EARLY_ALPHA · 6 / (π² j²) at its j-th look, so that those looks sum to
    EARLY_ALPHA at most however many launches the sweep makes. When the model would settle (the
    gate, run once: it either settles or rejects), each step-curve check runs at GATE_ALPHA
    (docs/sweep.md: the levels were chosen with bench_sweep.py, trading a false rejection, which
    costs launches, against a missed jump, which costs a wrong depth)."""
    if gate:
        return GATE_ALPHA
    j = looks.get(name, 0) + 1
    return EARLY_ALPHA * 6.0 / (math.pi ** 2 * j * j)


def _looked(looks: dict, checks: list[Check]) -> dict:
    out = dict(looks)
    for c in checks:
        if c.passed is not None and c.name != "short_drafts":
            out[c.name] = out.get(c.name, 0) + 1
    return out


def _ratio_points(used: list[ModelLaunch]) -> list[RatioPoint]:
    """The step-time ratios the slope comes from: the verify ratios where any launch measured
    one (each measures its depth's own verify step against a plain step), else the two-stream
    ratios (a drafter that drafts at every step leaves no plain step to compare with)."""
    verify = [RatioPoint(l.label, l.depth, l.ratio.log_ratio, l.ratio.log_sd)  # type: ignore[arg-type]
              for l in used if l.ratio is not None and l.ratio.measured]
    if verify:
        return verify
    return [RatioPoint(l.label, l.depth, l.pair.log_ratio, l.pair.log_sd, "pair")  # type: ignore[arg-type]
            for l in used if l.pair is not None and l.pair.measured]


def build(launches: list[ModelLaunch], depths: tuple[int, ...], shape: StepShape,
          basis: str = "decode", looks: dict | None = None, gate: bool = False) -> DepthModel:
    """The model of these launches (ok, pooled, of eligible depths; see module doc). `looks`:
    how many times each check has already run in this sweep (its level is spent over them);
    `gate`: the checks at the level of the look before the model settles (`level`)."""
    looks = dict(looks or {})
    base = dict(shape=shape, depths=tuple(sorted(depths)))
    if basis != "decode":
        return DepthModel("not-enough-data", "the sweep compares end-to-end rates (some launch "
                          "delivered its responses in bursts), and a step cost needs decode "
                          "rates", False, **base)
    used, excluded = _inputs(launches)
    spec = [l for l in launches if l.depth > 0]
    if spec and not any(l.counts for l in spec):
        return DepthModel("not-enough-data", "no launch has acceptance counts (the model reads "
                          "vLLM's /metrics spec-decode counters)", False, launches=tuple(used),
                          excluded=tuple(excluded), **base)
    if spec and not any(l.counts.share_known for l in spec if l.counts):
        return DepthModel("not-enough-data", UNKNOWN_SHARE, False, launches=tuple(used),
                          excluded=tuple(excluded), **base)
    acc = acceptance_model.build({d: c for d in {l.depth for l in used if l.depth}
                                  if (c := pooled([l.counts for l in used
                                                   if l.depth == d and l.counts])) is not None})
    # routing reuse first (from the ratios, sweep.model.ratiofit); the launch-level fit and its
    # checks then run at the fitted reuse, so that real reuse does not read as lack of fit
    points = [StepPoint(l.label, l.depth, l.step_s, l.share)  # type: ignore[arg-type]
              for l in used]
    ratios = ratiofit.fit(_ratio_points(used), shape, tuple(points))
    free = stepfit.fit(points, shape if ratios is None else ratios.shape, prior=ratios is None)
    fitted = (stepfit.pinned(free.points, ratios.shape, ratios.slope, ratios.low, ratios.high,
                             ratios.region, ratios.reuse_fitted)
              if free is not None and ratios is not None else free)
    common = dict(launches=tuple(used), acceptance=acc, steps=fitted, excluded=tuple(excluded),
                  looks=looks, ratios=ratios if fitted is not None and fitted.pinned else None,
                  **base)
    if not any(l.depth == 0 for l in used) or acc is None:
        return DepthModel("not-enough-data", "needs a launch at depth 0 and one at the deepest "
                          "depth with acceptance counts", True, **common)
    # the drafter check only ever guards depths read off the reference, and none is at the
    # gate (every depth is measured itself by then): it keeps its small early level there
    checks = [acceptance_model.short_draft_check(acc),
              acceptance_model.drafter_check(acc, level("drafter", looks, False))]
    if free is not None:
        checks += [fitchecks.lack_of_fit(free, level("lack_of_fit", looks, gate)),
                   fitchecks.jump_test(free, level("jump", looks, gate)),
                   fitchecks.monotone_check(free, level("monotone", looks, gate))]
    if common["ratios"] is not None:
        checks.append(ratiofit.check(ratios, free, level("step_ratios", looks, gate)))  # type: ignore[arg-type]
    common["looks"] = looks if gate else _looked(looks, checks)
    common["gated"] = gate
    failed = next((c for c in checks if c.passed is False), None)
    if failed is not None:
        return DepthModel("rejected", failed.reason, True, checks=tuple(checks),
                          rejected_by=failed.name + (" (gate)" if gate else ""), **common)
    missing = [d for d in depths if d > acc.reference.depth]
    if fitted is None or fitted.df < 1 or missing:
        why = (f"depth(s) {', '.join(map(str, missing))} are deeper than any launch with counts"
               if missing else "needs a third launch (two parameters, and a spread to estimate)")
        return DepthModel("not-enough-data", why, True, checks=tuple(checks), **common)
    return DepthModel("used", f"{len(used)} launches at {len({l.depth for l in used})} depths fit "
                      f"the curve (spread {fitted.sigma * 100:.1f}%, {fitted.df} df)", True,
                      checks=tuple(checks), **common)
