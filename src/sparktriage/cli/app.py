"""The `sparktriage` program: global options, lazy subcommands, the one error handler.

Commands are listed in `cli/registry.py`; `LazyGroup` imports a command's module only when the
command line names it, and lists the others from the registry's help texts.
"""

from __future__ import annotations

import importlib
import signal
import sys
import threading

from typer import _click as click  # typer vendors click; its types are what the group sees
import typer
import typer.core
import typer.main

from sparktriage import __version__
from sparktriage.cli import console
from sparktriage.cli.exit_codes import ExitCode
from sparktriage.cli.helpstyle import flag_default_false, restyle
from sparktriage.cli.registry import BY_NAME, COMMANDS
from sparktriage.errors import SparktriageError
from sparktriage.validation_words import plain_text


def _plain_help(group: typer.Typer) -> None:
    """One help style for groups too: no rich panels (the root's setting), in nested Typers."""
    group.rich_markup_mode = None
    group.pretty_exceptions_enable = False
    for info in getattr(group, "registered_groups", []):
        if info.typer_instance is not None:
            _plain_help(info.typer_instance)


def _release_archives() -> None:
    """Unpacked archives and held readers live as long as the command; the archive module is
    imported only by commands that open one (it costs --help tens of ms)."""
    archive = sys.modules.get("sparktriage.bundle.archive")
    if archive is not None:
        archive.release()


class LazyGroup(typer.core.TyperGroup):
    """The root group: commands come from the registry, each imported when first asked for."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return [command.name for command in COMMANDS]

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        entry = BY_NAME.get(name)
        if entry is None:
            return None
        target = getattr(importlib.import_module(f"sparktriage.cli.{entry.module}"), entry.attr)
        if entry.group:
            _plain_help(target)
            command = typer.main.get_group(target)
        else:
            single = typer.Typer(add_completion=False, pretty_exceptions_enable=False,
                                 rich_markup_mode=None)
            single.command(name=name)(target)
            command = typer.main.get_command(single)
        command.name = name
        restyle(command)
        _help_verbatim(command)
        return command

    def get_help_option(self, ctx: click.Context):
        return flag_default_false(super().get_help_option(ctx))

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = [(command.name, command.help) for command in COMMANDS]
        with formatter.section("Commands"):
            formatter.write_dl(rows)


app = typer.Typer(
    cls=LazyGroup,
    name="sparktriage",
    help="Diagnose vLLM deployments of large FP4 MoE models on GB10 / DGX Spark clusters.",
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)

_state: dict = {"debug": False}


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


def _exit_interrupted(own_process: bool, message: str | None = None) -> None:
    """Exit 130 (saying `message` first). In the script's own process a further Ctrl-C is ignored
    from here on: the first one's teardown is done, and a second (a user pressing twice, a signal
    that arrives while the message prints or the interpreter shuts down) must not turn exit 130
    into death by SIGINT."""
    if own_process and threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    if message:
        console.stderr.print(message, markup=False)
    sys.exit(ExitCode.INTERRUPTED)


def main(argv: list[str] | None = None) -> None:
    """Entry point of the `sparktriage` script: run a command and exit with its ExitCode."""
    try:
        _main(argv)
    except KeyboardInterrupt:  # a second Ctrl-C while the first one's exit was being handled
        _exit_interrupted(argv is None)
    finally:
        if argv is None:
            _clear_interpreter_interrupt_mark()


def _clear_interpreter_interrupt_mark() -> None:
    """Every KeyboardInterrupt is handled above (exit 130), but CPython (3.11 to 3.13) marks one
    that passed through the evaluation of source text, as the methods a dataclass or namedtuple
    generates while a module is imported, as unhandled even though a caller caught it; under
    `python -m sparktriage` the interpreter then ends the process by SIGINT (-2) instead of with
    the exit status chosen here (a Ctrl-C landing on a lazy import did that in
    tests/session/test_interrupt.py). Evaluating a constant source text resets that mark."""
    eval("None")  # noqa: S307 - a constant, never input


class _HelpContext(click.Context):
    """A command's context whose help is printed as written: help text is the tool's own words,
    never an input, and the console's scrubber would take an example such as "Bearer token"
    for a secret."""

    def get_help(self) -> str:
        from sparktriage.redact import stream as redacting_stream

        with redacting_stream.verbatim():  # a help formatter that prints itself
            return redacting_stream.written_verbatim(super().get_help())  # or click echoes it


def _help_verbatim(command: click.Command) -> None:
    """Every command of the tree prints its help verbatim (_HelpContext)."""
    command.context_class = _HelpContext
    for sub in getattr(command, "commands", {}).values():
        _help_verbatim(sub)


def _main(argv: list[str] | None) -> None:
    args = list(sys.argv[1:] if argv is None else argv)
    _state["debug"] = "--debug" in args
    console.set_argv(args)
    from sparktriage.redact import stream as redacting_stream

    redacting_stream.install()  # every line printed from here on is scrubbed (redact/stream.py)
    _interrupt_on_termination()
    command = typer.main.get_command(app)
    _help_verbatim(command)
    try:
        try:
            result = command.main(args=args, prog_name="sparktriage", standalone_mode=False)
        finally:
            _release_archives()
    except typer.Abort as exc:
        if isinstance(exc.__cause__, EOFError):  # click turns an EOFError into Abort: input ended
            console.stderr.print("error: input ended unexpectedly (truncated file or stream: "
                                 f"{exc.__cause__ or 'end of file'})", markup=False)
            sys.exit(ExitCode.USAGE)
        _exit_interrupted(argv is None, "interrupted")
    except typer.Exit as exc:
        if exc.exit_code == ExitCode.INTERRUPTED:
            _exit_interrupted(argv is None)
        sys.exit(exc.exit_code)
    except typer.TyperException as exc:  # usage errors of the command-line parser
        if type(exc).__name__ == "NoArgsIsHelpError":  # bare `sparktriage`: show the help
            with redacting_stream.verbatim():
                console.stderr.print(exc.format_message(), markup=False)
            sys.exit(ExitCode.USAGE)
        message = plain_text(" ".join(exc.format_message().split()))
        ctx = getattr(exc, "ctx", None)
        where = ctx.command_path if ctx is not None and ctx.command_path else "sparktriage"
        console.stderr.print(f"error: {message} (see {where} --help)", markup=False)
        sys.exit(ExitCode.USAGE)
    except KeyboardInterrupt:
        _exit_interrupted(argv is None, "interrupted")
    except SparktriageError as exc:
        if _state["debug"]:
            console.stderr.print_exception()
        console.stderr.print(f"error: {exc.one_line()}", markup=False)
        sys.exit(exc.exit_code)
    except RecursionError:  # input nested past a reader's bound that no reader caught
        console.stderr.print("error: input nested too deeply (see docs/limits.md)", markup=False)
        sys.exit(ExitCode.USAGE)
    except Exception as exc:  # a bug: say so in one line unless --debug asks for the traceback
        if _state["debug"]:
            console.stderr.print_exception()
        console.stderr.print(
            f"internal error: {type(exc).__name__}: {exc} (rerun with --debug for a traceback)",
            markup=False,
        )
        sys.exit(ExitCode.INTERNAL)
    sys.exit(int(result or 0))
