"""The HTML rendering (issue 14, item 6): one self-contained file beside Markdown and PDF, plots
embedded as data URIs, covered by the same MANIFEST and signature. Opened in headless Chromium
where `chromium` is installed (provision/setup.sh installs the Debian package)."""

from __future__ import annotations

import base64
import re
import shutil
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import pytest


class _Images(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.images: list[dict] = []
        self.tables = 0
        self.links: list[str] = []

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "img":
            self.images.append(attrs)
        if tag == "table":
            self.tables += 1
        for key in ("href", "src"):
            if key in attrs and not attrs[key].startswith("data:"):
                self.links.append(attrs[key])


@pytest.fixture(scope="module")
def html_report(report_run, report_keys, report_build, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("html") / "report"
    report_build(report_run, out, report_keys["main"], formats="md,pdf,html")
    return out


def test_html_is_self_contained_with_every_plot(html_report: Path):
    import json

    text = (html_report / "report.html").read_text(encoding="utf-8")
    parser = _Images()
    parser.feed(text)
    report = json.loads((html_report / "report.json").read_text())
    assert len(parser.images) == len(report["plots"]) >= 3
    assert all(i["src"].startswith("data:image/png;base64,") for i in parser.images)
    embedded = sorted(base64.b64decode(i["src"].split(",", 1)[1]) for i in parser.images)
    files = sorted((html_report / p["file"]).read_bytes() for p in report["plots"])
    assert embedded == files  # every plot, embedded byte for byte
    assert parser.links == []  # no external reference of any kind
    assert "<script" not in text
    assert parser.tables >= 5
    md = (html_report / "report.md").read_text(encoding="utf-8")
    assert len(re.findall(r"^\| .*\|$", md, re.M)) > 0
    for row in report["summary"]["verdicts"]:
        assert f"<td>{row['verdict']}</td>" in text
    # one title for the report in every medium: the PDF's metadata title (test_pdf_metadata.py)
    assert "<title>sparktriage report: synthetic-moe-fp4</title>" in text


def test_html_is_in_the_signed_manifest(html_report: Path, tmp_path: Path):
    html_report = Path(shutil.copytree(html_report, tmp_path / "copy"))
    manifest = (html_report / "MANIFEST").read_text()
    assert re.search(r"^[0-9a-f]{64}  report\.html$", manifest, re.M)
    done = subprocess.run([sys.executable, "-m", "sparktriage", "verify", str(html_report),
                           "--allow-untrusted"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr
    (html_report / "report.html").write_text("changed", encoding="utf-8")
    bad = subprocess.run([sys.executable, "-m", "sparktriage", "verify", str(html_report),
                          "--allow-untrusted"], capture_output=True, text=True, timeout=60)
    assert bad.returncode != 0 and "report.html" in bad.stdout + bad.stderr


CHECK = r"""<script>
window.addEventListener("load", () => {
  const rows = [...document.images].map(i => `${i.complete && i.naturalWidth > 0} ${i.naturalWidth}x${i.naturalHeight}`);
  const out = document.createElement("pre"); out.id = "sparktriage-check";
  out.textContent = `images=${document.images.length}\n` + rows.join("\n");
  document.body.appendChild(out);
});
</script>"""


@pytest.mark.skipif(shutil.which("chromium") is None, reason="chromium is not installed")
def test_html_renders_in_headless_chromium_with_every_plot_loaded(report_run, report_build,
                                                                   tmp_path):
    """The report opened by a real headless Chromium: every embedded plot decodes to an image
    of the size of its PNG (checked by a script the test appends to a copy of the page; the
    report itself carries no script), and a screenshot is taken at the window's size."""
    out = tmp_path / "report"
    report_build(report_run, out, formats="html")
    html = (out / "report.html").read_text(encoding="utf-8")
    assert "<script" not in html
    plots = sorted((out / "plots").glob("*.png"))
    assert plots, "the synthetic run must have plots"
    policy = ('<meta http-equiv="Content-Security-Policy" content="default-src \'none\'; '
              'img-src data:; style-src \'unsafe-inline\'">')
    assert policy in html  # the report itself may load nothing but its own data: images
    page = tmp_path / "check.html"  # a copy that lets the test's checking script run
    page.write_text(html.replace(policy, "").replace("</body>", CHECK + "</body>"),
                    encoding="utf-8")
    flags = ["chromium", "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
             f"--user-data-dir={tmp_path / 'profile'}", "--virtual-time-budget=10000"]
    dom = subprocess.run(flags + ["--dump-dom", page.as_uri()], check=True, timeout=180,
                         capture_output=True, text=True).stdout
    result = dom.split('id="sparktriage-check">', 1)[1].split("</pre>", 1)[0].splitlines()
    assert result[0] == f"images={len(plots)}"
    sizes = sorted(tuple(int(x) for x in row.split()[1].split("x")) for row in result[1:])
    assert all(row.startswith("true ") for row in result[1:]), result
    expected = sorted((int.from_bytes(p.read_bytes()[16:20], "big"),
                       int.from_bytes(p.read_bytes()[20:24], "big")) for p in plots)
    assert sizes == expected
    shot = tmp_path / "shot.png"
    subprocess.run(flags + [f"--screenshot={shot}", "--window-size=1200,3000",
                            (out / "report.html").as_uri()], check=True, timeout=180,
                   capture_output=True)
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    assert (int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")) == (1200, 3000)
