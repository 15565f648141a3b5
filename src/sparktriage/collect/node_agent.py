"""The node agent: runs on each node, starts what the plan says, collects, and tears down.

The collecting machine starts one agent per node (over SSH, or as a local child) and talks to
it in JSON lines: commands on the agent's stdin, records and events on its stdout.

    in:  {"op": "start", "node", "plan", "redact_key", "link_timeout_s", "attach", "tail"}
         {"op": "launch", "process": {"name", "argv", "env", "cwd", "env_allow", "private_cwd"}}
         {"op": "ping", "t"}   {"op": "stacks"}   {"op": "stop", "grace_s"}
         {"op": "reap", "pgids", "pids": [[pid, starttime]], "grace_s"}   (instead of start)
    out: hello, rec {f, r}, doc {name, r}, proc {event, name, pid, ...}, pong, manifest {r},
         attached, note, teardown {survivors, reason}, bye

The agent owns the safety net on its node: when its stdin closes (the SSH link or the
collecting machine died) or no command arrives for `link_timeout_s`, it stops collecting and
tears down every process it started, exactly as on an ordinary stop. A server it attached to
(`collect --pid`) is never signalled.
"""

from __future__ import annotations

import json
import os
import queue
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time

from sparktriage.collect import procfs
from sparktriage.collect.base import Context
from sparktriage.collect.plan import CollectPlan
from sparktriage.redact.capture import Redactor
from sparktriage.collect.runner import Runner
from sparktriage.collect.serve import NodeProcess, alive, kill_all
from sparktriage.collect.tail import FileTail, stdout_files

_SAFE = re.compile(r"[^A-Za-z0-9._-]+")


class Channel:
    """JSON lines out on stdout (thread-safe); commands in from stdin, via a queue."""

    def __init__(self, out, inp) -> None:
        self._out = out
        self._inp = inp
        self._lock = threading.Lock()
        self.lost = False
        self.inbox: "queue.Queue[dict | None]" = queue.Queue()

    def send(self, kind: str, **fields) -> None:
        data = (json.dumps({"k": kind, **fields}, ensure_ascii=False, allow_nan=False,
                           default=str) + "\n").encode("utf-8")
        with self._lock:
            if self.lost:
                return
            try:
                self._out.write(data)
                self._out.flush()
            except (OSError, ValueError):
                self.lost = True
                self.inbox.put(None)

    def read_loop(self) -> None:
        for raw in iter(self._inp.readline, b""):
            try:
                message = json.loads(raw)
            except ValueError:
                continue
            if isinstance(message, dict):
                self.inbox.put(message)
        self.inbox.put(None)  # EOF: the link is gone


def env_allowed(name: str, allow: list[str]) -> bool:
    """A name on the allow-list: equal to an entry, or starting with an entry that ends in
    `*` (`NCCL_*`, `LC_*`)."""
    return any(name.startswith(entry[:-1]) if entry.endswith("*") else name == entry
               for entry in allow)


def _log_name(name: str) -> str:
    cleaned = _SAFE.sub("-", name).strip(".-")[:64]
    return cleaned or "proc"


class Agent:
    def __init__(self, channel: Channel, start: dict) -> None:
        self.ch = channel
        self.node = start["node"]
        self.plan = CollectPlan.from_json(start["plan"])
        self.link_timeout = float(start.get("link_timeout_s") or 30.0)
        self.processes: list[NodeProcess] = []
        self.attached: list[int] = []
        self.tails: list[FileTail] = []
        self.ctx = Context(self.node, self._roots, Redactor(bytes.fromhex(start["redact_key"])))
        self.runner = Runner(self.plan, self.ctx, self._emit)
        self._attach_spec = start.get("attach") or None
        self._tail_paths = list(start.get("tail") or [])
        self._scratch: list[str] = []  # private working folders made for processes

    def _roots(self) -> list[int]:
        return [p.pid for p in self.processes if p.pid and p.returncode is None] + self.attached

    def _emit(self, relpath: str, record: dict) -> None:
        if relpath == "environment.json":
            self.ch.send("doc", name=relpath, r=record)
        else:
            self.ch.send("rec", f=relpath, r=record)

    def launch(self, spec: dict) -> None:
        name = _log_name(spec.get("name") or "server")
        allow = spec.get("env_allow")
        if allow is not None:  # only the node's own values of these names (and prefixes)
            env = {k: v for k, v in os.environ.items() if env_allowed(k, allow)}
        else:
            env = dict(os.environ) if spec.get("inherit_env", True) else {}
        env.update({str(k): str(v) for k, v in (spec.get("env") or {}).items()})
        cwd = spec.get("cwd")
        if spec.get("private_cwd"):  # a fresh folder only this process's user can enter
            cwd = tempfile.mkdtemp(prefix="sparktriage-proc-")
            self._scratch.append(cwd)
        relpath = f"logs/{name}.lines.jsonl"

        def emit_line(stream: str, line: str, t: float) -> None:
            self.ch.send("rec", f=relpath, r={"t": t, "node": self.node, "stream": stream,
                                              "line": line})

        def on_exit(proc: NodeProcess) -> None:
            self.ch.send("proc", event="exited", name=proc.name, pid=proc.pid,
                         rc=proc.returncode, t=time.time())

        proc = NodeProcess(name, spec["argv"], env, cwd, emit_line, on_exit)
        proc.start()
        if proc.error:
            self.ch.send("proc", event="failed", name=name, error=proc.error, t=time.time())
            return
        self.processes.append(proc)
        self.ch.send("proc", event="started", name=name, pid=proc.pid, pgid=proc.pid,
                     starttime=proc.starttime, t=time.time())

    def attach(self) -> None:
        spec = self._attach_spec
        if not spec:
            return
        pid = spec.get("pid")
        if pid is None and spec.get("match"):
            try:
                pattern = re.compile(spec["match"])
            except re.error as exc:
                self.ch.send("attached", pid=None, error=f"bad pattern: {exc}")
                return
            deadline = time.monotonic() + float(spec.get("wait_s") or 0)
            while pid is None:
                pid = _find(pattern)
                if pid is None and time.monotonic() > deadline:
                    self.ch.send("attached", pid=None, error=f"no process matches "
                                 f"{spec['match']!r}")
                    return
                if pid is None:
                    time.sleep(0.5)
        if pid is None or not alive(int(pid), None):
            self.ch.send("attached", pid=pid, error=f"no process {pid}")
            return
        self.attached.append(int(pid))
        self.ch.send("attached", pid=int(pid), error=None,
                     cmdline=self.ctx.joined_cmdline(procfs.proc_cmdline(int(pid))))
        if spec.get("follow_stdout", True):
            self._tail_paths += [p for p in stdout_files(int(pid)) if p not in self._tail_paths]

    def start_tails(self) -> None:
        for path in self._tail_paths:
            relpath = f"logs/{_log_name(os.path.basename(path))}.lines.jsonl"

            def emit(line: str, t: float, backfill: bool, relpath=relpath) -> None:
                record = {"t": t, "node": self.node, "stream": "file", "line": line}
                if backfill:
                    record["backfill"] = True
                self.ch.send("rec", f=relpath, r=record)

            tail = FileTail(path, emit)
            tail.start()
            self.tails.append(tail)
            self.ch.send("note", message=f"following {path}")

    def serve(self) -> str:
        """Handle commands until stop, EOF or link timeout; return the reason."""
        last = time.monotonic()
        gone: set[int] = set()
        while True:
            try:
                message = self.ch.inbox.get(timeout=1.0)
            except queue.Empty:
                if time.monotonic() - last > self.link_timeout:
                    return f"link lost: no command for {self.link_timeout:g} s"
                for pid in self.attached:
                    if pid not in gone and not alive(pid, None):
                        gone.add(pid)
                        self.ch.send("proc", event="exited", name="attached", pid=pid, rc=None,
                                     t=time.time())
                continue
            last = time.monotonic()
            if message is None:
                return "link lost: input closed"
            op = message.get("op")
            if op == "ping":
                self.ch.send("pong", t0=message.get("t"), t_node=time.time())
            elif op == "launch":
                self.launch(message["process"])
            elif op == "stacks":
                self.ch.send("note", message="stacks requested" if self.runner.request_stacks()
                             else "stacks collector not running")
            elif op == "stop":
                self.grace = float(message.get("grace_s") or 15.0)
                return message.get("reason") or "stop requested"

    def teardown(self, reason: str) -> None:
        for line in self.runner.stop(final_stacks=not reason.startswith("link lost")):
            self.ch.send("manifest", r=line)
        for tail in self.tails:
            tail.stop()
        # Only what this agent started is ever signalled: an attached server is left alone.
        known = list(self.ctx.seen) if self.processes and not self.attached else []
        known += [(p.pid, p.starttime) for p in self.processes if p.pid]
        pgids = [p.pid for p in self.processes if p.pid]
        survivors = kill_all(list(dict.fromkeys(known)), pgids, getattr(self, "grace", 15.0))
        for folder in self._scratch:
            shutil.rmtree(folder, ignore_errors=True)
        self.ch.send("teardown", reason=reason, survivors=survivors, t=time.time(),
                     killed=len(known))


def _find(pattern: "re.Pattern[str]") -> int | None:
    me = os.getpid()
    for entry in sorted(os.listdir(procfs.PROC), key=lambda e: (len(e), e)):
        if entry.isdigit() and int(entry) != me:
            try:
                if pattern.search(" ".join(procfs.proc_cmdline(int(entry)))):
                    return int(entry)
            except OSError:
                continue
    return None


def reap(channel: Channel, message: dict) -> None:
    """Kill what a lost agent left behind (pids matched by start time, and whole groups), then
    run the plan's teardown commands (argv lists: `docker rm -f NAME`, `ray stop --force`)."""
    known = [(int(p), int(s)) for p, s in message.get("pids") or []]
    survivors = kill_all(known, [int(g) for g in message.get("pgids") or []],
                         float(message.get("grace_s") or 5.0))
    results = []
    for argv in message.get("commands") or []:
        try:
            done = subprocess.run([str(a) for a in argv], stdin=subprocess.DEVNULL,
                                  capture_output=True, timeout=120)
            results.append({"argv": argv, "rc": done.returncode,
                            "stderr": done.stderr.decode("utf-8", "replace")[-300:]})
        except (OSError, subprocess.TimeoutExpired) as exc:
            results.append({"argv": argv, "rc": None, "error": str(exc)[:300]})
    channel.send("teardown", reason="reap", survivors=survivors, t=time.time(), killed=len(known),
                 commands=results)


def remove_stale_copies(own: str | None) -> None:
    """Delete unpacked agents left by agents that were killed (their pid no longer exists)."""
    folder = tempfile.gettempdir()
    for entry in os.listdir(folder):
        parts = entry.split("-")
        if entry.startswith("sparktriage-agent-") and len(parts) >= 4 and parts[2].isdigit():
            path = os.path.join(folder, entry)
            if path != own and not os.path.exists(f"/proc/{parts[2]}"):
                shutil.rmtree(path, ignore_errors=True)


def main(cleanup: str | None = None) -> None:
    try:
        remove_stale_copies(cleanup)
    except OSError:
        pass
    channel = Channel(sys.stdout.buffer, sys.stdin.buffer)
    threading.Thread(target=channel.read_loop, daemon=True).start()
    try:
        first = channel.inbox.get(timeout=60)
        if not first:
            return
        channel.send("hello", node=first.get("node"), pid=os.getpid(), t=time.time(),
                     python=sys.version.split()[0], root=os.geteuid() == 0)
        if first.get("op") == "reap":
            reap(channel, first)
            return
        agent = Agent(channel, first)
        try:
            agent.attach()
            for spec in first.get("processes") or []:
                agent.launch(spec)
            agent.start_tails()
            agent.runner.start()
            reason = agent.serve()
        except KeyboardInterrupt:
            reason = "interrupted"
        agent.teardown(reason)
    finally:
        channel.send("bye", t=time.time())
        if cleanup:
            shutil.rmtree(cleanup, ignore_errors=True)
        # The stdin reader thread may sit in a blocking read: leave without joining it.
        os._exit(0)
