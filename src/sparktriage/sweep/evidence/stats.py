"""Statistics of a sweep at two levels (design §6).

Per launch: the delivered decode rates of its measured requests (deciding workload), summarised
with a t-interval over requests. Per depth: the launch mean is one observation; the depth's rate
is the mean of its launch means with a t-interval over launches, the within- and between-launch
variances and a stability warning with reasons (stats.summary.aggregate_launches). Launches whose
checked metadata differ from the sweep's reference launch are never pooled: they are listed as
excluded with the reason (stats.compare.check_poolable).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from sparktriage.stats.compare import check_poolable
from sparktriage.stats.summary import LaunchAggregate, Summary, aggregate_launches, summarize

# what must agree for two launches to be pooled (the speculative config is the swept factor)
CHECKED_METADATA = ("model", "server_version", "deployment_hash", "nodes")


@dataclass(frozen=True)
class LaunchObservation:
    """One finished launch of a sweep, as the statistics see it."""

    label: str
    depth: int
    ok: bool
    request_rates: tuple[float, ...] = ()
    metadata: dict = field(default_factory=dict)

    @property
    def summary(self) -> Summary:
        return summarize(list(self.request_rates))

    @property
    def mean(self) -> float | None:
        return self.summary.mean


@dataclass(frozen=True)
class DepthStats:
    """One depth over its pooled launches: their labels and means, the launch-level aggregate
    (stats.summary.LaunchAggregate: interval over launches, variance split, stability), and the
    launches not pooled."""

    depth: int
    labels: tuple[str, ...]
    launch_means: tuple[float, ...]
    aggregate: LaunchAggregate
    excluded: tuple[dict, ...]

    @property
    def across(self) -> Summary:
        return self.aggregate.across

    @property
    def within_variance(self) -> float | None:
        return self.aggregate.within_variance

    @property
    def between_variance(self) -> float | None:
        return self.aggregate.between_variance

    @property
    def stable(self) -> bool:
        return self.aggregate.stable

    @property
    def reasons(self) -> tuple[str, ...]:
        return self.aggregate.reasons

    @property
    def notes(self) -> tuple[str, ...]:
        extra = ((f"{len(self.excluded)} launch(es) not pooled: their checked metadata differ",)
                 if self.excluded else ())
        return self.aggregate.notes + extra

    def as_dict(self) -> dict:
        return {"depth": self.depth, "labels": list(self.labels),
                "launch_means": list(self.launch_means), "across": self.across.as_dict(),
                "within_variance": self.within_variance, "between_variance": self.between_variance,
                "stable": self.stable, "reasons": list(self.reasons), "notes": list(self.notes),
                "excluded": list(self.excluded)}


def poolable(reference: dict, launch: LaunchObservation) -> list[str]:
    """Why `launch` cannot be pooled with the reference launch (empty when it can)."""
    keys = tuple(k for k in CHECKED_METADATA if k in reference and k in launch.metadata)
    return check_poolable([reference, launch.metadata], keys)


def depth_stats(depth: int, launches: list[LaunchObservation], reference: dict | None) -> DepthStats:
    """Aggregate the ok launches of one depth that may be pooled with the reference."""
    used, excluded = [], []
    for launch in launches:
        if not launch.ok or launch.mean is None:
            continue
        reasons = poolable(reference, launch) if reference else []
        if reasons:
            excluded.append({"label": launch.label, "reasons": reasons})
        else:
            used.append(launch)
    aggregate = aggregate_launches([list(l.request_rates) for l in used])
    return DepthStats(depth, tuple(l.label for l in used), tuple(l.mean for l in used),  # type: ignore[misc]
                      aggregate, tuple(excluded))
