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


def per_launch(protocol: dict) -> Plot | None:
    launches = protocol.get("launches", [])
    if not launches:
        return None
    names = sorted({w["name"] for l in launches for w in l["workloads"]})
    figure = _figure(7.0, 3.2)
    axes = figure.add_subplot()
    labels = [l["label"] for l in launches]
    for k, name in enumerate(names):
        offset = (k - (len(names) - 1) / 2) * 0.18
        xs, ys, lo, hi = [], [], [], []
        for i, launch in enumerate(launches):
            w = next((w for w in launch["workloads"] if w["name"] == name), None)
            d = w["decode_tok_s"] if w else None
            if d and d["mean"] is not None:
                xs.append(i + offset)
                ys.append(d["mean"])
                lo.append(d["mean"] - (d["ci95_low"] if d["ci95_low"] is not None else d["mean"]))
                hi.append((d["ci95_high"] if d["ci95_high"] is not None else d["mean"]) - d["mean"])
        axes.errorbar(xs, ys, yerr=[lo, hi], fmt="o", capsize=3, markersize=4,
                      color=_COLORS[k % len(_COLORS)], label=name)
    axes.set_xticks(range(len(labels)), labels, rotation=45 if len(labels) > 8 else 0)
    axes.set_ylabel("delivered decode tok/s")
    axes.set_title("Delivered decode rate per launch (mean, 95% interval over requests)")
    axes.legend(loc="best", frameon=False)
    figure.tight_layout()
    return Plot("delivered_per_launch.png", _png(figure), "Delivered tok/s per launch",
                "Mean decode rate of each launch's measured requests with its 95% t-interval.")


def delivered_vs_logged(series: list[dict]) -> Plot | None:
    series = [s for s in series if s["delivered"] or s["logged"]][:MAX_SERIES_PANELS]
    if not series:
        return None
    cols = 1 if len(series) == 1 else 2 if len(series) <= 4 else 3
    rows = (len(series) + cols - 1) // cols
    figure = _figure(7.0, 1.2 + 1.7 * rows)
    for index, item in enumerate(series):
        axes = figure.add_subplot(rows, cols, index + 1)
        if item["delivered"]:
            axes.step([w["t"] for w in item["delivered"]], [w["tok_s"] for w in item["delivered"]],
                      where="post", color=_COLORS[0], linewidth=1.2, label="delivered (client)")
        if item["logged"]:
            axes.plot([w["t"] for w in item["logged"]], [w["tok_s"] for w in item["logged"]],
                      "s", color=_COLORS[1], markersize=3.5, label="logged (server)")
        axes.set_title(item["label"], fontsize=8)
        axes.set_xlabel("s since first request", fontsize=7)
        axes.set_ylabel("tok/s", fontsize=7)
        if index == 0:
            axes.legend(loc="lower right", frameon=False, fontsize=7)
    figure.suptitle("Delivered vs logged generation throughput (10 s windows)", fontsize=9)
    figure.tight_layout()
    return Plot("delivered_vs_logged.png", _png(figure), "Delivered vs logged over time",
                "Tokens reaching the client per 10 s window (line) against the generation "
                "throughput the server logged (squares), per launch.")


def startup_gantt(launch: dict) -> Plot | None:
    from matplotlib.patches import Patch

    phases, findings = launch["phases"], launch["findings"]
    if not phases and not findings:
        return None
    nodes = sorted({p["node"] or "all" for p in phases} | {f["node"] or "all" for f in findings})
    figure = _figure(7.0, 1.6 + 0.45 * len(nodes))
    axes = figure.add_subplot()
    names: list[str] = []
    for p in sorted(phases, key=lambda p: p["start"]):
        if p["name"] not in names:
            names.append(p["name"])
    color_of = {n: _COLORS[i % len(_COLORS)] if i < len(_COLORS) else _EXTRA[i % len(_EXTRA)]
                for i, n in enumerate(names)}
    for p in phases:
        if p["end"] is None:
            continue
        row = nodes.index(p["node"] or "all")
        axes.barh(row, p["end"] - p["start"], left=p["start"], height=0.5, color=color_of[p["name"]],
                  alpha=0.8, edgecolor="white", linewidth=0.5)
    for f in findings:
        if f["start"] is None:
            continue
        end = f["end"] if f["end"] is not None else f["start"] + (f["duration_s"] or 0)
        rows = [nodes.index(f["node"])] if f["node"] in nodes else list(range(len(nodes)))
        for row in rows:
            axes.barh(row, max(end - f["start"], 0.01), left=f["start"], height=0.8, fill=False,
                      hatch="///", edgecolor="#d62728", linewidth=1.0)
        axes.annotate(f"stall: {f['id']}", (f["start"], rows[0] - 0.45), fontsize=7,
                      color="#d62728", va="bottom")
    axes.set_yticks(range(len(nodes)), nodes)
    axes.set_ylim(len(nodes) - 0.4, -0.9)
    axes.set_xlabel("s since the first recorded startup event")
    handles = [Patch(color=color_of[n], label=n) for n in names]
    if findings:
        handles.append(Patch(fill=False, hatch="///", edgecolor="#d62728", label="stall"))
    axes.legend(handles=handles, loc="upper center", bbox_to_anchor=(0.5, -0.3), ncol=5,
                frameon=False, fontsize=6.5)
    axes.set_title(f"Startup timeline, launch {launch['label']}")
    figure.tight_layout()
    return Plot(f"startup_{launch['label']}.png", _png(figure), f"Startup, {launch['label']}",
                "Startup phases per node; hatched red boxes are stalls, labelled with their cause.")


def sweep_curve(sweep: dict) -> Plot | None:
    points = [p for p in sweep.get("points", []) if p["mean"] is not None]
    if not points:
        return None
    figure = _figure(7.0, 3.0)
    axes = figure.add_subplot()
    depths = [p["depth"] for p in points]
    means = [p["mean"] for p in points]
    low = [p["mean"] - (p["ci95_low"] if p["ci95_low"] is not None else p["mean"]) for p in points]
    high = [(p["ci95_high"] if p["ci95_high"] is not None else p["mean"]) - p["mean"] for p in points]
    axes.errorbar(depths, means, yerr=[low, high], fmt="-o", capsize=3, color=_COLORS[0],
                  label="delivered tok/s (mean of launches)")
    for p in points:
        axes.plot([p["depth"]] * len(p["rates"]), p["rates"], ".", color=_COLORS[0], alpha=0.4)
    chosen = sweep.get("decision", {}).get("depth")
    if chosen in depths:
        axes.axvline(chosen, color="#2ca02c", linestyle="--", linewidth=1, label=f"chosen: {chosen}")
    axes.set_xlabel("speculative tokens (depth)")
    axes.set_ylabel("delivered decode tok/s")
    accept = [(p["depth"], p["acceptance_length"]) for p in points if p["acceptance_length"] is not None]
    if accept:
        twin = axes.twinx()
        twin.plot([a[0] for a in accept], [a[1] for a in accept], "s--", color=_COLORS[4],
                  markersize=4, label="mean acceptance length")
        twin.set_ylabel("mean acceptance length")
        twin.grid(False)
        twin.legend(loc="lower right", frameon=False)
    axes.set_xticks(depths)
    axes.legend(loc="upper left", frameon=False)
    axes.set_title("Speculative-depth sweep")
    figure.tight_layout()
    return Plot("sweep.png", _png(figure), "Sweep per depth",
                "Delivered decode rate per speculative depth (mean of launch means, 95% interval "
                "over launches; dots are launches) and the mean acceptance length.")


def render_all(document: dict) -> list[Plot]:
    """Every plot the document has data for, in report order."""
    sections = document["sections"]
    plots = [per_launch(sections["protocol"]),
             delivered_vs_logged(sections["reconciliation"].get("series", []))]
    plots += [startup_gantt(l) for l in sections["startup"].get("launches", [])]
    plots.append(sweep_curve(sections["sweep"]))
    return [p for p in plots if p is not None]
