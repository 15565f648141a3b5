"""`sparktriage reproduce`: client inputs to a launchable deployment, a lab plan and a diff."""

from __future__ import annotations

from pathlib import Path
from typing import List, Optional

import typer

from sparktriage.cli import console


def reproduce(
    inputs: List[Path] = typer.Argument(..., help="Client inputs: serve lines/scripts, docker run, compose, collect-env, env dumps, deployment YAML."),
    out: Path = typer.Option(..., "--out", help="Folder for deployment.yaml and reproduce.json."),
    lab: Optional[Path] = typer.Option(None, "--lab", help="Lab YAML (docs/launch.md) [this machine]."),
    node_map: Optional[str] = typer.Option(None, "--node-map", help="CLIENT=LAB,... [in order]."),
    lab_capture: Optional[Path] = typer.Option(None, "--lab-capture", help="A saved lab capture (environment.json, {node: environment}, collect-env or env dump) instead of capturing live."),
    no_capture: bool = typer.Option(False, "--no-capture", help="Do not capture the lab's environment (the diff then has the client side only)."),
    json_out: Optional[str] = typer.Option(None, "--json", help="Also write the result to PATH, or - for stdout."),
) -> None:
    """Turn what a client sends into a launchable deployment, a lab plan and the diff that matters."""
    from sparktriage.reproduce import reproduce as run_reproduce  # imported when run, not for --help
    from sparktriage.reproduce.place.nodemap import parse_node_map
    from sparktriage.reproduce.render import summary

    result = run_reproduce(list(inputs), lab, parse_node_map(node_map), out,
                           lab_capture=lab_capture, capture_live=not no_capture)
    console.draw(summary(result), console.stderr)
    console.write_json(result.to_json(), json_out)
