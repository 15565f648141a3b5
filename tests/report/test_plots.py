"""The plots draw the document's numbers (issue 14, item 5): values of the drawn artists are
checked against the pinned eight-node report.json, not pixels."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sparktriage.report import plots

GOLDEN = Path(__file__).parent / "goldens" / "eight_node" / "report.json"


@pytest.fixture(scope="module")
def sections() -> dict:
    return json.loads(GOLDEN.read_text(encoding="utf-8"))["sections"]


def _errorbar_points(axes) -> list[tuple[float, float, float, float]]:
    """(x, y, low, high) of every errorbar point drawn on the axes."""
    out = []
    for container in axes.containers:
        line, _caps, (bars,) = container.lines[0], container.lines[1], container.lines[2]
        for (x, y), seg in zip(line.get_xydata(), bars.get_segments()):
            out.append((float(x), float(y), float(seg[0][1]), float(seg[1][1])))
    return out


def test_per_launch_draws_intervals_over_requests_and_over_launches(sections):
    protocol = sections["protocol"]
    axes = plots.per_launch_figure(protocol).axes[0]
    drawn = _errorbar_points(axes)
    wanted = [(w["decode_tok_s"]["mean"], w["decode_tok_s"]["ci95_low"], w["decode_tok_s"]["ci95_high"])
              for l in protocol["launches"] for w in l["workloads"] if w["decode_tok_s"]["mean"] is not None]
    assert len(drawn) == len(wanted) == 20  # 10 launches x 2 workloads, one bar each
    assert sorted((round(y, 6), round(lo, 6), round(hi, 6)) for _, y, lo, hi in drawn) == \
        sorted((round(m, 6), round(lo, 6), round(hi, 6)) for m, lo, hi in wanted)
    bands = [c for c in axes.collections if c.get_gid() == "over-launches"]
    pools = [p for p in protocol["across"] if p["n_launches"] > 1 and p["decode_tok_s"]["ci95_low"] is not None]
    assert len(bands) == len(pools) == 10  # 5 depths x 2 workloads
    extents = sorted((round(float(b.get_paths()[0].vertices[:, 1].min()), 6),
                      round(float(b.get_paths()[0].vertices[:, 1].max()), 6)) for b in bands)
    assert extents == sorted((round(p["decode_tok_s"]["ci95_low"], 6), round(p["decode_tok_s"]["ci95_high"], 6))
                             for p in pools)


def test_sweep_draws_rate_per_depth_the_ceiling_and_acceptance_per_position(sections):
    sweep, roofline = sections["sweep"], sections["roofline"]
    figure = plots.sweep_figure(sweep, roofline)
    rate, accept = figure.axes[0], figure.axes[1]
    drawn = _errorbar_points(rate)
    assert [(x, round(y, 6), round(lo, 6), round(hi, 6)) for x, y, lo, hi in drawn] == \
        [(p["depth"], round(p["mean"], 6), round(p["ci95_low"], 6), round(p["ci95_high"], 6))
         for p in sweep["points"]]
    ceiling = [l for l in rate.lines if l.get_gid() == "ceiling"]
    assert len(ceiling) == 1
    assert list(ceiling[0].get_ydata()) == [roofline["ceiling_tok_s"]] * 2  # 103 tok/s, a line
    per_position = {p["depth"]: p["per_position"] for p in sweep["points"] if p["per_position"]}
    assert len(per_position) == 4
    lines = {l.get_label(): list(l.get_ydata()) for l in accept.lines}
    assert lines == {f"depth {d}": v for d, v in per_position.items()}
    assert all(list(l.get_xdata()) == list(range(1, len(l.get_ydata()) + 1)) for l in accept.lines)


def test_sweep_without_a_ceiling_or_positions_says_not_measured(sections):
    sweep = json.loads(json.dumps(sections["sweep"]))
    for p in sweep["points"]:
        p["per_position"] = []
    figure = plots.sweep_figure(sweep, {"status": "missing"})
    assert not [l for l in figure.axes[0].lines if l.get_gid() == "ceiling"]
    assert any("not measured" in t.get_text() for t in figure.axes[1].texts)


def test_every_plot_caption_says_what_to_read(sections):
    captions = [plots.PER_LAUNCH_CAPTION, plots.DELIVERED_VS_LOGGED_CAPTION, plots.STARTUP_CAPTION,
                plots.SWEEP_CAPTION]
    assert all(c.startswith("What to read: ") for c in captions)
    doc = json.loads(GOLDEN.read_text(encoding="utf-8"))
    assert {p["caption"] for p in doc["plots"]} <= set(captions)
    assert len(doc["plots"]) >= 5


def test_a_launch_that_measured_nothing_draws_no_empty_legend(sections, recwarn):
    """Every launch failed before a request: the figure draws no legend, and matplotlib says
    nothing ("No artists with labels found") into the report command's output."""
    protocol = {"launches": [{**l, "workloads": []} for l in sections["protocol"]["launches"][:2]],
                "across": []}
    figure = plots.per_launch_figure(protocol)
    assert figure.axes[0].get_legend() is None
    assert not [w for w in recwarn if "legend" in str(w.message)]
    full = plots.per_launch_figure(sections["protocol"]).axes[0].get_legend()
    assert full is not None and len(full.get_texts()) == 3  # 2 workloads and the launch band


def _visible(handle) -> bool:
    """A legend handle draws something: a marker, or a line through at least two points."""
    if hasattr(handle, "get_marker") and handle.get_marker() not in (None, "", "None", " "):
        return True
    data = handle.get_xydata() if hasattr(handle, "get_xydata") else None
    return data is None or len(data) >= 2


def test_every_legend_entry_has_a_visible_mark_and_axes_are_whole_numbers(sections):
    """A model predicting one depth, one depth with one draft position: every legend entry still
    draws a mark, and the depth and draft-position axes tick whole numbers only."""
    sweep = json.loads(json.dumps(sections["sweep"]))
    sweep["points"] = [p for p in sweep["points"] if p["depth"] in (0, 1)]
    sweep["points"][1]["per_position"] = [0.8]
    sweep["decision"]["depth"] = 1
    sweep["model"] = {"rows": [{"depth": 1, "predicted": 30.0, "ci95_low": None, "ci95_high": None}]}
    figure = plots.sweep_figure(sweep, sections["roofline"])
    figure.canvas.draw()
    for axes in figure.axes:
        handles, labels = axes.get_legend_handles_labels()
        for handle, label in zip(handles, labels):
            target = handle.lines[0] if hasattr(handle, "lines") else handle
            assert _visible(target), label
    rate, accept = figure.axes
    for axes in (rate, accept):
        ticks = [t for t in axes.get_xticks() if axes.get_xlim()[0] <= t <= axes.get_xlim()[1]]
        assert ticks and all(float(t).is_integer() for t in ticks), ticks
    assert [float(t) for t in accept.get_xticks()] == [1.0]
