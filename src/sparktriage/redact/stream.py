"""Terminal output through the redaction stage: a text stream that scrubs what it passes on.

`install()` wraps `sys.stdout` and `sys.stderr` for the rest of the process (the CLI calls it
first thing), so every line a command prints (rich, typer, print, warnings) goes through this
run's stand-ins (run.py). Whole lines are scrubbed as they complete, with a key-block state of
their own per stream, so a private key printed over several lines is replaced from BEGIN to END;
a partial line is scrubbed when the stream is flushed. Text written inside `verbatim()`, or
registered with `written_verbatim` and written whole, is the tool's own (its help): it passes
unscrubbed, so an example such as "Bearer token" is never replaced.
"""

from __future__ import annotations

import io
import sys
from contextlib import contextmanager

from sparktriage.redact import run
from sparktriage.redact.detect import SecretScrubber


class RedactingStream(io.TextIOBase):
    """Wraps a text stream; writes pass through the secret scrubber line by line."""

    def __init__(self, inner) -> None:
        super().__init__()
        self.inner = inner
        self._pending = ""
        self._scrubber = SecretScrubber(run.book())

    # what callers look at on sys.stdout
    @property
    def encoding(self):  # type: ignore[override]
        return getattr(self.inner, "encoding", "utf-8")

    @property
    def errors(self):  # type: ignore[override]
        return getattr(self.inner, "errors", "strict")

    @property
    def buffer(self):
        return self.inner.buffer  # raw bytes (archives to stdout) are not text

    def isatty(self) -> bool:
        return self.inner.isatty()

    def fileno(self) -> int:
        return self.inner.fileno()

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        if _verbatim_depth or (text.rstrip("\n") in _verbatim_texts and text.strip()):
            self.flush()
            self.inner.write(text)
            return len(text)
        self._pending += text
        if "\n" in self._pending:
            head, _, self._pending = self._pending.rpartition("\n")
            self.inner.write("".join(self._scrubber.scrub(line) + "\n"
                                     for line in head.split("\n")))
        return len(text)

    def flush(self) -> None:
        if self._pending:
            self.inner.write(self._scrubber.scrub(self._pending))
            self._pending = ""
        self.inner.flush()


def unscrubbed(stream):
    """The stream under a RedactingStream (for text already redacted as a typed document,
    such as `--json -`, which line scrubbing could only damage), else the stream itself."""
    return stream.inner if isinstance(stream, RedactingStream) else stream


_verbatim_depth = 0
_verbatim_texts: set[str] = set()


def written_verbatim(text: str) -> str:
    """Let `text` (the tool's own, such as a command's help) pass unscrubbed when it is written
    whole later; return it."""
    _verbatim_texts.add(text.rstrip("\n"))
    return text


@contextmanager
def verbatim():
    """Inside: what is written passes unscrubbed (the tool's own text, never an input's)."""
    global _verbatim_depth
    for stream in (sys.stdout, sys.stderr):
        if isinstance(stream, RedactingStream):
            stream.flush()
    _verbatim_depth += 1
    try:
        yield
    finally:
        _verbatim_depth -= 1


def install() -> None:
    """Route sys.stdout and sys.stderr through the scrubber (once)."""
    for name in ("stdout", "stderr"):
        current = getattr(sys, name)
        if current is not None and not isinstance(current, RedactingStream):
            setattr(sys, name, RedactingStream(current))


__all__ = ["RedactingStream", "install", "unscrubbed", "verbatim", "written_verbatim"]
