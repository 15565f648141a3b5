"""A node's phase rows end where the node settled: a phase the cluster entered after this node
failed is not the node's (it showed as `ready -38.0 s` on a failed rank)."""

from __future__ import annotations

from sparktriage.stalls.markers import NodeTimeline, phase_spans


def _timeline(**settled) -> NodeTimeline:
    timeline = NodeTimeline("st-node2", [], start=100.0, end=400.0, **settled)
    timeline.phase_points = [(100.0, "resolve"), (150.0, "weight_load"), (300.0, "ready")]
    return timeline


def test_a_failed_node_ends_in_the_phase_it_failed_in():
    spans = phase_spans(_timeline(failed_at=262.0))
    assert [(s["name"], s["start"], s["end"], s["duration_s"]) for s in spans] == [
        ("resolve", 100.0, 150.0, 50.0), ("weight_load", 150.0, 262.0, 112.0)]


def test_a_node_still_starting_keeps_every_phase_until_observation_ends():
    spans = phase_spans(_timeline())
    assert [(s["name"], s["duration_s"]) for s in spans] == [
        ("resolve", 50.0), ("weight_load", 150.0), ("ready", 100.0)]
    assert all(s["duration_s"] >= 0 for s in spans)
