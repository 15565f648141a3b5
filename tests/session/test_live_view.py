"""The live view: a real terminal session (tmux, 100x32) recorded at three moments, pinned as
golden screens (numbers, times and paths normalized); and plain lines when stderr is not a
terminal. Regenerate the screens with UPDATE_GOLDEN=1 after a deliberate change."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
import time
from pathlib import Path

import pytest

from session_helpers import engine_pids, run_to_end, session_argv, sim_engine, write_deployment

GOLDEN = Path(__file__).parent / "golden"
OPTIONS = ["--launches", "1", "--depths", "0", "--requests", "3", "--max-tokens", "16",
           "--no-probe", "--format", "md"]


def normalize(screen: str, tmp: Path) -> str:
    text = screen.replace(str(tmp), "<TMP>")
    text = re.sub(r"\d+", "#", text)
    # the server's /metrics and stats lines differ between stand-ins: their warnings are not pinned
    lines = [re.sub(r"[ \t]+", " ", line).rstrip() for line in text.splitlines()
             if not line.startswith("Pane is dead") and "metrics" not in line
             and "stats line" not in line]
    while lines and not lines[-1]:
        lines.pop()
    return "\n".join(lines) + "\n"


class Tmux:
    def __init__(self, name: str) -> None:
        self.base = ["tmux", "-L", name]

    def __call__(self, *args: str) -> str:
        return subprocess.run([*self.base, *args], capture_output=True, text=True, check=True).stdout

    def screen(self, history: bool = False) -> str:
        """The visible pane, or with `history` everything it has shown (scrolled-off lines too)."""
        return self("capture-pane", "-p", *(["-S", "-"] if history else []), "-t", "main")

    def dead(self, timeout: float) -> bool:
        """Whether the pane's command has exited, waiting up to `timeout` seconds."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self("display-message", "-p", "-t", "main", "#{pane_dead}").strip() == "1":
                return True
            time.sleep(0.1)
        return False


def wait_screen(tmux: Tmux, needles: tuple[str, ...], timeout: float = 120) -> str:
    deadline = time.monotonic() + timeout
    screen = ""
    while time.monotonic() < deadline:
        screen = tmux.screen()
        if all(n in screen for n in needles):
            return screen
        time.sleep(0.1)
    raise AssertionError(f"screen never showed {needles}:\n{screen}")


def check_golden(name: str, text: str) -> None:
    # the two stand-ins print different startup lines: one set of screens each
    engine = "sim-vllm" if "sparktriage.sim.vllm" in " ".join(sim_engine()) else "simserve"
    path = GOLDEN / engine / name
    path.parent.mkdir(exist_ok=True)
    if os.environ.get("UPDATE_GOLDEN"):
        path.write_text(text, encoding="utf-8")
    assert text == path.read_text(encoding="utf-8"), f"{name} differs:\n{text}"


@pytest.fixture
def tmux(tmp_path):
    session = Tmux(f"sparktriage-test-{os.getpid()}")
    yield session
    subprocess.run([*session.base, "kill-server"], capture_output=True)


@pytest.mark.slow
def test_live_view_golden_screens(tmp_path, tmux):
    # six quiet seconds after the weights are loaded, 20 tok/s (the simulator as vllm serve
    # reads SPARKTRIAGE_SIM, the interim stand-in simserve.py the SIMSERVE_* knobs)
    deploy = write_deployment(tmp_path, env={
        "SIMSERVE_START_S": "6", "SIMSERVE_RATE": "20", "PYTHONUNBUFFERED": "1",
        "SPARKTRIAGE_SIM": json.dumps({"startup_s": {"post_load": 6}, "decode": {"rate_tok_s": 20}})})
    # a relative --out: the screens do not depend on the length of the temporary path
    argv = session_argv("run", str(deploy), "--out", "run", *OPTIONS)
    command = f"cd {shlex.quote(str(tmp_path))} && {shlex.join(argv)}; echo exit=$?"
    tmux("new-session", "-d", "-s", "main", "-x", "100", "-y", "32",
         "-e", f"PATH={os.environ['PATH']}", "-e", "TERM=xterm-256color", command)
    tmux("set-option", "-t", "main", "remain-on-exit", "on")
    loaded = "model-loaded" if "sparktriage.sim.vllm" in " ".join(sim_engine()) else "weights-loaded"
    startup = wait_screen(tmux, ("launch L001 (starting)", loaded))
    # the protocol step with a request measured: the golden (digits masked) is the same at any
    # count, and a loaded machine can pass request 1 between two looks (a fresh-clone run of
    # stop 30 never saw "1 requests")
    protocol = wait_screen(tmux, ("step protocol", "requests measured", "(ready)"))
    # everything the pane showed once its shell has exited: tmux's "Pane is dead" line (drawn a
    # moment after the exit, not always) may scroll the first line off the visible screen
    wait_screen(tmux, ("exit=",), timeout=180)
    assert tmux.dead(timeout=30), "the shell printed its exit status but the pane never died"
    done = tmux.screen(history=True)
    check_golden("startup.txt", normalize(startup, tmp_path))
    check_golden("protocol.txt", normalize(protocol, tmp_path))
    check_golden("done.txt", normalize(done, tmp_path))
    assert "exit=0" in done or "exit=1" in done
    assert engine_pids(str(tmp_path / "model-under-test")) == []


@pytest.mark.slow
def test_plain_lines_when_not_a_terminal(tmp_path):
    deploy = write_deployment(tmp_path)
    result = run_to_end(session_argv("run", str(deploy), "--out", str(tmp_path / "run"), *OPTIONS))
    assert result.returncode in (0, 1), result.stderr[-2000:]
    assert "\x1b[" not in result.stderr  # no cursor movement, no colour
    lines = result.stderr.splitlines()
    for expected in ("step launch-1", "launch L001 at depth 0 on local", "step protocol-1",
                     "step stalls-1", "step report"):
        assert any(line.startswith(expected) for line in lines), expected
    assert "L001 (launch-1, depth 0): done" in result.stdout
