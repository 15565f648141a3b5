"""The rule engine: score every rule against each stall and return a ranked verdict.

Per rule, the decision is evaluated three-valued over its named conditions: decided (true),
open (unknown: evidence it needs is missing) or excluded (false). Support is the weighted
share of the decision's literals that the evidence satisfies; coverage the weighted share it
could evaluate at all. Decided rules beat open ones; then support, then coverage rank them.
Confidence (docs/stalls.md) is the rule's own ceiling, scaled by coverage and by the winner's
share of support among the rules still standing, so a verdict that a plain log cannot tell
from its look-alikes says so with a low number and lists them as open.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from sparktriage.stalls import expr
from sparktriage.stalls.conditions import Evaluator, Outcome
from sparktriage.stalls.detect import Detection, Period
from sparktriage.stalls.inputs import Evidence
from sparktriage.stalls.loader import RuleSet
from sparktriage.stalls.markers import MarkerSet
from sparktriage.stalls.schema import Rule, is_evidence
from sparktriage.stalls.signals import Window

UNKNOWN = "unknown"
DECIDED, OPEN, EXCLUDED = "decided", "open", "excluded"


@dataclass(frozen=True)
class CompiledRule:
    rule: Rule
    tree: expr.Node
    literals: tuple[tuple[str, bool], ...]  # (condition name, read under `not`)
    evidence: frozenset[str] = frozenset()  # conditions whose truth is evidence for the cause


def compile_rules(ruleset: RuleSet) -> list[CompiledRule]:
    out = []
    shared = ruleset.vocabulary.shared if ruleset.vocabulary else {}
    for loaded in ruleset.rules.values():
        rule = loaded.rule
        tree = expr.parse(rule.decision)
        literals = tuple(dict.fromkeys(expr.names(tree, list(rule.conditions))))
        evidence = frozenset(n for n, c in rule.conditions.items() if is_evidence(c, shared))
        out.append(CompiledRule(rule, tree, literals, evidence))
    return sorted(out, key=lambda c: c.rule.id)


@dataclass
class Score:
    """One rule against one stall."""

    rule: Rule
    state: str  # decided / open / excluded
    support: float
    coverage: float
    outcomes: dict[str, Outcome]
    literals: tuple[tuple[str, bool], ...]  # decision literals, then `support` conditions
    gate: str | None = None  # why the rule did not apply at all (kind or phase)
    decision_len: int = 0  # how many of `literals` belong to the decision
    grounded: bool = False  # a condition that is evidence for the cause holds

    @property
    def decision_literals(self) -> tuple[tuple[str, bool], ...]:
        return self.literals[:self.decision_len]

    def rank_key(self) -> tuple:
        order = {DECIDED: 0, OPEN: 1, EXCLUDED: 2}[self.state]
        return (order, -self.support, -self.coverage, self.rule.id)

    def satisfied(self) -> list[tuple[str, bool, Outcome]]:
        return [(n, neg, self.outcomes[n]) for n, neg in self.literals
                if self.outcomes[n].value is (not neg)]

    def against(self) -> list[tuple[str, bool, Outcome]]:
        """Decision literals the evidence contradicts (what excluded the rule)."""
        return [(n, neg, self.outcomes[n]) for n, neg in self.decision_literals
                if self.outcomes[n].value is neg]

    def missing(self) -> list[str]:
        return sorted({m for n, _ in self.literals for m in self.outcomes[n].missing})


@dataclass
class Verdict:
    period: Period
    id: str
    confidence: float
    winner: Score | None
    ranked: list[Score]
    open: list[str] = field(default_factory=list)
    advice: list[str] = field(default_factory=list)
    holder: "Verdict | None" = None  # the slower node's verdict this node waited for


def score_rule(compiled: CompiledRule, period: Period, evaluator: Evaluator) -> Score:
    rule = compiled.rule
    if period.kind not in rule.kinds:
        return Score(rule, EXCLUDED, 0.0, 0.0, {}, (), gate=f"applies to {', '.join(rule.kinds)}, "
                     f"not to a {period.kind}")
    if "any" not in rule.phases and period.phase is not None and period.phase not in rule.phases:
        return Score(rule, EXCLUDED, 0.0, 0.0, {}, (),
                     gate=f"does not stall in phase {period.phase} ({', '.join(rule.phases)})")
    names = list(dict.fromkeys([n for n, _ in compiled.literals] + list(rule.support)))
    outcomes = {name: evaluator.evaluate(rule.conditions[name]) for name in names}
    value = expr.evaluate(compiled.tree, {n: o.value for n, o in outcomes.items()})
    weight = {n: rule.conditions[n].weight for n in names}
    backing = list(compiled.literals) + [(n, False) for n in rule.support]
    # support counts evidence FOR the rule: its positive tests and its `support` conditions;
    # negated tests only gate (an absent competitor is not evidence for this cause)
    positive = [n for n, neg in backing if not neg and not rule.conditions[n].gate]
    support = sum(weight[n] for n in positive if outcomes[n].value is True) \
        / (sum(weight[n] for n in positive) or 1.0)
    # coverage: how much of what settles the decision could be evaluated (1.0 when decided)
    needed = expr.relevant(compiled.tree, {n: o.value for n, o in outcomes.items()})
    coverage = sum(weight[n] for n in needed if outcomes[n].value is not None) \
        / (sum(weight[n] for n in needed) or 1.0)
    state = {True: DECIDED, None: OPEN, False: EXCLUDED}[value]
    # a decision that holds on gates, the phase and silences alone is no finding of the
    # cause: a silent weight read with no compiler anywhere is not compile-jit; it stays open
    grounded = any(outcomes[n].value is True for n, neg in backing
                   if not neg and n in compiled.evidence)
    if state == DECIDED and not grounded:
        state = OPEN
    return Score(rule, state, round(support, 4), round(coverage, 4), outcomes, tuple(backing),
                 decision_len=len(compiled.literals), grounded=grounded)


def _confidence(winner: Score, standing: list[Score]) -> float:
    others = sum(s.support * (1.0 if s.state == DECIDED else 0.5)
                 for s in standing if s is not winner)
    share = winner.support / (winner.support + others) if winner.support > 0 else 0.0
    if winner.state == DECIDED:
        return winner.rule.confidence * (0.5 + 0.5 * winner.coverage) * share
    return 0.5 * winner.rule.confidence * share


def classify(period: Period, compiled: list[CompiledRule], window: Window,
             markers: MarkerSet) -> Verdict:
    """Score every rule against one period and pick the verdict."""
    evaluator = Evaluator(window, markers)
    scores = sorted((score_rule(c, period, evaluator) for c in compiled),
                    key=Score.rank_key)
    decided = [s for s in scores if s.state == DECIDED]
    open_ = [s for s in scores if s.state == OPEN]
    standing = decided + open_
    advice_sources: list[str] = []
    if decided:
        winner = decided[0]
        open_ids = [s.rule.id for s in open_
                    if s.rule.id in _lookalike_ids(winner) or s.support > 0]
        confidence = _confidence(winner, standing)
        verdict_id = winner.rule.id
    elif open_:
        # only a rule with evidence of its own may be named; support from a silence alone
        # ranks candidates but names none
        grounded = [s for s in open_ if s.grounded]
        top = grounded[0] if grounded else None
        tied = [s for s in grounded if top and s.support == top.support]
        winner = top if top and len(tied) == 1 and top.support > 0 else None
        confidence = _confidence(top, standing) if winner else 0.0
        verdict_id = winner.rule.id if winner else UNKNOWN
        open_ids = [s.rule.id for s in open_ if s is not winner]
    else:
        winner, confidence, verdict_id, open_ids = None, 0.0, UNKNOWN, []
    for score in ([winner] if winner else []) + [s for s in open_ if s.rule.id in open_ids]:
        advice_sources += [m for m in score.missing() if m not in advice_sources]
    advice = [markers.vocabulary.advice.get(source, f"no {source} evidence")
              for source in advice_sources]
    return Verdict(period, verdict_id, round(min(confidence, 0.99), 3), winner, scores,
                   open=open_ids, advice=advice)


def _lookalike_ids(score: Score) -> set[str]:
    return {item.id for item in score.rule.lookalikes}


@dataclass
class Classification:
    evidence: Evidence
    detection: Detection
    verdicts: list[Verdict]


def classify_all(evidence: Evidence, detection: Detection, ruleset: RuleSet,
                 markers: MarkerSet) -> Classification:
    compiled = compile_rules(ruleset)
    verdicts = [classify(p, compiled, Window(evidence, detection, p), markers)
                for p in detection.periods]
    _inherit_held(verdicts)
    return Classification(evidence, detection, verdicts)


HELD_FACTOR = 0.9  # a held node's cause is its holder's, one inference removed


def _inherit_held(verdicts: list[Verdict]) -> None:
    """A node that only waited for a slower node takes that node's cause (when it is known
    and its own evidence decided nothing else): one slow rank holds all the others."""
    for verdict in verdicts:
        period = verdict.period
        if period.held_by is None or (verdict.winner and verdict.winner.state == DECIDED):
            continue
        holders = [v for v in verdicts if v.period.node == period.held_by
                   and v.period.start <= period.end and v.period.end >= period.start
                   and v.id != UNKNOWN and v.holder is None]
        if holders:
            holder = max(holders, key=lambda v: v.confidence)
            verdict.holder = holder
            verdict.id = holder.id
            verdict.confidence = round(holder.confidence * HELD_FACTOR, 3)
