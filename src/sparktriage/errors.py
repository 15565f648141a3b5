"""The one exception root of sparktriage and its families.

Every error the user can cause or meet carries a one-line message, an optional location
(file:line) and an optional hint. `cli/` catches `SparktriageError` in one place and maps
`exit_code` to the process exit status (see `cli/exit_codes.py` and docs/exit-codes.md).
Anything else that escapes is a bug and is shown with a traceback only under `--debug`.
"""

from __future__ import annotations

from dataclasses import dataclass

# Exit statuses, mirrored by cli.exit_codes.ExitCode; kept as plain ints here so that the core
# does not import the CLI layer.
EXIT_FINDINGS = 1
EXIT_USAGE = 2
EXIT_UNREACHABLE = 3


@dataclass(frozen=True)
class SourceLocation:
    """Where in an input file an error was found (1-based line, optional column)."""

    path: str
    line: int | None = None
    column: int | None = None

    def __str__(self) -> str:
        text = self.path
        if self.line is not None:
            text += f":{self.line}"
            if self.column is not None:
                text += f":{self.column}"
        return text


class SparktriageError(Exception):
    """Root of every error sparktriage reports to the user as one line."""

    exit_code: int = EXIT_USAGE

    def __init__(
        self, message: str, *, hint: str | None = None, location: SourceLocation | None = None
    ) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint
        self.location = location

    def one_line(self) -> str:
        """The message as printed: `location: message (hint)` on one line."""
        text = self.message.replace("\n", " ").strip()
        if self.location is not None:
            text = f"{self.location}: {text}"
        if self.hint:
            text = f"{text} (hint: {self.hint})"
        return text


class UsageError(SparktriageError):
    """Bad command-line usage: conflicting or missing options."""


class InputError(SparktriageError):
    """A file or document given by the user is missing, unreadable or malformed."""


class ConfigError(InputError):
    """A configuration file failed validation; `errors` holds every problem found."""

    def __init__(self, message: str, *, errors: list[str] | None = None, **kwargs) -> None:
        super().__init__(message, **kwargs)
        self.errors = errors or []


class EndpointError(SparktriageError):
    """The target server could not be reached, or it does not speak the expected protocol."""

    exit_code = EXIT_UNREACHABLE


class LaunchError(SparktriageError):
    """A server or node could not be launched, or did not become ready in time."""

    exit_code = EXIT_UNREACHABLE
