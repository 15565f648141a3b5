"""A second Ctrl-C while the command is already exiting for the first one (its message printing,
the interpreter shutting down) still exits 130, not by SIGINT (cli/app.py `_exit_interrupted`):
the script's entry point run in a child process whose command raises KeyboardInterrupt and whose
"interrupted" line sends the process a second SIGINT while it prints."""

from __future__ import annotations

import subprocess
import sys
import textwrap

SCRIPT = textwrap.dedent("""
    import os, signal, sys, time
    from sparktriage.cli import app

    class Interrupted:
        def main(self, **_):
            raise KeyboardInterrupt

    printed = app.console.stderr.print
    def print_and_get_another(*args, **kwargs):
        os.kill(os.getpid(), signal.SIGINT)  # the second Ctrl-C, while the first one's line prints
        time.sleep(0.2)
        return printed(*args, **kwargs)

    app.console.stderr.print = print_and_get_another
    app.typer.main.get_command = lambda _app: Interrupted()
    sys.argv = ["sparktriage", "session", "run"]
    app.main()
""")


def test_a_second_ctrl_c_during_the_exit_still_exits_130():
    done = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=60)
    assert done.returncode == 130, (done.returncode, done.stderr[-2000:])
    assert "interrupted" in done.stderr
    assert "Traceback" not in done.stderr




UNDER_M = textwrap.dedent("""
    import sys
    from sparktriage.cli import app

    class InterruptedInGeneratedCode:
        def main(self, **_):  # a Ctrl-C landing while a dataclass generates its methods
            exec("raise KeyboardInterrupt")

    app.typer.main.get_command = lambda _app: InterruptedInGeneratedCode()
    sys.argv = ["sparktriage", "session", "run"]
    app.main()
""")


def test_an_interrupt_inside_generated_code_still_exits_130_under_python_m(tmp_path):
    """CPython marks a KeyboardInterrupt that left evaluated source text (the methods a
    dataclass generates during a lazy import) as unhandled even when it was caught, and under
    `python -m` the process then died by SIGINT (-2) instead of exiting 130
    (tests/session/test_interrupt.py met it when its Ctrl-C landed on the report's imports)."""
    (tmp_path / "entry_under_m.py").write_text(UNDER_M, encoding="utf-8")
    done = subprocess.run([sys.executable, "-m", "entry_under_m"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 130, (done.returncode, done.stderr[-2000:])
    assert "interrupted" in done.stderr and "Traceback" not in done.stderr
