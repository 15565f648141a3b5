"""Every command of `sparktriage`, registered in this one place: name, module, function, help.

Nothing here imports a command module: `cli/app.py` imports the one a command line names, when
it needs it, so `sparktriage --help` and `sparktriage X --help` load only what they show. A
`group` entry names a `typer.Typer` of subcommands instead of a function.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Command:
    name: str
    module: str  # under sparktriage.cli
    attr: str  # the command function, or the Typer of a group
    help: str  # the one-line summary `sparktriage --help` lists
    group: bool = False


COMMANDS: tuple[Command, ...] = (
    Command("demo", "demo", "demo", "Run a whole session on the local CPU vLLM with the bundled tiny model."),
    Command("selfcheck", "selfcheck", "selfcheck", "Check a running server: garbage probe, delivered tokens, log reconciliation, report."),
    Command("session", "session", "session_app", "The consultant's diagnostic as one declared, resumable run: run, resume, status.", group=True),
    Command("launch", "launch", "launch", "Start a deployment on its nodes, watch it to readiness, collect an evidence bundle, stop it."),
    Command("collect", "collect", "collect", "Collect an evidence bundle around a running server (by PID, command or process name)."),
    Command("stalls", "stalls", "stalls", "Show the startup timeline with stalls marked, and classify them (cause, evidence, fix)."),
    Command("logs", "logs", "logs", "Parse vLLM logs: startup phases, throughput and speculative-decoding series, findings."),
    Command("probe", "probe", "probe", "Probe a server for FP4 garbage (healthy / suspect / garbage, with the evidence)."),
    Command("bench", "bench", "bench", "Measure tokens delivered to a streaming client (TTFT, decode and end-to-end rates)."),
    Command("sweep", "sweep", "sweep", "Relaunch a deployment per speculative depth: rates with intervals over launches, a correctness gate, a recommendation."),
    Command("report", "report", "report", "Render a redacted, signed Markdown and PDF report from a run directory."),
    Command("verify", "verify", "verify", "Verify a report's signature, its signer and the digest of every file."),
    Command("reproduce", "reproduce", "reproduce", "Turn what a client sends into a launchable deployment, a lab plan and the diff that matters."),
    Command("schema", "schema", "schema", "List the typed documents, print one's JSON Schema, or check a file against it."),
    Command("simulate", "simulate", "simulate", "Serve a simulated OpenAI-compatible API with an exact token ground truth."),
    Command("rules", "rules", "rules_app", "Stall rules: validate and inspect.", group=True),
    Command("testbed", "testbed", "testbed_app", "Test beds on this machine: the network-namespace lab (root).", group=True),
)

BY_NAME = {command.name: command for command in COMMANDS}
