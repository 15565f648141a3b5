"""`sparktriage stalls`: startup timeline and stall classification of a bundle or a log."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from sparktriage.cli import console
from sparktriage.cli.exit_codes import ExitCode
from sparktriage.stalls.params import DetectParams

_DEFAULTS = DetectParams()


def stalls(
    source: Path = typer.Argument(..., help="Evidence bundle (folder or .tar.gz), line records "
                                  "(*.lines.jsonl) or a plain vLLM log."),
    json_dest: Optional[str] = typer.Option(None, "--json", metavar="PATH|-",
                                            help="Write the stalls document as JSON (- for stdout)."),
    rules_dir: Optional[Path] = typer.Option(None, "--rules", help="Rules folder (default: the "
                                             "bundled rules)."),
    silence_s: float = typer.Option(_DEFAULTS.silence_s, "--silence", min=1.0,
                                    help="Seconds without progress that make a stall."),
    spawn_s: float = typer.Option(_DEFAULTS.spawn_s, "--spawn", min=1.0,
                                  help="Seconds allowed before a new process's first line "
                                  "(imports)."),
    min_stall_s: float = typer.Option(_DEFAULTS.min_stall_s, "--min-stall", min=0.0,
                                      help="Shortest period reported, in seconds."),
    crawl_mbps: float = typer.Option(_DEFAULTS.crawl_floor_bps / 1e6, "--crawl-floor", min=0.0,
                                     help="Weight-read rate below which a load crawls, in MB/s."),
    compile_cold_s: float = typer.Option(_DEFAULTS.compile_cold_s, "--compile-cold", min=1.0,
                                         help="Seconds a cold torch.compile may stay silent "
                                         "(an observation, not a stall)."),
    warmup_s: float = typer.Option(_DEFAULTS.warmup_s, "--warmup", min=1.0,
                                   help="Seconds a warmup or profiling run vLLM reports may "
                                   "take (scaled by load) before it is a stall."),
) -> None:
    """Show the startup timeline with stalls marked, and classify each with evidence and fix."""
    from sparktriage.documents.stalls import StallsDocument
    from sparktriage.stalls.analyze import analyze, load_rules
    from sparktriage.stalls.render import render
    from sparktriage.store.typed import check
    params = DetectParams(silence_s=silence_s, spawn_s=spawn_s, min_stall_s=min_stall_s,
                          crawl_floor_bps=crawl_mbps * 1e6, crawl_s=_DEFAULTS.crawl_s,
                          asym_ratio=_DEFAULTS.asym_ratio, compile_cold_s=compile_cold_s,
                          warmup_s=warmup_s)
    rules = load_rules(rules_dir)
    document, _ = analyze(source, rules, params)
    console.write_json(check(StallsDocument, document), json_dest)
    console.draw(render(document), console.data_console(json_dest))
    if document["findings"]:
        raise typer.Exit(int(ExitCode.FINDINGS))
