"""Pack the node agent for a node that has only `python3`, and the command that unpacks it.

The payload is a zip of `sparktriage/__init__.py`, the `sparktriage.collect` package and the
standard-library part of `sparktriage.redact` (detect, argv, capture) (plus
`pynvml.py` when it is installed here, so that NVML works on nodes without nvidia-ml-py). The
agent's command line is fixed text, `python3 -c BOOTSTRAP`: it reads the payload's length and
bytes from stdin, imports the agent from the zip and hands the rest of stdin to it. Nothing
from a config or a node travels in that command line except the interpreter's path, which the
SSH transport quotes with `shlex.quote`.
"""

from __future__ import annotations

import importlib.util
import io
import zipfile
from functools import lru_cache
from pathlib import Path

import sparktriage

BOOTSTRAP = (
    "import os,sys,tempfile\n"
    "b=sys.stdin.buffer\n"
    "n=int(b.readline())\n"
    "d=tempfile.mkdtemp(prefix='sparktriage-agent-%d-'%os.getpid())\n"
    "p=os.path.join(d,'agent.zip')\n"
    "f=open(p,'wb');f.write(b.read(n));f.close()\n"
    "sys.path.insert(0,p)\n"
    "from sparktriage.collect.node_agent import main\n"
    "main(cleanup=d)\n"
)


_REDACT = ("__init__.py", "detect.py", "argv.py", "capture.py")


@lru_cache(maxsize=1)
def payload() -> bytes:
    """The zip that the bootstrap imports (built once per process)."""
    package = Path(sparktriage.__file__).parent
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.write(package / "__init__.py", "sparktriage/__init__.py")
        for name in _REDACT:  # the one secret detector and argv rule, stdlib only
            zf.write(package / "redact" / name, f"sparktriage/redact/{name}")
        for path in sorted((package / "collect").glob("*.py")):
            zf.write(path, f"sparktriage/collect/{path.name}")
        spec = importlib.util.find_spec("pynvml")
        if spec is not None and spec.origin and spec.origin.endswith(".py"):
            zf.write(spec.origin, "pynvml.py")
    return buffer.getvalue()


def agent_argv(python: str) -> list[str]:
    """argv that starts the agent with `python` (the node's interpreter)."""
    return [python, "-c", BOOTSTRAP]


def preamble() -> bytes:
    """What goes to the agent's stdin first: the payload's length, newline, the payload."""
    data = payload()
    return str(len(data)).encode() + b"\n" + data
