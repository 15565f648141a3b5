"""`sparktriage report`: the pipeline from a run directory to a signed report folder.

Declared first (`plan_report` checks the options and paths and nothing else), then executed:

    resolve signer → read run directory → redact → document → plots → section model
    → Markdown / PDF / HTML → copy the redacted data → MANIFEST → MANIFEST.sig
    → swap into place → private map

The folder is built beside its destination and moved into place only when complete, so an
interrupted build never leaves a half-written or stale-signed report. An existing destination
is replaced only when it is itself a sparktriage report folder.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from sparktriage.documents.report import ReportDocument
from sparktriage.errors import InputError, UsageError
from sparktriage.progress import Observer, quiet
from sparktriage.report import html, markdown, outline, pdf, plots
from sparktriage.report.inputs import RunInputs, load_run
from sparktriage.report.model import KIND, Context, build_document
from sparktriage.report.redact import Redactor, read_map, write_map
from sparktriage.signing import manifest
from sparktriage.signing.signing import SignSpec, resolve, sign_folder
from sparktriage.store.documents import dumps, write_document
from sparktriage.store.typed import check

FORMATS = ("md", "pdf", "html")


@dataclass(frozen=True)
class ReportPlan:
    """Everything one report build will do, decided before anything runs."""

    run_dir: Path
    out_dir: Path
    formats: tuple[str, ...]
    anonymize: bool
    map_path: Path
    generated_at: str
    sign: SignSpec | None = None


@dataclass
class ReportOutcome:
    """What a build produced (for the CLI's summary and --json)."""

    report_dir: str
    files: list[str] = field(default_factory=list)
    map_path: str = ""
    signed: bool = False
    identity: str | None = None
    fingerprint: str | None = None
    allowed_signers_line: str | None = None
    secrets_replaced: int = 0
    anonymized: bool = False
    warnings: int = 0
    verdicts: list[dict] = field(default_factory=list)

    def as_dict(self) -> dict:
        return {"schema_version": 1, "kind": "sparktriage-report-build", **self.__dict__}


def generated_at(now: _dt.datetime | None = None) -> str:
    """The build time, fixed width UTC; SOURCE_DATE_EPOCH (reproducible builds) wins."""
    epoch = os.environ.get("SOURCE_DATE_EPOCH")
    if now is None and epoch:
        try:
            now = _dt.datetime.fromtimestamp(int(epoch), _dt.timezone.utc)
        except (ValueError, OverflowError, OSError) as exc:
            raise UsageError(f"SOURCE_DATE_EPOCH={epoch!r} is not a Unix time") from exc
    now = now or _dt.datetime.now(_dt.timezone.utc)
    return now.astimezone(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _inside(path: Path, folder: Path) -> bool:
    try:
        path.resolve().relative_to(folder.resolve())
    except ValueError:
        return False
    return True


def parse_formats(formats: str) -> tuple[str, ...]:
    """`--format` (a comma list of md, pdf, html) as the formats in their fixed order; UsageError else."""
    chosen = tuple(f.strip().lower() for f in formats.split(",") if f.strip())
    unknown = [f for f in chosen if f not in FORMATS]
    if unknown or not chosen:
        raise UsageError(f"--format {formats!r}: choose from {', '.join(FORMATS)} (comma-separated)")
    return tuple(f for f in FORMATS if f in chosen)


def plan_report(run_dir: Path, out_dir: Path | None = None, formats: str = "md,pdf",
                sign: SignSpec | None = None, anonymize: bool = False,
                map_path: Path | None = None, now: _dt.datetime | None = None) -> ReportPlan:
    """Check the options and fix every path of a report build."""
    chosen = parse_formats(formats)
    out = out_dir or run_dir / "report"
    if out.resolve() == run_dir.resolve() or _inside(run_dir, out):
        raise UsageError(f"--out {out}: the report folder cannot be the run directory or hold it")
    private = map_path or out.parent / f"{out.name}.private-map.json"
    if _inside(private, out):
        raise UsageError(f"--map {private}: the private map must be outside the report folder")
    return ReportPlan(run_dir, out, chosen, anonymize, private, generated_at(now), sign)


def write_data(folder: Path, inputs: RunInputs) -> list[str]:
    """Copy the (redacted) inputs under folder/data at their run-directory paths."""
    written = []
    for rel, source in inputs.files.items():
        target = folder / "data" / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        if source.kind == "jsonl":
            target.write_text("".join(dumps(r) + "\n" for r in source.content), encoding="utf-8")
        elif source.kind == "yaml":
            target.write_text(yaml.safe_dump(source.content, sort_keys=False, allow_unicode=True),
                              encoding="utf-8")
        else:
            write_document(target, source.data)
        written.append(f"data/{rel}")
    return written


def _replace(tmp: Path, out: Path) -> None:
    if out.exists():
        is_report = (out / manifest.MANIFEST).is_file() or _kind(out / "report.json") == KIND
        if not out.is_dir() or not is_report:
            raise InputError(f"{out} exists and is not a sparktriage report folder; "
                             "choose another --out (nothing was overwritten)")
        old = out.with_name(f".{out.name}.old-{os.getpid()}")
        os.replace(out, old)
        os.replace(tmp, out)
        shutil.rmtree(old, ignore_errors=True)
    else:
        os.replace(tmp, out)


def _kind(path: Path) -> str | None:
    try:
        return json.loads(path.read_text(encoding="utf-8")).get("kind")
    except (OSError, ValueError, AttributeError, RecursionError):
        return None


def execute(plan: ReportPlan, observe: Observer = quiet) -> ReportOutcome:
    """Build, sign and place the report folder; write the private map outside it."""
    signer, signing = resolve(plan.sign) if plan.sign else (None, None)
    inputs = load_run(plan.run_dir)
    observe("read", {"files": len(inputs.files), "launches": len(inputs.launches)})
    redactor = Redactor(plan.anonymize, read_map(plan.map_path))
    clean = redactor.run(inputs)
    stats = redactor.stats()
    observe("redacted", {"secrets": stats.secrets, "distinct": stats.distinct_secrets,
                         "anonymized": stats.anonymized})
    context = Context(plan.generated_at, plan.anonymize,
                      {"secrets": stats.secrets, "distinct_secrets": stats.distinct_secrets,
                       "kinds": stats.kinds, "anonymized_replacements": stats.anonymized}, signing)
    document = build_document(clean, context)
    rendered = plots.render_all(document)
    document["plots"] = [{"file": f"plots/{p.name}", "title": p.title, "caption": p.caption}
                         for p in rendered]
    document["data_files"] = [f"data/{rel}" for rel in clean.files]
    observe("rendered", {"plots": len(rendered)})
    plan.out_dir.parent.mkdir(parents=True, exist_ok=True)
    tmp = plan.out_dir.with_name(f".{plan.out_dir.name}.tmp-{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    try:
        tmp.mkdir()
        write_data(tmp, clean)
        (tmp / "plots").mkdir()
        for plot in rendered:
            (tmp / "plots" / plot.name).write_bytes(plot.png)
        write_document(tmp / "report.json", check(ReportDocument, document))
        sections = outline.build(document)  # the report's words, once, for every format
        pngs = {p.name: p.png for p in rendered}
        if "md" in plan.formats:
            (tmp / "report.md").write_text(markdown.render_outline(sections), encoding="utf-8")
        if "pdf" in plan.formats:
            (tmp / "report.pdf").write_bytes(pdf.render_outline(sections, pngs))
        if "html" in plan.formats:
            (tmp / "report.html").write_text(html.render_outline(sections, pngs), encoding="utf-8")
        entries = sign_folder(tmp, signer)
        _replace(tmp, plan.out_dir)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    write_map(plan.map_path, redactor.map_document(str(plan.out_dir)))
    return ReportOutcome(
        report_dir=str(plan.out_dir), files=[e.path for e in entries], map_path=str(plan.map_path),
        signed=signer is not None, identity=signing.identity if signing else None,
        fingerprint=signing.fingerprint if signing else None,
        allowed_signers_line=signing.allowed_signers_line if signing else None,
        secrets_replaced=stats.secrets, anonymized=plan.anonymize,
        warnings=len(document["warnings"]), verdicts=document["summary"]["verdicts"])
