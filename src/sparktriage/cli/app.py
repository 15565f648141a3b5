"""The `sparktriage` program: global options, subcommand registration, the one error handler."""

from __future__ import annotations

import signal
import sys
import threading

import typer
import typer.main

from sparktriage import __version__
from sparktriage.cli import console
from sparktriage.cli.exit_codes import ExitCode
from sparktriage.errors import SparktriageError

app = typer.Typer(
    name="sparktriage",
    help="Diagnose vLLM deployments of large FP4 MoE models on GB10 / DGX Spark clusters.",
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)

_state: dict = {"debug": False, "argv": []}


def invoked_argv() -> list[str]:
    """The arguments of this invocation (after the program name), as given to `main()`."""
    return list(_state["argv"])


def _version(value: bool) -> None:
    if value:
        typer.echo(f"sparktriage {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    debug: bool = typer.Option(False, "--debug", help="Show tracebacks for errors."),
    version: bool = typer.Option(
        False, "--version", callback=_version, is_eager=True, help="Print the version and exit."
    ),
) -> None:
    """Diagnose vLLM deployments of large FP4 MoE models on GB10 / DGX Spark clusters."""
    _state["debug"] = debug


def _register() -> None:
    # Each command lives in its own module; importing it registers it on `app`.
    from sparktriage.cli import bench, collect, demo, launch, logs, probe, rules, simulate, stalls  # noqa: F401
    from sparktriage.cli import report, selfcheck, sweep, verify  # noqa: F401


TERMINATION_SIGNALS = (signal.SIGTERM, signal.SIGHUP)


def _raise_interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt(signal.Signals(signum).name)


def _interrupt_on_termination() -> None:
    """SIGTERM and SIGHUP (a stopped job, a closed terminal) end a command the way Ctrl-C does:
    whatever it started is torn down and what it measured is kept (exit 130). Signals the
    parent chose to ignore (nohup) stay ignored."""
    if threading.current_thread() is not threading.main_thread():
        return
    for sig in TERMINATION_SIGNALS:
        if signal.getsignal(sig) == signal.SIG_DFL:
            signal.signal(sig, _raise_interrupt)


def main(argv: list[str] | None = None) -> None:
    """Entry point of the `sparktriage` script: run a command and exit with its ExitCode."""
    args = list(sys.argv[1:] if argv is None else argv)
    _state["debug"] = "--debug" in args
    _state["argv"] = args
    _register()
    _interrupt_on_termination()
    command = typer.main.get_command(app)
    try:
        result = command.main(args=args, prog_name="sparktriage", standalone_mode=False)
    except typer.Exit as exc:
        sys.exit(exc.exit_code)
    except typer.Abort:
        console.stderr.print("interrupted", markup=False)
        sys.exit(ExitCode.INTERRUPTED)
    except typer.TyperException as exc:  # usage errors of the command-line parser
        if type(exc).__name__ == "NoArgsIsHelpError":  # bare `sparktriage`: show the help
            console.stderr.print(exc.format_message(), markup=False)
            sys.exit(ExitCode.USAGE)
        message = " ".join(exc.format_message().split())
        console.stderr.print(f"error: {message} (see sparktriage --help)", markup=False)
        sys.exit(ExitCode.USAGE)
    except KeyboardInterrupt:
        console.stderr.print("interrupted", markup=False)
        sys.exit(ExitCode.INTERRUPTED)
    except SparktriageError as exc:
        if _state["debug"]:
            console.stderr.print_exception()
        console.stderr.print(f"error: {exc.one_line()}", markup=False)
        sys.exit(exc.exit_code)
    except Exception as exc:  # a bug: say so in one line unless --debug asks for the traceback
        if _state["debug"]:
            console.stderr.print_exception()
        console.stderr.print(
            f"internal error: {type(exc).__name__}: {exc} (rerun with --debug for a traceback)",
            markup=False,
        )
        sys.exit(ExitCode.INTERNAL)
    sys.exit(int(result or 0))
