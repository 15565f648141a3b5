"""The collecting machine's end of one node agent: start it, talk to it, file what it sends.

An `AgentLink` starts the agent through the node's transport (its own session, so Ctrl-C in
the terminal reaches sparktriage only, which then tears down in order), sends the payload and
the start message, pings it every `ping_s` (which keeps the agent's dead-man timer quiet and
measures the clock offset, keeping the sample with the smallest round trip), and files every
record into the bundle as it arrives. Agent output is not trusted: record paths are checked
by the bundle writer, unknown message kinds are ignored.
"""

from __future__ import annotations

import collections
import json
import os
import secrets
import subprocess
import threading
import time
from typing import Callable

from sparktriage.collect import shipping
from sparktriage.errors import InputError
from sparktriage.bundle.writer import BundleWriter
from sparktriage.launch.transport import Transport

Listener = Callable[[str, str, dict], None]  # (node, kind, message)


def new_redact_key() -> str:
    """A per-collection key for redaction stand-ins; never written to the bundle."""
    return secrets.token_hex(16)


class AgentLink:
    """One running agent and everything it has reported."""

    def __init__(self, node: str, transport: Transport, python: str, writer: BundleWriter,
                 listener: Listener | None = None, ping_s: float = 2.0) -> None:
        self.node = node
        self.transport = transport
        self.python = python
        self.writer = writer
        self._listener = listener or (lambda node, kind, message: None)
        self._ping_s = ping_s
        self.popen: subprocess.Popen | None = None
        self._send_lock = threading.Lock()
        self.hello: dict | None = None
        self.teardown: dict | None = None
        self.procs: dict[str, dict] = {}
        self.clock: dict | None = None
        self.lost: str | None = None
        self.last_seen = time.monotonic()
        self.stderr_tail: collections.deque = collections.deque(maxlen=20)
        self.done = threading.Event()
        self._threads: list[threading.Thread] = []

    # --- lifecycle -------------------------------------------------------------------------

    def start(self, message: dict, op: str = "start") -> None:
        """Start the agent and send it `message` (op "start"; "reap" to clean up a node)."""
        argv = self.transport.argv(shipping.agent_argv(self.python))
        self.writer.event("agent-starting", self.node, transport=self.transport.describe())
        try:
            self.popen = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                          stderr=subprocess.PIPE, start_new_session=True)
        except OSError as exc:
            self._lose(f"cannot start the agent: {exc.strerror or exc}")
            return
        # every reader is in the list before any runs: the stdout reader waits for the stderr
        # reader (ssh's last words) and may end at once when the agent cannot start
        self._threads = [threading.Thread(target=target, daemon=True)
                         for target in (self._read_stderr, self._read_stdout, self._ping_loop)]
        for thread in self._threads:
            thread.start()
        try:
            assert self.popen.stdin is not None
            self.popen.stdin.write(shipping.preamble())
            self.popen.stdin.flush()
        except OSError:
            pass  # the reader notices the agent is gone
        self.send({"op": op, "node": self.node, **message})

    def send(self, message: dict) -> bool:
        if self.popen is None or self.popen.stdin is None or self.done.is_set():
            return False
        data = (json.dumps(message) + "\n").encode("utf-8")
        with self._send_lock:
            try:
                self.popen.stdin.write(data)
                self.popen.stdin.flush()
                return True
            except (OSError, ValueError):
                return False

    def launch(self, process: dict) -> bool:
        return self.send({"op": "launch", "process": process})

    def request_stacks(self) -> bool:
        return self.send({"op": "stacks"})

    def stop(self, grace_s: float, reason: str, wait_s: float | None = None) -> bool:
        """Ask the agent to stop and tear down; wait for its goodbye. False: it never came."""
        self.send({"op": "stop", "grace_s": grace_s, "reason": reason})
        ok = self.done.wait(wait_s if wait_s is not None else grace_s + 45.0)
        self.close()
        return ok and self.teardown is not None

    def close(self) -> None:
        """Close the link: end the agent (or ssh) process if it is still there."""
        if self.popen is None:
            return
        try:
            if self.popen.stdin:
                self.popen.stdin.close()
        except OSError:
            pass
        try:
            self.popen.wait(timeout=10)
        except subprocess.TimeoutExpired:
            try:
                os.killpg(self.popen.pid, 9)
            except (ProcessLookupError, PermissionError):
                pass
            self.popen.wait(timeout=5)
        self.done.set()
        if self.clock:
            self.writer.node_document(self.node, "clock.json", self.clock)

    # --- reading ---------------------------------------------------------------------------

    def _lose(self, reason: str) -> None:
        if self.lost is None and self.teardown is None:
            self.lost = reason
            self.writer.event("link-lost", self.node, reason=reason,
                              stderr=list(self.stderr_tail)[-5:])
            self._listener(self.node, "lost", {"reason": reason})
        self.done.set()

    def _read_stderr(self) -> None:
        assert self.popen is not None and self.popen.stderr is not None
        for raw in iter(self.popen.stderr.readline, b""):
            self.stderr_tail.append(raw.decode("utf-8", "replace").rstrip()[:500])

    def _read_stdout(self) -> None:
        assert self.popen is not None and self.popen.stdout is not None
        bye = False
        for raw in iter(self.popen.stdout.readline, b""):
            self.last_seen = time.monotonic()
            try:
                message = json.loads(raw)
                kind = message.get("k")
            except (ValueError, AttributeError):
                continue
            try:
                bye = self._handle(kind, message) or bye
            except (InputError, KeyError, TypeError, ValueError) as exc:
                self.writer.event("bad-agent-message", self.node, kind=str(kind)[:40],
                                  error=str(exc)[:200])
        rc = self.popen.wait()
        self._threads[0].join(timeout=5)  # the stderr reader: ssh's last words
        if not bye:
            tail = next((line for line in reversed(self.stderr_tail) if line), "")
            self._lose(f"agent exited with status {rc} without saying goodbye"
                       + (f": {tail}" if tail else ""))
        self.done.set()

    def _handle(self, kind: str, m: dict) -> bool:
        if kind == "rec":
            self.writer.append(self.node, m["f"], m["r"])
            if m["f"].startswith("logs/"):
                self._listener(self.node, "line", m["r"])
        elif kind == "doc" and m.get("name") == "environment.json":
            self.writer.node_document(self.node, "environment.json", m["r"])
        elif kind == "manifest":
            self.writer.manifest({**m["r"], "node": self.node})
        elif kind == "proc":
            info = self.procs.setdefault(m.get("name", "?"), {})
            info.update({k: m.get(k) for k in ("pid", "pgid", "starttime", "rc", "error")
                         if k in m})
            info["state"] = m.get("event")
            self.writer.event(f"process-{m.get('event')}", self.node,
                              **{k: v for k, v in m.items() if k not in ("k", "event", "t")})
            self._listener(self.node, "proc", m)
        elif kind == "pong":
            t1 = time.time()
            rtt = t1 - float(m["t0"])
            if self.clock is None or rtt < self.clock["rtt_s"]:
                self.clock = {"offset_s": round(float(m["t_node"]) - (float(m["t0"]) + t1) / 2, 6),
                              "rtt_s": round(rtt, 6), "method": "agent-echo"}
        elif kind == "teardown":
            self.teardown = m
            self.writer.event("teardown", self.node, reason=m.get("reason"),
                              survivors=m.get("survivors"), killed=m.get("killed"))
            self._listener(self.node, "teardown", m)
        elif kind == "hello":
            self.hello = m
            self.writer.event("agent-started", self.node, pid=m.get("pid"),
                              python=m.get("python"), root=m.get("root"))
        elif kind in ("attached", "note"):
            self.writer.event(kind, self.node, **{k: v for k, v in m.items() if k != "k"})
            self._listener(self.node, kind, m)
        elif kind == "bye":
            return True
        return False

    def _ping_loop(self) -> None:
        while not self.done.wait(self._ping_s):
            self.send({"op": "ping", "t": time.time()})
