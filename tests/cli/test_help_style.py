"""Every command's `--help` in one style, usage errors that point to the right help, lazy loading.

Walks the registered commands (cli/registry.py) as click builds them, so a command added later
is held to the same rules without a new test.
"""

from __future__ import annotations

import re
import subprocess
import sys

import pytest
import typer.main

from sparktriage.cli.app import app
from sparktriage.cli.registry import COMMANDS

UNITS = re.compile(r"\b(seconds?|tokens?|requests?|launches?|minutes?|microseconds?|MB/s|bytes|port|"
                   r"depths?|year|seed|in flight|replicates|per workload|PID|count)\b", re.I)


def _commands():
    root = typer.main.get_command(app)
    for entry in COMMANDS:
        command = root.get_command(None, entry.name)
        subs = getattr(command, "commands", None)
        if subs:
            for name, sub in subs.items():
                yield f"{entry.name} {name}", sub
        else:
            yield entry.name, command


CASES = list(_commands())


def test_every_registered_command_builds():
    names = {name.split()[0] for name, _ in CASES}
    assert names == {entry.name for entry in COMMANDS}
    assert len(CASES) >= 12


@pytest.mark.parametrize("name,command", CASES, ids=[name for name, _ in CASES])
def test_options_follow_one_style(name, command):
    for param in command.params:
        if param.param_type_name == "argument":
            assert param.metavar and param.metavar == param.metavar.upper(), (name, param.name)
            continue
        if getattr(param, "is_flag", False) or param.opts == ["--help"]:
            continue
        assert param.metavar and param.metavar.upper() == param.metavar, (name, param.opts)
        if "--json" in param.opts:
            assert param.metavar == "PATH|-"
        text = param.help or ""
        assert text, f"{name} {param.opts[0]} has no help"
        # a default is written once, as [default: ...] (typer's, or ours for computed ones)
        last = re.search(r"\[([^\[\]]+)\]\W*$", text)
        assert not last or last.group(1).startswith(("default:", "x")), (name, param.opts, text)
        kind = type(getattr(param, "type", None)).__name__.lower()
        numeric = param.metavar in ("N", "SECONDS", "NUMBER") or "int" in kind or "float" in kind
        if numeric:
            assert UNITS.search(text), f"{name} {param.opts[0]}: no unit in {text!r}"


@pytest.mark.parametrize("argv,where", [
    (["bench", "--requests", "x"], "sparktriage bench --help"),
    (["probe", "--timeout", "0"], "sparktriage probe --help"),
    (["logs", "--bogus"], "sparktriage logs --help"),
])
def test_usage_errors_point_to_the_command_help_in_plain_words(argv, where):
    done = subprocess.run([sys.executable, "-m", "sparktriage", *argv], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ")
    assert where in lines[0]
    assert "Input should be" not in done.stderr and "pydantic" not in done.stderr


# pydantic: typer coerces an unset bool `--help` through a pydantic adapter unless its default is
# False (cli/helpstyle.flag_default_false); importing it costs `X --help` about 0.13 s of CPU.
HEAVY = ("pydantic", "numpy", "httpx", "matplotlib", "reportlab", "psutil", "yaml", "prometheus_client",
         "cryptography", "sparktriage.bench.protocol", "sparktriage.logs.parser",
         "sparktriage.report.build", "sparktriage.stalls.analyze", "sparktriage.probe.runner")


@pytest.mark.parametrize("argv", [["--help"]] + [[*name.split(), "--help"] for name, _ in CASES])
def test_help_loads_no_core_machinery(argv):
    code = ("import sys\nfrom sparktriage.cli.app import main\n"
            f"try:\n    main({argv!r})\nexcept SystemExit as exc:\n    code = exc.code\n"
            f"print([m for m in {HEAVY!r} if m in sys.modules], code, file=sys.stderr)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120)
    assert done.stderr.strip().splitlines()[-1] == "[] 0", done.stderr


@pytest.mark.parametrize("argv", [["bench", "--help"], ["probe", "--help"], ["selfcheck", "--help"],
                                  ["bench"]])
def test_help_is_printed_as_written_never_redacted(argv):
    """The console scrubs every line for secrets; help text is the tool's own and passes as
    written ("Bearer token." would otherwise print as a redacted bearer token)."""
    done = subprocess.run([sys.executable, "-m", "sparktriage", *argv], capture_output=True,
                          text=True, timeout=120)
    out = done.stdout + done.stderr
    assert "REDACTED" not in out
    if "--help" in argv:
        assert done.returncode == 0 and "Bearer token." in out


def test_a_secret_printed_outside_help_is_still_scrubbed(capsys):
    """The help exemption is for the help text itself: any other line is scrubbed."""
    import io

    from sparktriage.redact.stream import RedactingStream, written_verbatim

    inner = io.StringIO()
    stream = RedactingStream(inner)
    written_verbatim("Usage: x\n  --api-key  Bearer token.")
    stream.write("Usage: x\n  --api-key  Bearer token.\n")
    stream.write("Authorization: Bearer eyQ9fake-bearer-token-123456\n")
    stream.flush()
    assert "Bearer token." in inner.getvalue()
    assert "eyQ9fake-bearer-token-123456" not in inner.getvalue()
