"""`sparktriage rules check`: validate the stall rules (schema, validators, fixtures)."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from sparktriage.cli import console
from sparktriage.cli.exit_codes import ExitCode

rules_app = typer.Typer(help="Stall rules: validate and inspect.", no_args_is_help=True)


@rules_app.command("check")
def check(
    rules_dir: Optional[Path] = typer.Option(None, "--rules", help="Rules folder (default: the "
                                             "bundled rules)."),
    fixtures: Optional[Path] = typer.Option(None, "--fixtures", help="Fixture folder "
                                            "(<rule-id>/{positive,negative}/...); default: "
                                            "tests/fixtures/stalls of a source checkout."),
    no_fixtures: bool = typer.Option(False, "--no-fixtures", help="Skip the fixture layer."),
    json_dest: Optional[str] = typer.Option(None, "--json", metavar="PATH|-",
                                            help="Write the check report as JSON (- for stdout)."),
) -> None:
    """Validate the stall rules: schema, validators, then positive and negative fixtures."""
    from sparktriage.stalls.check import run_checks
    report = run_checks(rules_dir, None if no_fixtures else fixtures, use_fixtures=not no_fixtures)
    console.write_json(report, json_dest)
    out = console.data_console(json_dest)
    for problem in report["problems"]:
        out.print(f"{problem['location']}: {problem['severity']}: {problem['message']} "
                  f"[{problem['check']}]", markup=False, highlight=False)
    fx = report["fixtures"]
    fixture_text = (f"{fx['passed']}/{fx['total']} fixture expectations held"
                    if fx["ran"] else f"fixtures not run ({fx['why']})")
    console.info(f"{report['rules']} rules, {report['errors']} error(s), "
                 f"{report['warnings']} warning(s); {fixture_text}")
    if report["errors"] or (fx["ran"] and fx["failed"]):
        raise typer.Exit(int(ExitCode.FINDINGS))
