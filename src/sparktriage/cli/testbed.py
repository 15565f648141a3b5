"""`sparktriage testbed lab up N` / `lab down`: the network-namespace lab (docs/testbed.md)."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path
from typing import Optional

import typer

from sparktriage.cli import console
from sparktriage.errors import UsageError

testbed_app = typer.Typer(help="Test beds on this machine.", no_args_is_help=True)
lab_app = typer.Typer(help="A lab of N network-namespace nodes, each with its own sshd "
                      "(root only).", no_args_is_help=True)
testbed_app.add_typer(lab_app, name="lab")

_DIR = typer.Option(None, "--dir", help="State folder of the lab [/run/sparktriage-lab].")


def _pyspy() -> str | None:
    here = Path(sys.executable).with_name("py-spy")
    return str(here) if here.is_file() else shutil.which("py-spy")


@lab_app.command("up")
def lab_up(
    nodes: int = typer.Argument(..., help="Number of nodes (1-16)."),
    state_dir: Optional[Path] = _DIR,
    python: str = typer.Option("/usr/bin/python3", "--python", help="Interpreter that runs the "
                               "node agent on the nodes."),
    pyspy: Optional[str] = typer.Option(None, "--pyspy", help="py-spy for the nodes [the one "
                                        "beside sparktriage, else PATH]."),
    json_out: Optional[str] = typer.Option(None, "--json", help="Write the lab description to "
                                           "PATH, or - for stdout."),
) -> None:
    """Create N namespace nodes st-node1..N (10.250.0.K, sshd each) and write lab.yaml."""
    from sparktriage.testbed.lab.execute import DEFAULT_DIR, require_root, up
    from sparktriage.testbed.lab.plan import MAX_NODES, plan_lab

    require_root()
    if not 1 <= nodes <= MAX_NODES:
        raise UsageError(f"a lab has 1 to {MAX_NODES} nodes, not {nodes}")
    plan = plan_lab(nodes, (state_dir or DEFAULT_DIR).absolute(), python, pyspy or _pyspy())
    result = up(plan)
    console.write_json(result, json_out)
    console.info(f"lab up: {', '.join(n['name'] + ' ' + n['address'] for n in result['nodes'])}")
    if json_out != "-":
        typer.echo(result["lab"])


@lab_app.command("down")
def lab_down(state_dir: Optional[Path] = _DIR) -> None:
    """Remove every namespace, link, process and key the lab made (nothing there: fine)."""
    from sparktriage.testbed.lab.execute import DEFAULT_DIR, down

    result = down((state_dir or DEFAULT_DIR).absolute())
    if result["removed"]:
        console.info(f"lab down: removed {', '.join(result['namespaces']) or 'no namespace'}, "
                     f"{len(result['killed'])} process(es) stopped")
    else:
        console.info(f"no lab in {result['state_dir']}")
