"""The report's plots, drawn with matplotlib (Agg) as deterministic PNG bytes.

Determinism: no pyplot global state (a fresh `Figure` per plot), the DejaVu Sans font that
ships with matplotlib, fixed size and DPI, `svg.hashsalt` pinned, and PNG metadata reduced to
nothing (no Software, no time), so the same document always yields the same bytes with the
same matplotlib. Every string drawn comes from the redacted document; no metadata field is
filled from data.
"""

from __future__ import annotations

import io
from dataclasses import dataclass

DPI = 110
_STYLE = {"font.family": "DejaVu Sans", "font.size": 8.5, "svg.hashsalt": "sparktriage",
          "axes.grid": True, "grid.alpha": 0.3, "axes.spines.top": False,
          "axes.spines.right": False, "path.simplify": True}
_COLORS = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#17becf", "#7f7f7f")
_EXTRA = ("#bcbd22", "#e377c2", "#aec7e8", "#98df8a", "#ffbb78", "#c5b0d5")
MAX_SERIES_PANELS = 15
MAX_GANTT_ROWS = 32


@dataclass(frozen=True)
class Plot:
    """One rendered plot: file name inside plots/, PNG bytes, title and caption."""

    name: str
    png: bytes
    title: str
    caption: str


def _figure(width: float, height: float):
    import matplotlib
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    matplotlib.rcParams.update(_STYLE)
    figure = Figure(figsize=(width, height), dpi=DPI)
    FigureCanvasAgg(figure)
    return figure


def _png(figure) -> bytes:
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=DPI, metadata={"Software": None})
    return buffer.getvalue()


PER_LAUNCH_CAPTION = (
    "What to read: each dot is one launch's mean delivered decode rate for a workload, its bar "
    "the 95% t-interval over that launch's requests; the shaded band behind a group of launches "
    "(same workload and depth) is the 95% interval over their launch means, with the pooled mean "
    "as a line. Bars that do not overlap the band, or a band much wider than the bars, mean the "
    "launch (not the request) sets the uncertainty: compare launches, not requests.")


def per_launch_values(protocol: dict) -> tuple[list[dict], list[dict]]:
    """What the per-launch plot draws: points (x, workload, mean, interval over requests) and
    bands (x span, pooled mean, interval over launches), from the document's own numbers."""
    launches = protocol.get("launches", [])
    names = sorted({w["name"] for l in launches for w in l["workloads"]})
    x_of = {l["label"]: i for i, l in enumerate(launches)}
    points = []
    for k, name in enumerate(names):
        offset = (k - (len(names) - 1) / 2) * 0.18
        for i, launch in enumerate(launches):
            w = next((w for w in launch["workloads"] if w["name"] == name), None)
            d = w["decode_tok_s"] if w else None
            if d and d["mean"] is not None:
                points.append({"x": i + offset, "workload": name, "series": k, "mean": d["mean"],
                               "low": d["ci95_low"] if d["ci95_low"] is not None else d["mean"],
                               "high": d["ci95_high"] if d["ci95_high"] is not None else d["mean"]})
    bands = []
    for pool in protocol.get("across", []):
        d = pool.get("decode_tok_s") or {}
        xs = [x_of[l] for l in pool.get("launches", []) if l in x_of]
        if not xs or d.get("mean") is None or pool["workload"] not in names:
            continue
        bands.append({"x0": min(xs) - 0.4, "x1": max(xs) + 0.4, "workload": pool["workload"],
                      "series": names.index(pool["workload"]), "mean": d["mean"],
                      "low": d.get("ci95_low"), "high": d.get("ci95_high"),
                      "n_launches": len(xs)})
    return points, bands


def per_launch(protocol: dict) -> Plot | None:
    if not protocol.get("launches"):
        return None
    return Plot("delivered_per_launch.png", _png(per_launch_figure(protocol)),
                "Delivered tok/s per launch", PER_LAUNCH_CAPTION)


def _legend(axes, **options) -> None:
    """A legend where the axes have labelled artists (none, e.g. every launch failed: no box,
    and no matplotlib warning in the report's output)."""
    if axes.get_legend_handles_labels()[0]:
        axes.legend(**options)


def per_launch_figure(protocol: dict):
    """The per-launch figure (dots with bars over requests, bands over launches)."""
    launches = protocol.get("launches", [])
    points, bands = per_launch_values(protocol)
    figure = _figure(7.0, 3.2)
    figure.subplots_adjust(left=0.09, right=0.98, top=0.9, bottom=0.2)
    axes = figure.add_subplot()
    labels = [l["label"] for l in launches]
    for band in bands:
        color = _COLORS[band["series"] % len(_COLORS)]
        if band["low"] is not None and band["n_launches"] > 1:
            axes.fill_between([band["x0"], band["x1"]], band["low"], band["high"], color=color,
                              alpha=0.12, linewidth=0, gid="over-launches")
        axes.hlines(band["mean"], band["x0"], band["x1"], colors=color, linewidth=1, alpha=0.7)
    for k in sorted({p["series"] for p in points}):
        mine = [p for p in points if p["series"] == k]
        axes.errorbar([p["x"] for p in mine], [p["mean"] for p in mine],
                      yerr=[[p["mean"] - p["low"] for p in mine], [p["high"] - p["mean"] for p in mine]],
                      fmt="o", capsize=3, markersize=4, color=_COLORS[k % len(_COLORS)],
                      label=f"{mine[0]['workload']} (95% over requests)")
    if any(b["low"] is not None and b["n_launches"] > 1 for b in bands):
        axes.fill_between([], [], [], color="#7f7f7f", alpha=0.2, label="95% over launches")
    axes.set_xticks(range(len(labels)), labels, rotation=45 if len(labels) > 8 else 0)
    axes.set_ylabel("delivered decode tok/s")
    axes.set_title("Delivered decode rate per launch: intervals over requests and over launches")
    _legend(axes, loc="best", frameon=False, fontsize=7)
    return figure


DELIVERED_VS_LOGGED_CAPTION = (
    "What to read: red bars are the server log's stats windows, each drawn over the span it "
    "covers at the rate it logged (square: where vLLM printed it; dashed: start estimated after "
    "an idle line hidden at INFO); blue steps are the tokens that reached the client per 10 s; "
    "grey bands are requests in flight. Red above blue over the same span: the log counts more "
    "than arrived then (the sentences above say why); red over gaps between bands includes idle "
    "time. The log's peak is the highest red bar, over all requests; the delivered mean is per "
    "request.")


def _log_bars(axes, logged: list[dict]) -> None:
    """The log's windows as bars over their own spans (from the window list, one per window)."""
    solid = [w for w in logged if w.get("start") is not None and not w.get("start_estimated")]
    dashed = [w for w in logged if w.get("start") is not None and w.get("start_estimated")]
    for group, style in ((solid, "solid"), (dashed, "dashed")):
        if group:
            axes.hlines([w["tok_s"] for w in group], [w["start"] for w in group],
                        [w["t"] for w in group], colors=_COLORS[1], linewidth=2.2,
                        linestyles=style)
    axes.plot([w["t"] for w in logged], [w["tok_s"] for w in logged], "s", color=_COLORS[1],
              markersize=3, label="log window (server)")


def delivered_vs_logged(series: list[dict]) -> Plot | None:
    """Per launch, one time axis: the log's windows, the delivered tokens, the requests."""
    series = [s for s in series if s["delivered"] or s["logged"]][:MAX_SERIES_PANELS]
    if not series:
        return None
    cols = 1 if len(series) == 1 else 2 if len(series) <= 4 else 3
    rows = (len(series) + cols - 1) // cols
    height = 0.9 + 1.6 * rows
    figure = _figure(7.0, height)
    figure.subplots_adjust(left=0.08, right=0.98, top=1 - 0.45 / height, bottom=0.45 / height,
                           hspace=0.55, wspace=0.22)
    for index, item in enumerate(series):
        axes = figure.add_subplot(rows, cols, index + 1)
        spans = [(sent, end - sent) for sent, end in item.get("requests") or []]
        if spans:  # one collection for every request band (not an artist per request)
            axes.broken_barh(spans, (0, 1), transform=axes.get_xaxis_transform(), color="#7f7f7f",
                             alpha=0.12, linewidth=0, label="request in flight")
        if item["delivered"]:
            xs = [w["t"] for w in item["delivered"]]
            ys = [w["tok_s"] for w in item["delivered"]]
            last = max([xs[-1] + 1.0] + [end for _, end in item.get("requests") or []])
            axes.step(xs + [min(last, xs[-1] + 10.0)], ys + ys[-1:], where="post", color=_COLORS[0],
                      linewidth=1.2, label="delivered per 10 s (client)")
        if item["logged"]:
            _log_bars(axes, item["logged"])
        axes.set_title(item["label"], fontsize=8, pad=3)
        axes.tick_params(labelsize=6.5)
        axes.set_ylim(bottom=0)
        if index >= len(series) - cols:
            axes.set_xlabel("s since the launch's first request", fontsize=7)
        if index % cols == 0:
            axes.set_ylabel("tok/s", fontsize=7)
        if index == 0:
            _legend(axes, loc="lower right", frameon=False, fontsize=6.5)
    figure.suptitle("Delivered vs logged: the log's windows and the requests on one time axis",
                    fontsize=9)
    return Plot("delivered_vs_logged.png", _png(figure), "Delivered vs logged over time",
                DELIVERED_VS_LOGGED_CAPTION)


def _phase_colors(launches: list[dict]) -> dict[str, str]:
    names: list[str] = []
    for launch in launches:
        for p in sorted(launch["phases"], key=lambda p: p["start"]):
            if p["name"] not in names:
                names.append(p["name"])
    palette = _COLORS + _EXTRA
    return {n: palette[i % len(palette)] for i, n in enumerate(names)}


def _gantt_rows(launches: list[dict]) -> list[tuple[dict, str]]:
    rows = []
    for launch in launches:
        nodes = sorted({p["node"] or "all" for p in launch["phases"]}
                       | {f["node"] or "all" for f in launch["findings"]})
        rows += [(launch, node) for node in nodes]
    return rows


def startup_gantt(launches: list[dict], part: int, parts: int, colors: dict[str, str]) -> Plot:
    """One Gantt chart: a row per (launch, node), phases as bars, stalls hatched in red."""
    figure = gantt_figure(launches, part, parts, colors)
    suffix = f" ({part} of {parts})" if parts > 1 else ""
    return Plot(f"startup_{part}.png" if parts > 1 else "startup.png", _png(figure),
                f"Startup timeline{suffix}", STARTUP_CAPTION)


STARTUP_CAPTION = (
    "What to read: one row per launch and node, time from the launch's first startup event; "
    "coloured bars are the startup phases (legend), so the longest bar is where the startup time "
    "went; hatched red boxes are stalls (no or slow progress), each labelled with its classified "
    "cause, whose evidence and fix are listed in the startup section. A stall on one node only "
    "points at that node.")


def _boxes(ys: list, lefts: list, widths: list, height: float) -> list[list[tuple]]:
    """Rectangles (as polygons) centred on rows `ys`: one collection draws them all at once."""
    half = height / 2
    return [[(x, y - half), (x + w, y - half), (x + w, y + half), (x, y + half)]
            for y, x, w in zip(ys, lefts, widths)]


def gantt_figure(launches: list[dict], part: int, parts: int, colors: dict[str, str]):
    """The startup Gantt chart's figure (rows per launch and node, stall boxes labelled by
    cause)."""
    from matplotlib.collections import PolyCollection
    from matplotlib.patches import Patch

    rows = _gantt_rows(launches)
    height = 1.25 + 0.3 * len(rows)
    figure = _figure(7.0, height)
    figure.subplots_adjust(left=1.55 / 7.0, right=0.98, top=1 - 0.35 / height, bottom=0.9 / height)
    axes = figure.add_subplot()
    index = {(launch["label"], node): i for i, (launch, node) in enumerate(rows)}
    bars: dict[str, tuple[list, list, list]] = {}
    for launch in launches:
        for p in launch["phases"]:
            if p["end"] is not None:
                entry = bars.setdefault(p["name"], ([], [], []))
                entry[0].append(index[(launch["label"], p["node"] or "all")])
                entry[1].append(p["end"] - p["start"])
                entry[2].append(p["start"])
    for name, (ys, widths, lefts) in bars.items():
        axes.add_collection(PolyCollection(_boxes(ys, lefts, widths, 0.55), facecolors=colors[name],
                                           edgecolors="white", linewidths=0.4))
    stall_rows, stall_lefts, stall_widths = [], [], []
    for launch in launches:
        for f in launch["findings"]:
            if f["start"] is None:
                continue
            end = f["end"] if f["end"] is not None else f["start"] + (f["duration_s"] or 0)
            node_rows = [index[(launch["label"], f["node"])]] if (launch["label"], f["node"]) in index \
                else [i for (label, _), i in index.items() if label == launch["label"]]
            stall_rows += node_rows
            stall_lefts += [f["start"]] * len(node_rows)
            stall_widths += [max(end - f["start"], 0.01)] * len(node_rows)
            axes.annotate(f["id"], (end, node_rows[0]), xytext=(3, 0), textcoords="offset points",
                          fontsize=6.5, color="#d62728", va="center",
                          bbox={"boxstyle": "round,pad=0.15", "fc": "white", "ec": "none", "alpha": 0.85})
    if stall_rows:
        axes.add_collection(PolyCollection(_boxes(stall_rows, stall_lefts, stall_widths, 0.85),
                                           facecolors="none", hatch="///", edgecolors="#d62728",
                                           linewidths=0.9))
    axes.autoscale_view()
    axes.set_xlim(left=0)
    axes.grid(False, axis="y")  # one row per tick: horizontal grid lines add nothing
    labels = [f"{launch['label']} {node}"[:26] for launch, node in rows]
    axes.set_yticks(range(len(rows)), labels, fontsize=7)
    axes.tick_params(axis="y", length=0)
    axes.set_ylim(len(rows) - 0.5, -0.5)
    axes.set_xlabel("s since the launch's first recorded startup event")
    handles = [Patch(color=c, label=n) for n, c in colors.items() if n in bars]
    if stall_rows:
        handles.append(Patch(fill=False, hatch="///", edgecolor="#d62728", label="stall"))
    axes.legend(handles=handles, loc="upper center", bbox_to_anchor=(0.5, -0.42 / (height - 1.25)),
                ncol=6, frameon=False, fontsize=6.5)
    suffix = f" ({part} of {parts})" if parts > 1 else ""
    axes.set_title(f"Startup timeline per node{suffix}")
    return figure


def startup_plots(startup: dict) -> list[Plot]:
    """The startup Gantt charts, at most MAX_GANTT_ROWS rows (launch x node) each."""
    launches = [l for l in startup.get("launches", []) if l["phases"] or l["findings"]]
    if not launches:
        return []
    colors = _phase_colors(launches)
    groups: list[list[dict]] = [[]]
    for launch in launches:
        if groups[-1] and len(_gantt_rows(groups[-1] + [launch])) > MAX_GANTT_ROWS:
            groups.append([])
        groups[-1].append(launch)
    return [startup_gantt(group, i + 1, len(groups), colors) for i, group in enumerate(groups)]


SWEEP_CAPTION = (
    "What to read: left, the delivered decode rate per speculative depth (mean of launch means, "
    "bar: 95% interval over launches; dots: single launches) against the roofline ceiling of "
    "plain decode (grey line, when the deployment gives it); the dashed green line is the depth "
    "the sweep chose; the orange line and band, when there are, are the depth model's predicted "
    "rate and its 95% interval. Overlapping bars mean the depths are not separated by the data. Right, "
    "the acceptance rate at each draft position per depth: where it falls off, deeper drafts "
    "only cost time.")


def sweep_values(sweep: dict, roofline: dict | None = None) -> dict:
    """What the sweep plot draws: per depth the mean and its interval over launches, the
    roofline ceiling (or None) and the acceptance rate per draft position."""
    points = [p for p in sweep.get("points", []) if p["mean"] is not None]
    ceiling = (roofline or {}).get("ceiling_tok_s") if (roofline or {}).get("status") == "present" else None
    return {"depths": [p["depth"] for p in points], "means": [p["mean"] for p in points],
            "low": [p["ci95_low"] if p["ci95_low"] is not None else p["mean"] for p in points],
            "high": [p["ci95_high"] if p["ci95_high"] is not None else p["mean"] for p in points],
            "rates": [p["rates"] for p in points], "ceiling_tok_s": ceiling,
            "chosen": sweep.get("decision", {}).get("depth"),
            "predicted": [(r["depth"], r["predicted"], r["ci95_low"], r["ci95_high"])
                          for r in (sweep.get("model") or {}).get("rows") or []
                          if r.get("predicted") is not None],
            "per_position": {p["depth"]: p.get("per_position") or [] for p in points
                             if p.get("per_position")}}


def sweep_curve(sweep: dict, roofline: dict | None = None) -> Plot | None:
    if not sweep_values(sweep, roofline)["depths"]:
        return None
    return Plot("sweep.png", _png(sweep_figure(sweep, roofline)), "Sweep per depth", SWEEP_CAPTION)


def sweep_figure(sweep: dict, roofline: dict | None = None):
    """The sweep figure: rate per depth with the ceiling line, acceptance per position."""
    v = sweep_values(sweep, roofline)
    figure = _figure(7.0, 3.0)
    figure.subplots_adjust(left=0.09, right=0.98, top=0.88, bottom=0.16, wspace=0.28)
    axes, right = figure.subplots(1, 2, gridspec_kw={"width_ratios": [3, 2]})
    depths = v["depths"]
    axes.errorbar(depths, v["means"], yerr=[[m - l for m, l in zip(v["means"], v["low"])],
                                            [h - m for m, h in zip(v["means"], v["high"])]],
                  fmt="-o", capsize=3, color=_COLORS[0], label="mean of launches, 95% over launches")
    for depth, rates in zip(depths, v["rates"]):
        axes.plot([depth] * len(rates), rates, ".", color=_COLORS[0], alpha=0.4)
    if v["predicted"]:
        xs = [p[0] for p in v["predicted"]]
        # with a marker: a prediction at one depth is a point, which a bare line would not draw
        axes.plot(xs, [p[1] for p in v["predicted"]], "-D", markersize=3, color="#ff7f0e",
                  linewidth=1.2, gid="model", label="depth model, predicted")
        banded = [p for p in v["predicted"] if p[2] is not None]
        if banded:
            axes.fill_between([p[0] for p in banded], [p[2] for p in banded], [p[3] for p in banded],
                              color="#ff7f0e", alpha=0.15, linewidth=0)
    if v["ceiling_tok_s"] is not None:
        axes.axhline(v["ceiling_tok_s"], color="#7f7f7f", linewidth=1.2, gid="ceiling",
                     label=f"roofline ceiling {v['ceiling_tok_s']:.0f} tok/s")
        axes.set_ylim(0, max(v["ceiling_tok_s"], max(v["high"])) * 1.08)
    if v["chosen"] in depths:
        axes.axvline(v["chosen"], color="#2ca02c", linestyle="--", linewidth=1, label=f"chosen: {v['chosen']}")
    axes.set_xlabel("speculative tokens (depth)")
    axes.set_ylabel("delivered decode tok/s")
    axes.set_xticks(sorted(set(depths) | {p[0] for p in v["predicted"]}))  # whole depths only
    _legend(axes, loc="lower right", frameon=False, fontsize=6.5)
    axes.set_title("Rate per depth", fontsize=8.5)
    for k, (depth, rates) in enumerate(sorted(v["per_position"].items())):
        right.plot(range(1, len(rates) + 1), rates, "o-", markersize=3,
                   color=_COLORS[(k + 1) % len(_COLORS)], label=f"depth {depth}")
    if v["per_position"]:
        right.set_xlabel("draft position")
        longest = max(len(rates) for rates in v["per_position"].values())
        right.set_xticks(range(1, longest + 1))  # positions are whole numbers
        right.set_xlim(0.5, longest + 0.5)
        right.set_ylim(0, 1.05)
        _legend(right, loc="upper right", frameon=False, fontsize=6.5)
    else:
        right.text(0.5, 0.5, "not measured: no per-position\nacceptance in the sweep",
                   ha="center", va="center", transform=right.transAxes, fontsize=7.5)
    right.set_ylabel("acceptance rate")
    right.set_title("Acceptance per position", fontsize=8.5)
    figure.suptitle("Speculative-depth sweep", fontsize=9)
    return figure


def render_all(document: dict) -> list[Plot]:
    """Every plot the document has data for, in report order."""
    sections = document["sections"]
    plots = [per_launch(sections["protocol"]),
             delivered_vs_logged(sections["reconciliation"].get("series", []))]
    plots += startup_plots(sections["startup"])
    plots.append(sweep_curve(sections["sweep"], sections.get("roofline")))
    return [p for p in plots if p is not None]
