"""Deciding and allocating with the depth model (docs/sweep.md, "The depth model").

Under the model the rate at depth k is TPS(k) / (t0 · (1 + s·g(k))): the ranking of the depths
depends on the slope s alone (t0 cancels) and on the counted TPS(k). The slope's 95% confidence
set S (sweep.model.stepfit) therefore carries everything the launches say; TPS(k) carries its
counting error where a depth is read off another's counts (one-sided z at α over the other depths,
the two depths' errors in quadrature). With
ℓ_k(s) = log TPS(k) − log(1 + s·g(k)):

* `best`: one depth b beats every other for every s in S, by more than the counting error;
* `tied`: the lowest depth r that is within the margin δ of every other for every s in S
  (ℓ_r(s) − ℓ_k(s) ≥ log(1 − δ) less the counting error): more launches could only tell apart
  depths within the margin;
* otherwise nothing settles; the depth best at the fitted slope is provisional.

If the true slope lies in S (95%) and the counts are right, a settled decision names a depth
within the margin of the best: the guarantee of the black-box rule. Before the model may settle
it needs: the state `used` (every check passed), every eligible depth measured (a depth never
launched could hide a step-cost jump that no curve fitted elsewhere can see), one depth measured
twice (so the lack-of-fit test has run), df ≥ MIN_DF, and no `surprises` left; the recommended
depth is then measured. Its checks run once more when it would settle
(sweep.policy.rule.advance, with `contender_check` aimed at the decision). The repeated looks
are not corrected for; the benchmark measures the error rate that results (docs/benchmarks.md). When every measured
speculative depth has a step-time ratio measured inside a launch (sweep.evidence.steptimes, or the
two-stream phase's sweep.evidence.pairtimes; ratiofit), the slope's set comes from those ratios and
a jump of the verify step's cost shows there, so the challenger and the contest of `surprises`
(launch-level guards against a jump the curve smooths over) are not needed; depths far from the
curve still are.

Allocation: depth 0 and the deepest depth first (they pin the slope), then the depth best at the
fitted slope, then its closest rivals until every depth has a launch, then the surprises, then
the depth whose next launch (landing on the curve: `stepfit.with_point`) most shrinks what keeps
the decision open, ties to fewer launches and the lower depth.
"""

from __future__ import annotations

import math
from statistics import NormalDist

from sparktriage.stats.tdist import t_ppf
from sparktriage.sweep.policy.allocate import ALPHA, MARGIN, Decision
from sparktriage.sweep.model.acceptance_model import Check
from sparktriage.sweep.model.depth import DepthModel
from sparktriage.sweep.model.stepfit import StepFit, with_point

MIN_DF = 3
GRID = 24
SURPRISE_Z = 2.0  # a depth whose launches sit this far from the curve is launched again ...
# ... or that compare with the fastest better than the curve says by this z (benchmark, 1000
# sweeps: at 1.0 a 1.3x step-cost jump was named wrong in 16.4% of sweeps, at 0.5 in 7.0%, and
# with the contest below in 4.6%, for 2.2 launches more where the model holds; docs/sweep.md)
CHALLENGER_Z = 0.5
SURPRISE_MAX = 8  # ... until it has this many launches (benchmark: 3 left a 1.3x step-cost jump wrong in 24% of sweeps, 8 in 13%; docs/sweep.md)
CONTEST_LAUNCHES = 2  # the fastest depth and its closest measured rival need this many launches
REACH_Z = 1.0  # the contender test takes depths within this many standard errors of reaching r


def _slopes(fit: StepFit) -> list[tuple[float, float]]:
    """(s, ρ) points spanning the step curve's 95% set (routing reuse's rows included)."""
    return fit.candidates(GRID)


class _Table:
    """ℓ_k(s) over the slope grid, and each depth's counting variance (module doc)."""

    def __init__(self, model: DepthModel, fit: StepFit, depths: list[int], alpha: float) -> None:
        self.depths = depths
        self.slopes = _slopes(fit)
        acc = model.acceptance
        log_tps = {d: 0.0 if d == 0 else math.log(acc.tokens_per_step(d)) for d in depths}  # type: ignore[union-attr]
        self.value = {d: [log_tps[d] - model.log_step(d, slope) for slope in self.slopes]
                      for d in depths}
        self.var = {d: model.log_sd(d) ** 2 + model.log_step_var(d) for d in depths}
        self.z = NormalDist().inv_cdf(1.0 - alpha / max(1, len(depths) - 1))

    def _slack(self, a: int, b: int) -> float:
        return self.z * math.sqrt(self.var[a] + self.var[b])

    def lead(self, r: int) -> float:
        """The worst case over S of r's lead over every other depth, its error taken off."""
        others = [d for d in self.depths if d != r]
        if not others:
            return math.inf
        return min(self.value[r][i] - self.value[k][i] - self._slack(r, k)
                   for i in range(len(self.slopes)) for k in others)

    def could_be_best(self, r: int) -> bool:
        others = [d for d in self.depths if d != r]
        return not others or max(min(self.value[r][i] - self.value[k][i] + self._slack(r, k)
                                     for k in others)
                                 for i in range(len(self.slopes))) >= 0.0


def _fitted_best(model: DepthModel, depths: list[int]) -> int:
    return max(depths, key=lambda d: (model.log_rate(d), -d))


def ready(model: DepthModel, measured: dict[int, int], eligible: list[int]) -> str | None:
    """Why the model may not settle yet (None when it may)."""
    if not model.usable or model.steps is None:
        return f"the depth model is {model.state}: {model.reason}"
    lof = next((c for c in model.checks if c.name == "lack_of_fit"), None)
    unmeasured = [d for d in eligible if not measured.get(d)]
    if unmeasured:
        return (f"depth(s) {', '.join(map(str, unmeasured))} not measured yet (a depth never "
                "launched could hide a step-cost jump the curve cannot see)")
    odd = surprises(model)
    if odd:
        return (f"depth(s) {', '.join(map(str, odd))} sit far from the curve, above it near the "
                "top, or are the contest at the top with one launch: launched again before the "
                "model decides")
    if lof is None or lof.passed is not True:
        return "the model's lack-of-fit test has not run yet (a depth measured twice is needed)"
    if model.steps.df < MIN_DF:
        return (f"the fitted curve has {model.steps.df} degree(s) of freedom, fewer than the "
                f"{MIN_DF} the model needs to decide")
    return None


def surprises(model: DepthModel, margin: float = MARGIN) -> list[int]:
    """Depths to launch again before the model may decide, the most surprising first (each
    until it has SURPRISE_MAX launches): those whose mean sits more than SURPRISE_Z standard
    errors from the curve, and those that compare with the depth predicted fastest better than
    the curve says by more than CHALLENGER_Z (`_contrasts`): a step-cost jump the curve smooths
    over shows there first. Last, the contest: the depth predicted fastest and the measured
    depth within its reach whose launches come closest to it, until each has CONTEST_LAUNCHES
    (one launch of each is the pair a jump between them hides behind most easily)."""
    fit = model.steps
    if fit is None or not fit.sigma:
        return []
    groups: dict[int, list[float]] = {}
    for p in fit.points:
        groups.setdefault(p.depth, []).append(p.y - fit.log_t0 - fit.log_h(p.depth, None, p.share))
    picked = {}
    for d, v in groups.items():
        z = abs(sum(v) / len(v)) / (fit.sigma / math.sqrt(len(v)))
        if len(v) < SURPRISE_MAX and z > SURPRISE_Z:
            picked[d] = z
    if model.ratio_covered:  # a verify step's jump shows in the ratios (sweep.model.ratiofit)
        return sorted(picked, key=lambda d: -picked[d])
    best = _fitted_best(model, [d for d in model.depths if model.predicts(d)])
    rivals = _contrasts(model, best, margin)
    for d, (z, _) in rivals.items():
        if z > CHALLENGER_Z:
            target = d if len(groups.get(d, [])) <= len(groups.get(best, [])) else best
            if len(groups.get(target, [])) < SURPRISE_MAX:
                picked[target] = max(picked.get(target, 0.0), z)
    for d in _contest(model, best, rivals):
        if len(groups.get(d, [])) < CONTEST_LAUNCHES:
            picked.setdefault(d, 0.0)
    return sorted(picked, key=lambda d: -picked[d])


def _contest(model: DepthModel, best: int, rivals: dict[int, tuple[float, float]]) -> list[int]:
    """The depth predicted fastest and, of the measured depths within its reach (`rivals`:
    `_contrasts` against it), the one whose launches' mean log rate is highest."""
    if not rivals:
        return [best]
    mean = {d: sum(v) / len(v) for d, v in _launch_logs(model).items()}
    closest = max(rivals, key=lambda d: (mean[d], -d))
    return [best, closest]


def _launch_logs(model: DepthModel) -> dict[int, list[float]]:
    """Each measured depth's launches as log rates."""
    logs: dict[int, list[float]] = {}
    for launch in model.launches:
        logs.setdefault(launch.depth, []).append(math.log(launch.rate))
    return logs


def _contrasts(model: DepthModel, r: int, margin: float) -> dict[int, tuple[float, float]]:
    """For every measured depth d that comes within reach of r by their own launches: the z of
    (measured log-rate difference d − r) − (the curve's difference), one-sided toward d, and
    the standard error it was divided by. The curve says how d and r compare; a jump the curve
    smooths over shows as a pair whose launches compare otherwise."""
    fit = model.steps
    if fit is None or not fit.sigma:
        return {}
    logs = _launch_logs(model)
    if r not in logs:
        return {}
    mean = {d: sum(v) / len(v) for d, v in logs.items()}
    out = {}
    for d, v in logs.items():
        if d == r:
            continue
        se = fit.sigma * math.sqrt(1.0 / len(v) + 1.0 / len(logs[r]))
        if mean[d] - mean[r] < math.log(1.0 - margin) - REACH_Z * se:
            continue  # d's launches are far below r's: it cannot be the better one
        predicted = model.log_rate(d) - model.log_rate(r)
        out[d] = ((mean[d] - mean[r] - predicted) / se, se)
    return out


def contender_check(model: DepthModel, r: int, alpha: float, margin: float = MARGIN) -> Check:
    """The gate's test aimed at the decision: every measured depth d that its own launches bring
    within reach of the recommended depth r (REACH_Z standard errors short of r's margin, or
    closer) must compare with r as the curve says, within the launches' spread: one-sided z on
    the measured log-rate difference against the curve's (Student t on the curve's degrees of
freedom), Bonferroni over such depths."""
    found = _contrasts(model, r, margin)
    figures: dict = {"recommended": r, "compared": sorted(found)}
    if not found:
        return Check("contender", True, f"no measured depth comes within reach of depth {r}",
                     figures)
    crit = t_ppf(1.0 - alpha / len(found), model.steps.df)  # type: ignore[union-attr]
    worst = max(found, key=lambda d: found[d][0])
    z = found[worst][0]
    figures.update(z={str(d): round(v[0], 3) for d, v in found.items()}, critical_z=round(crit, 3),
                   alpha=alpha)
    if z > crit:
        return Check("contender", False,
                     f"depth {worst} compares with the recommended depth {r} better by its launches "
                     f"than the curve says (z = {z:.1f} > {crit:.2f}): the curve smooths over a "
                     "step-cost jump between them", figures)
    return Check("contender", True,
                 f"the depths within reach of depth {r} compare with it as the curve says "
                 f"(largest z {z:.1f} ≤ {crit:.2f})", figures)


def _decision(model: DepthModel, eligible: list[int], measured: dict[int, int],
              margin: float, alpha: float) -> Decision | None:
    depths = sorted(d for d in eligible if model.predicts(d))
    if ready(model, measured, eligible) is not None or not depths or set(depths) != set(eligible):
        return None
    fit = model.steps
    assert fit is not None
    table = _Table(model, fit, depths, alpha)
    candidates = tuple(d for d in depths if table.could_be_best(d))
    shared = dict(cv=fit.sigma, df=fit.df, rule="model")
    reuse = ""
    if fit.shape.reusable:
        lo, hi = fit.reuse_range
        reuse = f", routing reuse {lo:.2f}-{hi:.2f}"
    span = (f"slope {fit.slope_low:.3g}-{fit.slope_high:.3g} (95%){reuse}, launch spread "
            f"{(fit.sigma or 0) * 100:.1f}%, {fit.df} df")
    for b in depths:
        if measured.get(b) and table.lead(b) > 0.0:
            return Decision("best", b, (b,),
                            f"depth {b} beats every other depth for every step-cost slope the "
                            f"launches allow ({span}) by more than the acceptance counts' error",
                            False, within_margin=(b,), **shared)
    bound = math.log(1.0 - margin)
    within = tuple(r for r in depths if table.lead(r) >= bound)
    chosen = [r for r in within if measured.get(r)]
    if chosen:
        low = chosen[0]
        return Decision("tied", low, candidates,
                        f"depths {', '.join(map(str, candidates))} cannot be told apart under the "
                        f"depth model, but depth {low} is within {margin * 100:g}% of the best for "
                        f"every step-cost slope the launches allow ({span}): depth {low} is kept "
                        f"(the lowest measured depth shown within the margin)", False,
                        within_margin=within, **shared)
    return None


def decide(model: DepthModel, eligible: list[int], measured: dict[int, int],
           margin: float = MARGIN, alpha: float = ALPHA) -> Decision | None:
    """The model's settled decision over the eligible depths, or None while it cannot settle
    (not ready, the slope's confidence set leaves it open, or measured launches contradict it)."""
    decision = _decision(model, eligible, measured, margin, alpha)
    return decision


def provisional(model: DepthModel, eligible: list[int], final: bool, why: str,
                alpha: float = ALPHA) -> Decision:
    """Not settled: the depth best at the fitted slope, with the depths the model cannot rule out."""
    depths = sorted(d for d in eligible if model.predicts(d))
    fit = model.steps
    assert fit is not None and depths
    best = _fitted_best(model, depths)
    candidates = tuple(d for d in depths if _Table(model, fit, depths, alpha).could_be_best(d))
    return Decision("insufficient", best, candidates or (best,),
                    f"under the depth model depth {best} has the highest predicted rate but is not "
                    f"settled ({why})" + ("; the launch budget is spent" if final else ""),
                    True, fit.sigma, fit.df, rule="model")


def _openness(model: DepthModel, fit: StepFit, depths: list[int], measured: dict[int, int],
              extra: int | None, margin: float, alpha: float) -> float:
    """How far the best-placed recommendation is from being within the margin (≤ 0: settled)."""
    table = _Table(model, fit, depths, alpha)
    bound = math.log(1.0 - margin)
    open_ = [bound - table.lead(r) for r in depths if measured.get(r) or r == extra]
    return min(open_) if open_ else math.inf


def next_depth(model: DepthModel, eligible: list[int], measured: dict[int, int],
               min_per_depth: int = 1, margin: float = MARGIN, alpha: float = ALPHA) -> int | None:
    """The next launch under the model (None when its decision is settled); see module doc."""
    ends = [0, max(eligible)] if eligible else []
    for d in ends:
        if d in eligible and measured.get(d, 0) < min_per_depth:
            return d
    fit = model.steps
    depths = sorted(d for d in eligible if model.predicts(d))
    if fit is None or not depths:
        return None
    unmeasured = [d for d in depths if measured.get(d, 0) < min_per_depth]
    if unmeasured:  # the fitted best first, then its closest rivals
        return max(unmeasured, key=lambda d: (model.log_rate(d), -d))
    odd = surprises(model)
    if odd:
        return odd[0]
    if _decision(model, eligible, measured, margin, alpha) is not None:
        return None
    replicated = any(n >= 2 for n in measured.values())
    options = [d for d in depths if measured.get(d)] if not replicated else depths
    scores = {}
    for d in options:
        ahead = with_point(fit, d, model.share(d))
        scores[d] = _openness(model, ahead, depths, measured, d, margin, alpha)
    return min(scores, key=lambda d: (scores[d], measured.get(d, 0), d))
