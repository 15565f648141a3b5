"""The section model: the report document (report.json) as one list of sections in blocks.

`build(document)` returns an `Outline` (blocks.py): the header, page one, the summary, the
evidence sections in `SECTIONS` order, then methodology, verification and the files. It is
built once per report (report/build.py) and laid out by report/markdown.py, pdf.py and html.py,
which add no word of their own. A new section is one more `(name, builder)` in `SECTIONS`; a
new table or sentence in a section is one more block in its builder (evidence.py, measured.py).
"""

from __future__ import annotations

from sparktriage.report.outline import evidence, front, measured
from sparktriage.report.outline.blocks import (Abridged, Block, Bullets, Code, Heading, Outline,
                                               Paragraph, Section, code, data, joined, prose, words)

# (report.json section, builder(document, section) -> blocks), in reading order
SECTIONS = (
    ("deployment", evidence.deployment),
    ("environment", evidence.environment),
    ("startup", evidence.startup),
    ("probe", evidence.probe),
    ("protocol", measured.protocol),
    ("reconciliation", measured.reconciliation),
    ("sweep", measured.sweep),
    ("roofline", measured.roofline),
)
SUBJECT = "vLLM deployment diagnostic report"
PAGE_LABEL = "sparktriage report - page {page}"


def title(doc: dict) -> str:
    """The report's title: it names the deployment when the run has one."""
    rows = dict((str(k), v) for k, v in doc["sections"]["deployment"].get("rows", []) if isinstance(k, str))
    name = rows.get("name") or rows.get("model.path")
    return f"sparktriage report: {name}" if name else "sparktriage report"


def methodology(doc: dict) -> Section:
    out: list[Block] = [Heading(2, words("Methodology"))]
    for paragraph in doc["methodology"]:
        out += [Heading(3, prose(paragraph["title"])), Paragraph(prose(paragraph["text"]))]
    return Section("methodology", tuple(out))


def verification(doc: dict) -> Section:
    v = doc["verification"]
    out: list[Block] = [Heading(2, words("Verification")), Paragraph(words(data(v["text"])), whole=True),
                        Code(tuple(v["commands"]))]
    if v["signed"]:
        out += [Paragraph(words("Signer identity: ", code(v["identity"]), "; key fingerprint ",
                                code(v["fingerprint"]), ".")),
                Paragraph(words("Allowed-signers line:")), Code((v["allowed_signers_line"],))]
    return Section("verification", tuple(out))


def files(doc: dict) -> Section:
    """The data files, one a line; run together in one paragraph where there are pages."""
    listed = [code(f) for f in doc["data_files"]]
    return Section("files", (
        Heading(2, words("Files")),
        Paragraph(words("Every file of this folder is listed with its SHA-256 in ", code("MANIFEST"),
                        ". The data the report was built from (redacted):")),
        Abridged((Bullets(tuple(words(f) for f in listed)),),
                 (Paragraph(words(*joined(listed)), note=True),) if listed else ())))


def build(doc: dict) -> Outline:
    """The report document as its section model, in reading order."""
    sections = [front.header(doc), front.page_one(doc), front.summary(doc)]
    sections += [Section(name, tuple(make(doc, doc["sections"][name]))) for name, make in SECTIONS]
    sections += [methodology(doc), verification(doc), files(doc)]
    return Outline(title(doc), SUBJECT, doc["generated_at"], doc.get("tool_version") or "", PAGE_LABEL,
                   tuple(s for s in sections if s is not None))


__all__ = ["PAGE_LABEL", "SECTIONS", "SUBJECT", "build", "title"]
