"""The stall classifier end to end: evidence in, `stalls` document out.

load evidence -> detect periods -> score every rule per period -> build the document. Each
step is a pure function of files and the rules folder, so a bundle can be classified offline,
later, on another machine.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from sparktriage.stalls import document
from sparktriage.stalls.detect import DetectParams, detect
from sparktriage.stalls.engine import Classification, classify_all
from sparktriage.stalls.inputs import Evidence, load
from sparktriage.stalls.lineruns import Thinning
from sparktriage.stalls.loader import RuleSet, load_directory, require_clean
from sparktriage.stalls.markers import MarkerSet
from sparktriage.stalls.quiet import quiet_lines
from sparktriage.stalls.validators import default_rules_dir, validate


@dataclass(frozen=True)
class Rules:
    """A validated rule set with its compiled vocabulary."""

    ruleset: RuleSet
    markers: MarkerSet

    @cached_property
    def quiet(self):
        """The quiet-line test of these rules (stalls/quiet.py), built once: it compiles every
        rule's expressions and their literal prefilter."""
        return quiet_lines(self.ruleset, self.markers)

    def thinning(self, params: DetectParams | None = None) -> Thinning:
        """Which lines a stretch may fold: quiet ones (stalls/quiet.py), each within a tenth
        of the shortest silence the detectors report (at most 1 s)."""
        params = params or DetectParams()
        shortest = min(params.silence_s, params.min_stall_s)
        return Thinning(self.quiet, min(1.0, shortest / 10))


def load_rules(rules_dir: Path | None = None) -> Rules:
    """Load and validate `rules/`; one ConfigError (with every problem listed) on failure."""
    directory = rules_dir or default_rules_dir()
    ruleset, problems = load_directory(directory)
    if ruleset.vocabulary is not None:
        problems += validate(ruleset)
    require_clean(problems, f"rules in {directory}")
    return Rules(ruleset, MarkerSet(ruleset.vocabulary))


def classify_evidence(evidence: Evidence, rules: Rules,
                      params: DetectParams | None = None) -> Classification:
    detection = detect(evidence, rules.markers, params)
    return classify_all(evidence, detection, rules.ruleset, rules.markers)


def analyze(path: Path, rules: Rules | None = None,
            params: DetectParams | None = None) -> tuple[dict, Classification]:
    """Classify a bundle or log; return the `stalls` document and the classification."""
    rules = rules or load_rules()
    classification = classify_evidence(load(path, rules.thinning(params)), rules, params)
    return document.build(classification, str(rules.ruleset.directory)), classification
