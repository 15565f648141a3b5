"""One fact, one form: every fact a report states in more than one place agrees with itself.

At least 30 generated run directories (tests/report/consistency_runs.py: one launch, selfcheck
with and without its log and metrics, sessions whose sweep, written by the sweep's own code,
ends in each decision state, with and without the depth model) are each rendered to Markdown,
HTML and report.json. From each rendering the facts stated in several places are read back
(the sweep's decision and its word, the depths it cannot separate, the launches counted, the
chosen depth's rate, each depth's step cost and tokens per step, the log's mean and peak, the
startup time) and compared: with each other, with report.json, and between the Markdown and
the HTML. A warning that compares a launch with another launch's document, a raw enum value and
a Python repr are contradictions too. The test counts them and expects none.
"""

from __future__ import annotations

import datetime as dt
import json
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest

from report.consistency_runs import CASES, make
from sparktriage.reconcile.windows import VERDICTS
from sparktriage.report.build import execute, plan_report
from sparktriage.report.summary import UNMEASURED
from sparktriage.sweep.policy.words import decision_word

WHEN = dt.datetime(2026, 3, 1, 12, 0, 0, tzinfo=dt.timezone.utc)
NUMBER = r"-?\d+(?:\.\d+)?"


class _Text(HTMLParser):
    """The text of an HTML report, one line per block element (images and styles left out)."""

    BLOCKS = {"p", "li", "tr", "h1", "h2", "h3", "h4", "pre", "figcaption", "div", "table"}

    def __init__(self) -> None:
        super().__init__()
        self.parts: list[str] = []
        self._skip = 0

    def handle_starttag(self, tag, attrs):
        if tag in ("style", "script", "title"):
            self._skip += 1
        if tag in self.BLOCKS:
            self.parts.append("\n")
        if tag in ("td", "th"):
            self.parts.append(" | ")

    def handle_endtag(self, tag):
        if tag in ("style", "script", "title"):
            self._skip -= 1
        if tag in self.BLOCKS:
            self.parts.append("\n")

    def handle_data(self, data):
        if not self._skip:
            self.parts.append(data)


def html_text(html: str) -> str:
    parser = _Text()
    parser.feed(html)
    return "".join(parser.parts)


def md_text(md: str) -> str:
    """Markdown without its emphasis marks and image links (the words a reader sees)."""
    md = re.sub(r"!\[[^\]]*\]\([^)]*\)", "", md)
    return md.replace("**", "").replace("`", "")


def render(run: Path) -> dict[str, str]:
    """report.json, report.md and report.html of a run directory, as `sparktriage report` makes
    them (build.execute) less the plots: the words and numbers are the same, and drawing four
    PNGs per run would take most of the test's time (tests/report/test_plots.py checks them)."""
    from sparktriage.documents.report import ReportDocument
    from sparktriage.report import html, markdown, outline
    from sparktriage.report.inputs import load_run
    from sparktriage.report.model import Context, build_document
    from sparktriage.report.redact import Redactor
    from sparktriage.store.typed import check

    redactor = Redactor(False, {})
    clean = redactor.run(load_run(run))
    stats = redactor.stats()
    document = build_document(clean, Context(
        "2026-03-01T12:00:00Z", False, {"secrets": stats.secrets, "distinct_secrets": stats.distinct_secrets,
                                        "kinds": stats.kinds, "anonymized_replacements": stats.anonymized}))
    document["plots"], document["data_files"] = [], [f"data/{rel}" for rel in clean.files]
    check(ReportDocument, document)
    sections = outline.build(document)
    return {"json": json.loads(json.dumps(document)), "md": markdown.render_outline(sections),
            "html": html.render_outline(sections, {})}


@pytest.fixture(scope="module")
def reports(tmp_path_factory) -> dict[str, dict]:
    out = {}
    for case in CASES:
        run = make(tmp_path_factory.mktemp(case.name) / "run", case)
        made = render(run)
        out[case.name] = {"case": case, "run": run, "json": made["json"],
                          "md": md_text(made["md"]), "html": html_text(made["html"])}
    return out


def test_the_rendering_here_is_the_reports_own(tmp_path):
    """`render` above words a run as `sparktriage report` does (its plots aside)."""
    run = make(tmp_path / "run", CASES[-1])
    execute(plan_report(run, tmp_path / "report", "md,html", None, False, tmp_path / "map.json", WHEN))
    made = render(run)
    built = (tmp_path / "report" / "report.md").read_text(encoding="utf-8")
    strip = lambda md: re.sub(r"!\[[^\]]*\]\([^)]*\)\n+(\*What to read[^\n]*\n+)?", "", md)  # noqa: E731
    assert strip(made["md"]).split("## Summary")[0] == strip(built).split("## Summary")[0]
    doc = json.loads((tmp_path / "report" / "report.json").read_text(encoding="utf-8"))
    assert made["json"]["sections"] == doc["sections"] and made["json"]["page_one"] == doc["page_one"]


def launch_folders(run: Path) -> list[Path]:
    return [p for where in ("launches", "sweep/launches") if (run / where).is_dir()
            for p in sorted((run / where).iterdir()) if p.is_dir()]


# ---- the facts, read back from a rendering -----------------------------------------------------
def _decisions(text: str) -> list[tuple[int, str]]:
    """Every 'depth N (word)' said of the sweep's decision."""
    found = []
    for line in text.splitlines():
        if re.search(r"Decision:|Speculative depth|the sweep chose|made the decision", line):
            found += [(int(d), w) for d, w in re.findall(r"depth (\d+) \((\w+)\)", line)]
    return found


def _model_table(text: str) -> dict[int, tuple[float, float]]:
    """depth -> (tokens per step, step cost) from the depth model's table."""
    rows = {}
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 8 and re.fullmatch(r"\d+", cells[0]) and cells[7].endswith("×"):
            rows[int(cells[0])] = (float(cells[6]), float(cells[7].rstrip("×")))
    return rows


def _reconciliation(text: str) -> dict[str, tuple[float, float, float]]:
    """launch -> (log mean, log mean active, log peak) from the delivered-vs-logged table."""
    rows = {}
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 8 and re.fullmatch(r"[LS]\d{3}", cells[0]) and "tok/s (" in cells[1]:
            try:
                rows[cells[0]] = tuple(float(c) for c in cells[2:5])
            except ValueError:
                continue
    return rows


def _rows(text: str, header: str) -> list[list[str]]:
    """The rows of the table whose header row starts with `header`."""
    lines, out, inside = text.splitlines(), [], False
    for line in lines:
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if line.strip().startswith("|") or " | " in line:
            if cells and " | ".join(cells).startswith(header):
                inside = True
                continue
            if inside and not set(line.strip()) <= set("|-: "):
                out.append(cells)
        elif line.strip():
            inside = False
    return out


def _agree(a: str, b: str) -> bool:
    """Two printings of one number agree: the more precise one rounds to the other."""
    da = len(a.split(".")[1]) if "." in a else 0
    db = len(b.split(".")[1]) if "." in b else 0
    digits = min(da, db)
    return round(float(a), digits) == round(float(b), digits) or \
        abs(float(a) - float(b)) <= 0.5 * 10 ** -digits + 1e-9


def contradictions(name: str, report: dict) -> list[str]:
    """Every disagreement of one report with itself (empty: none)."""
    out: list[str] = []
    doc, case = report["json"], report["case"]
    sweep = doc["sections"]["sweep"]
    for form in ("md", "html"):
        text = report[form]
        say = lambda what: out.append(f"{name} [{form}]: {what}")  # noqa: E731
        # the sweep's decision: one depth, one word, the word of its state
        if sweep["status"] == "present" and sweep["decision"]["depth"] is not None:
            d = sweep["decision"]
            word = decision_word(d["state"], d.get("provisional", False))
            said = set(_decisions(text))
            if said != {(d["depth"], word)}:
                say(f"decision said as {sorted(said)}, report.json gives depth {d['depth']} ({word})")
            for other in {"provisional", "insufficient", "settled", "tied"} - {word}:
                if re.search(rf"decision is {other}|depth {d['depth']} \({other}\)", text):
                    say(f"the decision is also called {other}")
            for line in re.findall(r"cannot separate from it: ([\d, ]+)", text):
                if str(d["depth"]) in [x.strip() for x in line.split(",")]:
                    say(f"the chosen depth {d['depth']} is listed among the depths it cannot be "
                        f"separated from ({line})")
        # launches counted: every launch folder, every depth they ran
        for n, depths in re.findall(r"(\d+) launch(?:es)? over (\d+) depths?", text):
            folders = launch_folders(report["run"])
            if int(n) != len(folders):
                say(f"{n} launches counted, {len(folders)} ran")
            swept = {p["depth"] for p in sweep.get("points", []) if p["launches"]}
            if swept and int(depths) != len(swept):
                say(f"{depths} depths counted, {len(swept)} swept")
        # a cross-check never compares two launches: the generated documents agree, so any
        # disagreement a warning reports is between two different launches
        for label, a, b in re.findall(rf"sweep\.json gives (\S+) ({NUMBER}) tok/s but its "
                                      rf"bench\.json gives ({NUMBER})", text):
            say(f"warning compares {label} with another launch's bench.json ({a} vs {b})")
        # step cost and tokens per step: the table and the sentences
        table = _model_table(text)
        for depth, value in re.findall(r"At depth (\d+)[^.]*? a verify step (?:reads [^;]*? and )?"
                                       rf"takes ({NUMBER})x", text):
            cost = table.get(int(depth), (None, None))[1]
            digits = len(value.split(".")[1]) if "." in value else 0
            if cost is None or round(cost, digits) != float(value):
                say(f"step cost at depth {depth}: table {cost}, sentence {value}")
        for depth, value in re.findall(rf"At depth (\d+)[^.]*?; its ({NUMBER}) tokens per step", text):
            tps = table.get(int(depth), (None, None))[0]
            digits = len(value.split(".")[1]) if "." in value else 0
            if tps is None or round(tps, digits) != float(value):
                say(f"tokens per step at depth {depth}: table {tps}, sentence {value}")
        # the log's mean and peak: peak at least the mean; sentences quote the table
        rec = _reconciliation(text)
        for label, (mean, active, peak) in rec.items():
            if peak < mean or peak < active:
                say(f"{label}: the log's peak {peak} is below its mean {mean} / active {active}")
        for label, value in re.findall(rf"(\w+): the log's peak ({NUMBER}) tok/s", text):
            if label in rec and abs(rec[label][2] - float(value)) > 0.051:
                say(f"{label}: log peak {rec[label][2]} in the table, {value} in a sentence")
        for label, value in re.findall(rf"(\w+): [^\n]*?logged mean ({NUMBER}) tok/s", text):
            if label in rec and abs(rec[label][0] - float(value)) > 0.051:
                say(f"{label}: logged mean {rec[label][0]} in the table, {value} in a sentence")
        # each depth's acceptance length: the sweep's table and the roofline's
        sweep_rows = {r[0]: r for r in _rows(text, "depth | launches | mean tok/s") if len(r) == 8}
        roof_rows = {r[0]: r for r in _rows(text, "depth | verify step bytes") if len(r) == 5}
        for depth, row in sweep_rows.items():
            other = roof_rows.get(depth)
            if other and row[4] != "–" and other[3] != "–" and not _agree(row[4], other[3]):
                say(f"acceptance length at depth {depth}: sweep {row[4]}, roofline {other[3]}")
        # the chosen depth's rate: page one and the sweep's table
        if sweep["status"] == "present" and sweep["decision"]["depth"] is not None:
            depth = sweep["decision"]["depth"]
            first = re.findall(rf"Delivered decode, {re.escape(sweep['workload'] or '')} \(depth "
                               rf"{depth}\) \| ({NUMBER}) tok/s", text)
            row = sweep_rows.get(str(depth))
            if first and row and row[2] != "–" and not _agree(first[0], row[2]):
                say(f"depth {depth}: {first[0]} tok/s on page one, {row[2]} in the sweep's table")
        # startup time: page one and the summary
        first = re.findall(r"Cold start to serving \| ([^|(]+)", text)
        summary = re.findall(r"Startup time \| ([^|(]+)", text)
        if first and summary and first[0].strip() != summary[0].strip():
            say(f"startup time {first[0].strip()} on page one, {summary[0].strip()} in the summary")
        # no raw enum value and no Python repr in the words
        for verdict in [v for v in VERDICTS + UNMEASURED if "_" in v]:
            if re.search(rf"(?<![\w/.]){verdict}(?![\w.])", text):
                say(f"raw enum {verdict}")
        for key in re.findall(r"\b[a-z]+(?:_[a-z]+)+_s\b", text):  # a parser's duration key
            say(f"raw key {key}")
        for repr_ in re.findall(r"\[\'|\{\'|\bNone\b|\bTrue\b|\bFalse\b", text):
            say(f"Python repr {repr_!r}")
    # the Markdown and the HTML state the same numbers
    numbers = {f: sorted(re.findall(NUMBER, report[f])) for f in ("md", "html")}
    if numbers["md"] != numbers["html"]:
        only_md = sorted(set(numbers["md"]) - set(numbers["html"]))[:5]
        only_html = sorted(set(numbers["html"]) - set(numbers["md"]))[:5]
        out.append(f"{name}: Markdown and HTML differ in their numbers (md only {only_md}, "
                   f"html only {only_html})")
    return out


def test_at_least_thirty_runs_of_every_shape(reports):
    kinds = {r["case"].kind for r in reports.values()}
    states = {r["json"]["sections"]["sweep"]["decision"]["state"] for r in reports.values()
              if r["json"]["sections"]["sweep"]["status"] == "present"}
    models = {(r["json"]["sections"]["sweep"].get("model") or {}).get("state")
              for r in reports.values() if r["json"]["sections"]["sweep"]["status"] == "present"}
    assert len(reports) >= 30
    assert kinds == {"launch", "selfcheck", "session"}
    assert {"best", "tied", "insufficient"} <= states, states
    assert {None, "rejected", "used"} <= models, models


def test_no_report_contradicts_itself(reports):
    found = [c for name, report in reports.items() for c in contradictions(name, report)]
    assert found == [], f"{len(found)} contradictions:\n" + "\n".join(found[:60])


PLANTED = [  # (what is planted in the Markdown, what the checker must say)
    (lambda t, d: t.replace(f"Decision: depth {d} (settled)", f"Decision: depth {d} (insufficient)"),
     "decision said as"),
    (lambda t, d: re.sub(r"\d+ launches over", "1 launch over", t), "launches counted"),
    (lambda t, d: t + f"\n- Depths the data cannot separate from it: 0, {d}.\n", "chosen depth"),
    (lambda t, d: t + "\n- warning: sweep.json gives S001 30.00 tok/s but its bench.json gives 27.00\n",
     "warning compares"),
    (lambda t, d: t + "\n| L001 | 27.0 tok/s (code) | 35.6 | 35.6 | 30.1 | 1.10 | – | consistent |\n",
     "below its mean"),
    (lambda t, d: t + "\nlaunches differ in sweep depth: 0, 2, None\n", "Python repr"),
    (lambda t, d: t + "\n| L009 | x | idle_in_log_windows |\n", "raw enum"),
    (lambda t, d: t + "\nvLLM's own durations: loading_weights_s 39.2\n", "raw key"),
]


def test_the_checker_finds_each_kind_of_contradiction(reports):
    """The checker is not blind: each kind of contradiction planted in a settled sweep's
    Markdown is found."""
    name, report = next((n, r) for n, r in reports.items()
                        if r["json"]["sections"]["sweep"]["status"] == "present"
                        and r["json"]["sections"]["sweep"]["decision"]["state"] == "best")
    depth = report["json"]["sections"]["sweep"]["decision"]["depth"]
    assert contradictions(name, report) == []
    for plant, expected in PLANTED:
        planted = {**report, "md": plant(report["md"], depth)}
        assert planted["md"] != report["md"], expected
        said = contradictions(name, planted)
        assert any(expected in line and "[md]" in line for line in said), (expected, said)


def test_the_console_calls_each_decision_what_the_report_calls_it(reports):
    """`sparktriage sweep` prints its decision (sweep.render) with the word the report uses."""
    from sparktriage.sweep.render import render_lines

    seen = 0
    for name, report in reports.items():
        sweep = report["json"]["sections"]["sweep"]
        if sweep["status"] != "present" or sweep["decision"]["depth"] is None:
            continue
        printed = render_lines(json.loads((report["run"] / "sweep.json").read_text())).text()
        said = re.findall(r"decision: depth (\d+) \((\w+)\)", printed)
        assert said == [(str(sweep["decision"]["depth"]), sweep["decision"]["word"])], (name, said)
        assert f"({sweep['decision']['word']})" in report["md"]
        seen += 1
    assert seen >= 15


def test_the_pdf_says_what_the_markdown_says(reports, tmp_path):
    """The PDF, laid out from the same section model, states the same decision with the same
    word and holds no raw enum or Python repr, for a run of each kind (pdftotext)."""
    import subprocess

    from sparktriage.report import outline, pdf

    picked = {}
    for name, report in reports.items():
        sweep = report["json"]["sections"]["sweep"]
        key = (report["case"].kind, sweep["status"] == "present" and sweep["decision"]["state"])
        picked.setdefault(key, name)
    assert len(picked) >= 5
    for name in picked.values():
        report = reports[name]
        path = tmp_path / f"{name}.pdf"
        path.write_bytes(pdf.render_outline(outline.build(report["json"]), {}))
        text = subprocess.run(["pdftotext", "-layout", str(path), "-"], capture_output=True,
                              text=True, check=True, timeout=120).stdout
        flat = " ".join(text.split())
        for verdict in [v for v in VERDICTS + UNMEASURED if "_" in v]:
            # a raw enum, whole or cut across a line ("idle_in_log_wind / ows")
            assert verdict[:10] not in text.replace("\n", ""), (name, verdict)
        assert not re.search(r"\[\'|\{\'|\bNone\b", flat), name
        sweep = report["json"]["sections"]["sweep"]
        if sweep["status"] == "present" and sweep["decision"]["depth"] is not None:
            assert f"Decision: depth {sweep['decision']['depth']} ({sweep['decision']['word']})" in flat, name
