"""The hostile corpus of the bounds (docs/limits.md): every case runs the CLI as a user does,
under a 1 GiB address-space cap (RLIMIT_AS, what `prlimit --as` sets), and must end with a
documented exit (0, 1 or 2), at most one `error:` line, no traceback, within its time bound,
with no canary file created, no connection tried (each is refused and recorded) and nothing
written outside `--out`.

Each case is built from a few bytes (a doubling script, a long line, a big MANIFEST, a log
across New Year...); each failed on the tree before its bound was added (MemoryError, exit 70,
a line echoed, a million lines printed, a 672-day stall, a float node count).
"""

from __future__ import annotations

import datetime as dt
import json
import os
import re
import resource
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import pytest

from hardening_cli import REPO

CAP = 1 << 30
FIXTURE_LOG = REPO / "tests" / "fixtures" / "logs" / "vllm-cpu-startup.log"
GB10_ENV = REPO / "tests" / "reproduce" / "inputs" / "gb10.collect-env.txt"


# the CLI in a fresh process under the cap, every socket connection refused and recorded (in
# the file CONNECT_LOG names), its peak memory written last on stderr (VmHWM, the peak of this
# program's own memory: ru_maxrss would carry the forking test worker's size over the exec)
_CAPPED = ("import os, resource, runpy, socket, sys\n"
           "resource.setrlimit(resource.RLIMIT_AS, (%d, %d))\n"
           "def refuse(sock, *args, **kwargs):\n"
           "    with open(os.environ['CONNECT_LOG'], 'a') as fh:\n"
           "        fh.write(repr(args) + '\\n')\n"
           "    raise OSError('no connection may be made')\n"
           "socket.socket.connect = socket.socket.connect_ex = refuse\n"
           "sys.argv = ['sparktriage'] + sys.argv[1:]\n"
           "try:\n"
           "    runpy.run_module('sparktriage', run_name='__main__', alter_sys=True)\n"
           "finally:\n"
           "    peak = next(int(line.split()[1]) for line in open('/proc/self/status')\n"
           "                if line.startswith('VmHWM:'))\n"
           "    sys.stderr.write('\\npeak-kib=%%d\\n' %% peak)\n") % (CAP, CAP)


@dataclass
class Ran:
    code: int
    out: str
    err: str
    seconds: float
    peak_mib: float


def run_capped(argv: list[str], cwd: Path, limit: float) -> Ran:
    """`sparktriage ARGV` under the memory cap, HOME inside the case folder; every socket
    connection it tries is refused and recorded beside the folder."""
    env = {**os.environ, "HOME": str(cwd / "home"), "COLUMNS": "200", "TZ": "UTC",
           "CONNECT_LOG": str(cwd.parent / f"{cwd.name}.connections")}
    start = time.monotonic()
    done = subprocess.run([sys.executable, "-c", _CAPPED, *argv], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=limit * 4 + 30)
    err, _, peak = done.stderr.rpartition("\npeak-kib=")
    return Ran(done.returncode, done.stdout, err, time.monotonic() - start,
               int(peak.strip()) / 1024)


def _tree(folder: Path, skip: str) -> dict[str, tuple[int, int]]:
    return {str(p.relative_to(folder)): (p.lstat().st_size, p.lstat().st_mtime_ns)
            for p in folder.rglob("*") if not str(p.relative_to(folder)).startswith(skip)}


# -- the inputs ---------------------------------------------------------------------------------

def _bash_square(d: Path) -> list[str]:
    (d / "run.sh").write_text("A=" + "x" * 32 + "\n" + "A=${A//x/$A}\n" * 3
                              + "vllm serve /m\ntouch canary\n")
    return ["reproduce", "run.sh", "--out", "out", "--no-capture"]


def _bash_array(d: Path) -> list[str]:
    (d / "run.sh").write_text('A=(a b)\n' + 'A=("${A[@]}" "${A[@]}")\n' * 40
                              + "vllm serve /m\ntouch canary\n")
    return ["reproduce", "run.sh", "--out", "out", "--no-capture"]


def _make_doubling(d: Path) -> list[str]:
    (d / "Makefile").write_text("A := xx\n" + "A := $(A)$(A)\n" * 40
                                + "serve:\n\tvllm serve /m --served-model-name $(A)\n"
                                "\ttouch canary\n")
    return ["reproduce", "Makefile", "--out", "out", "--no-capture"]


def _make_fan_out(d: Path) -> list[str]:
    # lazy `=` variables a hundred references wide, seven deep: 10**14 references to nothing
    (d / "Makefile").write_text("A0 =\n" + "".join(f"A{i} = " + f"$(A{i - 1})" * 100 + "\n"
                                                   for i in range(1, 8))
                                + "serve:\n\tvllm serve /m --served-model-name $(A7)\n")
    return ["reproduce", "Makefile", "--out", "out", "--no-capture"]


def _long_option_value(d: Path) -> list[str]:
    # a 200 KB value (under the line limit) where a number belongs: named, cut, not echoed
    (d / "run.sh").write_text("vllm serve /m -tp " + "SECRETLINE" * 20_000 + "\n")
    return ["reproduce", "run.sh", "--out", "out", "--no-capture"]


def _paste_12k_prompts(d: Path) -> list[str]:
    # each typed command is an unknowns row, each row redacted and printed: 12,000 of them
    (d / "paste.txt").write_text("u@spark-01:~$ nvidia-smi\n" * 12_000
                                 + "u@spark-01:~$ vllm serve /m\ntouch canary\n")
    return ["reproduce", "paste.txt", "--out", "out", "--no-capture"]


def _just_doubling(d: Path) -> list[str]:
    (d / "justfile").write_text('a := "xx"\n' + "a := a + a\n" * 40
                                + "serve:\n    vllm serve /m --served-model-name {{a}}\n")
    return ["reproduce", "justfile", "--out", "out", "--no-capture"]


def _long_script_line(d: Path) -> list[str]:
    (d / "run.sh").write_text("touch canary\nvllm serve /m --served-model-name "
                              + "SECRETLINE" * (1 << 17) + "\n")
    return ["reproduce", "run.sh", "--out", "out", "--no-capture"]


def _long_make_line(d: Path) -> list[str]:
    (d / "Makefile").write_text("A = 1\n" + "SECRETLINE" * (1 << 17) + ":\n"
                                "\tvllm serve /m\n")
    return ["reproduce", "Makefile", "--out", "out", "--no-capture"]


def _long_exec_start(d: Path) -> list[str]:
    (d / "vllm.service").write_text("[Unit]\nDescription=vllm\n[Service]\nExecStart=/usr/bin/vllm "
                                    "serve /m --served-model-name " + "SECRETLINE" * 30_000
                                    + "\n")
    return ["reproduce", "vllm.service", "--out", "out", "--no-capture"]


def _continued_exec_start(d: Path) -> list[str]:
    # short physical lines, one 300 KiB logical line: systemd joins them
    body = " \\\n".join(["SECRETLINE" * 10] * 3000)
    (d / "vllm.service").write_text("[Service]\nExecStart=/usr/bin/vllm serve /m " + body + "\n")
    return ["reproduce", "vllm.service", "--out", "out", "--no-capture"]


def _long_env_file_line(d: Path) -> list[str]:
    (d / "compose.yaml").write_text("services:\n  vllm:\n    image: vllm/vllm-openai:v0.32.0\n"
                                    "    env_file: vllm.env\n    command: vllm serve /m\n")
    (d / "vllm.env").write_text("A=1\nB=" + "SECRETLINE" * 30_000 + "\n")
    return ["reproduce", "compose.yaml", "--out", "out", "--no-capture"]


def _manifest(d: Path, lines: int, path: bytes) -> list[str]:
    (d / "report").mkdir()
    (d / "report" / "MANIFEST").write_bytes((b"0" * 64 + b"  " + path + b"\n") * lines)
    (d / "report" / "MANIFEST.sig").write_text("not a signature\n")
    return ["verify", "report"]


def new_year_log(text: str) -> str:
    """The startup fixture moved to straddle New Year, and a `02-29` line (a node whose clock
    is wrong) after the first lines of the new year."""
    stamp = re.compile(r"( |[WEIF])(\d\d)-?(\d\d) (\d\d):(\d\d):(\d\d)")
    first = None
    out, new = [], 0
    for line in text.splitlines():
        m = stamp.search(line)
        if m:
            t = int(m.group(4)) * 3600 + int(m.group(5)) * 60 + int(m.group(6))
            first = t if first is None else first
            t = t - first + 23 * 3600 + 59 * 60 + 50
            day = "12-31" if t < 86400 else "01-01"
            t %= 86400
            sep = "-" if m.group(1) == " " else ""
            line = (line[:m.start()] + m.group(1) + day.replace("-", sep)
                    + f" {t // 3600:02d}:{t % 3600 // 60:02d}:{t % 60:02d}" + line[m.end():])
            if day == "01-01":
                new += 1
                if new == 3:
                    out.append(line)
                    line = line[:m.start()] + " 02-29 00:00:30 [clock.py:1] a wrong clock"
        out.append(line)
    return "\n".join(out) + "\n"


def _new_year(d: Path) -> Path:
    path = d / "newyear.log"
    path.write_text(new_year_log(FIXTURE_LOG.read_text()))
    # the year is inferred from the file's time: written just after New Year 2026 (a year
    # that is not a leap year, as neither is 2027)
    moment = dt.datetime(2026, 1, 1, 0, 5, tzinfo=dt.timezone.utc).timestamp()
    os.utime(path, (moment, moment))
    return path


def _compose_include(d: Path) -> list[str]:
    (d / "in").mkdir()
    (d / "outside.yaml").write_text("services:\n  evil:\n    image: x\n    command: touch canary\n")
    (d / "in" / "other.yaml").write_text("services:\n  side:\n    image: x\n")
    (d / "in" / "link.yaml").symlink_to(d / "outside.yaml")
    (d / "in" / "compose.yaml").write_text(
        "include:\n  - other.yaml\n  - ../outside.yaml\n  - /etc/passwd\n  - path: [link.yaml]\n"
        "services:\n  vllm:\n    image: vllm/vllm-openai:v0.32.0\n    command: vllm serve /m\n")
    return ["reproduce", "in/compose.yaml", "--out", "out", "--no-capture"]


def _compose_nul_paths(d: Path) -> list[str]:
    # YAML's "\0" escape in the names of files compose would read: no such file, no crash
    (d / "compose.yaml").write_text('include:\n  - "a\\0b"\nservices:\n  vllm:\n    image: x\n'
                                    '    env_file: "c\\0d"\n    command: vllm serve /m\n')
    return ["reproduce", "compose.yaml", "--out", "out", "--no-capture"]


def _huge_tp(d: Path) -> list[str]:
    (d / "run.sh").write_text(f"vllm serve /m -tp {10 ** 29}\n")
    (d / "lab.yaml").write_text(json.dumps({"schema_version": 1, "name": "gb10x2", "nodes": [
        {"name": f"spark-0{i}", "host": f"192.0.2.1{i}", "ssh": f"spark-0{i}", "gpu": "gb10"}
        for i in (1, 2)]}))
    return ["reproduce", "run.sh", "--lab", "lab.yaml", "--out", "out", "--no-capture"]


def _huge_tp_no_lab(d: Path) -> list[str]:
    (d / "run.sh").write_text(f"vllm serve /m -tp {10 ** 29}\n")
    (d / "gb10.collect-env.txt").write_bytes(GB10_ENV.read_bytes())
    return ["reproduce", "run.sh", "gb10.collect-env.txt", "--out", "out", "--no-capture"]


@dataclass
class Case:
    build: Callable[[Path], list[str]]
    exit: int
    says: str  # in the one error line (exit 2) or in stdout
    seconds: float = 20.0


CASES = {
    "bash-replace-squares": Case(_bash_square, 2, "run.sh:4: a value the script builds "
                                 "(expanded) exceeds the limit of 1 MiB per value (the "
                                 "expansion budget)"),
    "bash-array-doubles": Case(_bash_array, 2, "exceeds the limit of 65536 items (the "
                               "expansion budget)"),
    "make-self-doubling": Case(_make_doubling, 2, "exceeds the limit of 1 MiB per value (the "
                               "expansion budget)"),
    "make-fan-out": Case(_make_fan_out, 2, "Makefile:10: the number of variable references "
                         "expanded exceeds the limit of 100000 references"),
    "option-value-200KB": Case(_long_option_value, 2, "-tp 'SECRETLINESE"),
    "paste-12k-prompts": Case(_paste_12k_prompts, 2, "paste.txt:10001: the number of commands "
                              "the script runs exceeds the limit of 10000 commands"),
    "just-self-doubling": Case(_just_doubling, 2, "exceeds the limit of 1 MiB per value (the "
                               "expansion budget)"),
    "script-line-1MiB": Case(_long_script_line, 2, "run.sh:2: a line exceeds the limit of "
                             "256 KiB"),
    "make-target-line-1MiB": Case(_long_make_line, 2, "Makefile:2: a line exceeds the limit of "
                                  "256 KiB"),
    "exec-start-300KiB": Case(_long_exec_start, 2, "vllm.service:4: a line exceeds the limit "
                              "of 256 KiB"),
    "exec-start-continued": Case(_continued_exec_start, 2, "vllm.service:2: a line (continued "
                                 "with \\) exceeds the limit of 256 KiB"),
    "env-file-line": Case(_long_env_file_line, 2, "vllm.env:2: a line exceeds the limit of "
                          "256 KiB"),
    "manifest-1M-entries": Case(lambda d: _manifest(d, 1_000_000, b"a"), 2,
                                "MANIFEST: MANIFEST exceeds the limit of 16 MiB"),
    "manifest-150k-entries": Case(lambda d: _manifest(d, 150_000, b"a"), 2,
                                  "the number of MANIFEST lines exceeds the limit of 100000"),
    "compose-include": Case(_compose_include, 0, "wrote out/deployment.yaml"),
    "compose-nul-paths": Case(_compose_nul_paths, 0, "wrote out/deployment.yaml"),
    "tp-1e29-on-a-lab": Case(_huge_tp, 2, f"the deployment needs {10 ** 29} nodes"),
    "tp-1e29-no-lab": Case(_huge_tp_no_lab, 2, "more than the limit of 1024 nodes a "
                           "reproduction places"),
    "stalls-new-year-leap-day": Case(lambda d: ["stalls", _new_year(d).name], 0,
                                     "No stall or failure"),
    "logs-new-year-leap-day": Case(lambda d: ["logs", _new_year(d).name], 0,
                                   "startup complete: startup 96.0 s"),
}


def check(case: Case, folder: Path) -> Ran:
    folder.mkdir(exist_ok=True)
    (folder / "home").mkdir()
    argv = case.build(folder)
    before = _tree(folder, "out")
    ran = run_capped(argv, folder, case.seconds)
    assert ran.code in (0, 1, 2), ran.err[-2000:]
    assert ran.code == case.exit, ran.err[-2000:]
    assert "Traceback" not in ran.err + ran.out and "internal error" not in ran.err
    errors = [line for line in ran.err.splitlines() if line.startswith("error:")]
    if ran.code == 2:
        assert len(errors) == 1, ran.err[-2000:]
        assert case.says in errors[0], errors[0][:2000]
        assert len(ran.err) < 2000 and ran.err.count("SECRETLINE") < 10  # never echoed whole
    else:
        assert not errors and case.says in ran.out + ran.err, (ran.out + ran.err)[-3000:]
    assert ran.seconds < case.seconds, f"{ran.seconds:.1f} s"
    assert ran.peak_mib < 256, f"{ran.peak_mib:.0f} MiB"
    assert not (folder / "canary").exists() and not (folder / "in" / "canary").exists()
    assert not (folder.parent / f"{folder.name}.connections").exists()  # no connection tried
    assert _tree(folder, "out") == before  # nothing written outside --out (HOME included)
    return ran


# the cases with a test of their own below (they check more than the exit and the line)
OWN_TEST = {"compose-include", "stalls-new-year-leap-day", "logs-new-year-leap-day"}


@pytest.mark.parametrize("name", sorted(set(CASES) - OWN_TEST))
def test_hostile_input_is_bounded(name: str, tmp_path: Path) -> None:
    check(CASES[name], tmp_path / name)


def test_compose_include_is_a_row_per_entry_and_nothing_is_read_outside(tmp_path: Path) -> None:
    """The included files are never merged silently: one unknowns row each, saying whether it
    was sent beside the input or points outside its folder (absolute, `..`, a link out)."""
    check(CASES["compose-include"], tmp_path / "c")
    rows = {u["text"]: u["note"] for u in json.loads(
        (tmp_path / "c" / "out" / "reproduce.json").read_text())["unknown"]}
    assert "give it as an input of its own" in rows["include: other.yaml"]
    for outside in ("../outside.yaml", "/etc/passwd", "link.yaml"):
        assert "outside the input's folder" in rows[f"include: {outside}"], rows
    deployment = (tmp_path / "c" / "out" / "deployment.yaml").read_text()
    assert "evil" not in deployment and "side" not in deployment


def test_new_year_log_has_no_absurd_stall(tmp_path: Path) -> None:
    """stalls and logs agree with the healthy log the fixture is: the 02-29 line of a node with
    a wrong clock is not dated years back (it was 2024-02-29: a 672-day stall, exit 1)."""
    ran = check(CASES["stalls-new-year-leap-day"], tmp_path / "s")
    assert "<- stall" not in ran.out and "672" not in ran.out
    ran = check(CASES["logs-new-year-leap-day"], tmp_path / "l")
    assert not re.search(r"no log line for \d{4,} s", ran.out), ran.out


@pytest.mark.slow
def test_terminal_paste_of_100k_prompts_is_bounded(tmp_path: Path) -> None:
    """A 2.5 MB paste with 100,000 prompts: parsed once, within the 5 s parse bound, and
    refused in one line at its 10,001st command (it took 66 s and 540 MB, parsed three times,
    walked four, and under a 1 GiB cap printed a raw traceback; with no walk bound the 100,000
    commands took 200 s and 400 MB, 100,000 unknowns rows printed)."""
    def build(d: Path) -> list[str]:
        lines = ["u@spark-01:~$ nvidia-smi"] * 100_000 + ["u@spark-01:~$ vllm serve /m"]
        (d / "paste.txt").write_text("\n".join(lines) + "\ntouch canary\n")
        return ["reproduce", "paste.txt", "--out", "out", "--no-capture"]
    folder = tmp_path / "p"
    folder.mkdir()
    (folder / "home").mkdir()
    argv = build(folder)
    ran = run_capped(argv, folder, 30)
    assert ran.code == 2 and "Traceback" not in ran.err, ran.err[-2000:]
    errors = [line for line in ran.err.splitlines() if line.startswith("error:")]
    # on a machine too slow to parse 2.5 MB in 5 s, the parse bound is the refusal
    assert len(errors) == 1 and ("paste.txt:10001: the number of commands the script runs "
                                 "exceeds the limit of 10000 commands" in errors[0]
                                 or "took more than 5 s to parse" in errors[0]), ran.err
    assert ran.seconds < 30, ran.seconds
    assert ran.peak_mib < 256, f"{ran.peak_mib:.0f} MiB"
    assert not (folder / "canary").exists()
