"""The session's live view on stderr: a rich panel redrawn twice a second on a terminal,
plain progress lines otherwise. Draws `sparktriage.session.live.LiveState`; no logic here."""

from __future__ import annotations

import time

from rich.console import Group
from rich.live import Live
from rich.table import Table
from rich.text import Text

from sparktriage.cli import console
from sparktriage.cli.progress import session_progress
from sparktriage.session.live import LiveState, cause_text


def clock(seconds: float | None) -> str:
    if seconds is None:
        return "?"
    seconds = max(0, int(seconds))
    return f"{seconds // 3600}:{seconds % 3600 // 60:02d}:{seconds % 60:02d}"


def render(state: LiveState, now: float | None = None) -> Group:
    """The panel for `state` at `now`."""
    now = time.time() if now is None else now
    head = Text(f"session  step {state.step} ({state.step_kind})", style="bold")
    lines = [head, Text(f"elapsed {clock(state.elapsed_s(now))}   estimated left "
                        f"{clock(state.estimate_left_s)}   launches {state.launches_done} done, "
                        f"{max(state.launches_planned - state.launches_done, 0)} left"
                        + (f"   sweep leader: {state.leader}" if state.leader else ""))]
    if state.launch:
        table = Table(title=f"launch {state.launch}" + (" (ready)" if state.ready else " (starting)"),
                      title_justify="left", expand=False)
        for column in ("node", "phase", "quiet", "probable stall cause"):
            table.add_column(column)
        for name, view in sorted(state.nodes.items()):
            quiet = f"{now - view.last_line:.0f} s" if view.last_line else "-"
            table.add_row(name, view.phase, quiet, view.cause or "-")
        lines.append(table)
    if state.requests_total:
        rate = f"{state.rate_tok_s:.1f} tok/s" if state.rate_tok_s else "-"
        lines.append(Text(f"protocol: {state.requests_done} requests measured, {state.tokens} "
                          f"tokens, last {rate}"))
    if state.last_message:
        lines.append(Text(state.last_message, style="yellow"))
    return Group(*lines)


class LiveView:
    """Observer for the runner: a live panel on a terminal, plain lines elsewhere."""

    def __init__(self, tty: bool | None = None) -> None:
        self.state = LiveState()
        self.tty = console.stderr.is_terminal if tty is None else tty
        self._live: Live | None = None

    def __enter__(self) -> "LiveView":
        if self.tty:
            self._live = Live(get_renderable=lambda: render(self.state), console=console.stderr,
                              refresh_per_second=2, transient=False, redirect_stderr=False)
            self._live.start()
        return self

    def __exit__(self, *exc) -> None:
        if self._live is not None:
            self._live.stop()

    def __call__(self, event: str, details: dict) -> None:
        self.state.apply(event, details)
        if self.tty:
            if event == "warning":
                self._live.console.print(f"warning: {details['text']}", markup=False, style="yellow")
            return
        plain(event, details)


def plain(event: str, details: dict) -> None:
    """The plain-line form of one event."""
    if event == "session-step":
        left = details.get("estimate_left_s")
        console.info(f"step {details['id']}" + (f" (about {clock(left)} of lab time left)"
                                                if left is not None else ""))
    elif event == "session-launch":
        console.info(f"launch {details['label']} at depth {details['depth']} on "
                     f"{', '.join(details.get('nodes') or [])}")
    elif event == "live-stall":
        console.warn(f"[{details['node']}] live: {details['kind']} in {details['phase']}, "
                     f"{details['duration_s']:.0f} s, probable cause {cause_text(details)} "
                     f"({details['confidence']:.2f})")
    elif event == "sweep-leader":
        console.info(f"sweep leader: {details['text']}")
    elif event == "session-note":
        console.info(details["text"])
    elif event in ("line", "session-launch-done"):
        return
    else:
        session_progress(event, details)
