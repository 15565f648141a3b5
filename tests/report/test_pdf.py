"""The PDF read back with poppler's real tools: text, pages, images; no secret inside."""

from __future__ import annotations

import base64
import re
import subprocess
import zlib

from sparktriage.report.format import number, when
from sparktriage.testbed.synthetic_run import identifying_values, planted_values


def _pdftotext(path) -> str:
    return subprocess.run(["pdftotext", "-layout", str(path), "-"], capture_output=True, text=True,
                          check=True).stdout


def test_headline_numbers_and_verdicts_are_in_the_pdf_text(report_built):
    import json

    doc = json.loads((report_built / "report.json").read_text())
    text = _pdftotext(report_built / "report.pdf")
    first_page, summary_page = text.split("\f")[:2]  # page 1 is the diagnosis (page_one), page 2 the summary
    for row in doc["summary"]["headline"]:
        assert row["value"] in summary_page, row
    for verdict in doc["summary"]["verdicts"]:
        assert verdict["verdict"] in summary_page, verdict
    pool = doc["sections"]["protocol"]["across"][0]
    assert number(pool["decode_tok_s"]["mean"]) in text
    assert when(doc["generated_at"]) in first_page  # `2026-03-01 12:00:00 UTC`
    assert "ssh-keygen -Y verify -f \"$SIGNERS\" -I consultant@example.com -n sparktriage" in text


def test_every_page_renders_and_every_plot_is_embedded(report_built, tmp_path):
    import json

    info = subprocess.run(["pdfinfo", str(report_built / "report.pdf")], capture_output=True, text=True,
                          check=True).stdout
    pages = int(re.search(r"Pages:\s+(\d+)", info).group(1))
    assert pages >= 4
    subprocess.run(["pdftoppm", "-r", "30", "-png", str(report_built / "report.pdf"), str(tmp_path / "p")],
                   check=True)
    images = sorted(tmp_path.glob("p-*.png"))
    assert len(images) == pages
    assert all(img.stat().st_size > 1000 for img in images)
    listing = subprocess.run(["pdfimages", "-list", str(report_built / "report.pdf")], capture_output=True,
                             text=True, check=True).stdout.splitlines()[2:]
    embedded = [line for line in listing if line.split()[2] == "image"]
    plots = json.loads((report_built / "report.json").read_text())["plots"]
    assert len(embedded) == len(plots) >= 4


def _pdf_text_streams(data: bytes) -> list[bytes]:
    """Every non-image stream of a PDF, decoded (ASCII85 and Flate filters)."""
    out = []
    for match in re.finditer(rb"<<(.*?)>>\s*stream\r?\n(.*?)endstream", data, re.S):
        header, body = match.group(1), match.group(2)
        if b"/Image" in header:
            continue  # pixel data: no text can hide there
        if b"ASCII85Decode" in header:
            body = base64.a85decode(body.strip(), adobe=body.strip().startswith(b"<~"))
        if b"FlateDecode" in header:
            body = zlib.decompress(body)
        out.append(body)
    return out


def test_no_planted_value_anywhere_in_the_report_folder(report_built):
    values = planted_values() + identifying_values()
    exact = [v.encode() for v in values]
    folded = [v.lower().encode() for v in values]
    for path in sorted(p for p in report_built.rglob("*") if p.is_file()):
        data = path.read_bytes()
        assert not [v for v in exact if v in data], path  # raw bytes, as written
        texts = [data] if path.suffix not in (".pdf", ".png") else []
        if path.suffix == ".pdf":
            streams = _pdf_text_streams(data)
            assert len(streams) >= 5
            texts += streams + [_pdftotext(path).encode()]
        if path.suffix == ".png":
            texts += [chunk for kind, chunk in _png_chunks(data) if kind in (b"tEXt", b"iTXt", b"zTXt")]
        for text in texts:  # any case, in everything that carries text
            leaked = [v for v in folded if v in text.lower()]
            assert not leaked, (path, leaked)


def _png_chunks(data: bytes):
    pos = 8
    while pos < len(data):
        length = int.from_bytes(data[pos:pos + 4], "big")
        kind = data[pos + 4:pos + 8]
        yield kind, data[pos + 8:pos + 8 + length]
        pos += 12 + length


def test_plots_carry_no_text_metadata(report_built):
    for png in (report_built / "plots").glob("*.png"):
        kinds = [kind for kind, _ in _png_chunks(png.read_bytes())]
        assert kinds[0] == b"IHDR" and kinds[-1] == b"IEND"
        assert not {b"tEXt", b"iTXt", b"zTXt", b"tIME"} & set(kinds), (png.name, kinds)
