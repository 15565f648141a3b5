"""Process exit statuses of every sparktriage command (documented in docs/exit-codes.md)."""

from __future__ import annotations

from enum import IntEnum

from sparktriage import errors


class ExitCode(IntEnum):
    """What the exit status of a command means."""

    OK = 0
    FINDINGS = errors.EXIT_FINDINGS  # garbage, a classified stall, a failed check
    USAGE = errors.EXIT_USAGE  # usage or input error
    UNREACHABLE = errors.EXIT_UNREACHABLE  # target could not be reached or launched
    INTERNAL = 70  # a bug in sparktriage (EX_SOFTWARE); --debug shows the traceback
    INTERRUPTED = 130  # Ctrl-C
