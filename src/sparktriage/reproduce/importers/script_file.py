"""The script file a container runs, when the input wrote it or sent it: read as data.

A container whose entrypoint or command is a script file (`docker run -v ./serve.sh:/serve.sh
--entrypoint /serve.sh IMAGE`, compose `entrypoint: /serve.sh` with that bind, `IMAGE bash
/work/serve.sh`) runs that file's text. The text is the here-document (or `echo`/`printf`
redirection) the input wrote to the path, read through the container's binds, else the host
file of a bind that lies beside the input (the compose file's folder, the script's folder),
read bounded (MAX_SCRIPT_BYTES, UTF-8). Nothing is run. A file found neither way is None: the
caller says the container does not run vllm serve.
"""

from __future__ import annotations

from pathlib import Path

from sparktriage.limits import check_lines
from sparktriage.reproduce.importers.common import Ctx
from sparktriage.reproduce.importers.compose_vars import inside
from sparktriage.reproduce.importers.vllm_config import written_file

MAX_SCRIPT_BYTES = 256 * 1024


def _on_host(ref: str, ctx: Ctx) -> list[str]:
    """The host paths of container path `ref` through the container's binds."""
    out = [host.rstrip("/") + ref[len(folder.rstrip("/")):] for host, folder in ctx.mounts
           if ref.startswith(folder.rstrip("/") + "/")]
    return out + [host for host, folder in ctx.mounts if folder.rstrip("/") == ref.rstrip("/")]


def _beside(ref: str, ctx: Ctx) -> tuple[Path, str] | None:
    """(the file, its text) of a bound host file sent beside the input, or None."""
    base = Path(ctx.source).parent
    for host in _on_host(ref, ctx):
        for candidate in (host, Path(host).name):
            if candidate.startswith("/") and not Path(candidate).is_relative_to(base):
                continue  # an absolute host path elsewhere: only its name beside the input
            found = inside(base, candidate)
            if found is None or not found.is_file():
                continue
            try:
                with open(found, "rb") as fh:
                    raw = fh.read(MAX_SCRIPT_BYTES + 1)
            except OSError as exc:
                ctx.flag_unknown(ref, f"the container's script {found.name}: not read "
                                 f"({exc.strerror or exc})")
                return None
            if len(raw) > MAX_SCRIPT_BYTES:
                ctx.flag_unknown(ref, f"the container's script {found.name} is larger than "
                                 f"{MAX_SCRIPT_BYTES} bytes; not read")
                return None
            check_lines(raw, str(found))
            try:
                return found, raw.decode("utf-8")
            except UnicodeDecodeError:
                ctx.flag_unknown(ref, f"the container's script {found.name} is not UTF-8 "
                                 "text; not read")
                return None
    return None


def script_text(ref: str, ctx: Ctx, line: int) -> str | None:
    """The text of the script file `ref` (a path in the container) that the input wrote or
    sent, or None; mapped with where it came from."""
    if not ref.startswith(("/", "./")):
        return None
    written = written_file(ref, ctx)
    if written is not None:
        path, (at, text) = written
        ctx.mapped.append(f"line {line}: the container runs {ref}, the here-document of line "
                          f"{at} (written to {path})")
        return text
    sent = _beside(ref, ctx)
    if sent is None:
        return None
    found, text = sent
    ctx.mapped.append(f"line {line}: the container runs {ref}, the file {found.name} sent "
                      "beside the input (bind-mounted)")
    return text
