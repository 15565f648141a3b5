"""A compose file's references to other compose files: a service's `extends:` (merged as compose
merges it) and the top-level `include:` (unknowns rows).

Compose merges the included files' services into the project, each with its own folder for
relative paths and its own `.env`. They are not merged here: every entry (a path, a list of
paths, or `{path: ...}`) is an unknowns row with the include line, saying whether the file was
sent beside the input (give it as an input of its own), was not given, or points outside the
input's folder (absolute, `..`, or a symbolic link out), and no included file is ever opened.
Never dropped silently (docs/reproduce.md).
"""

from __future__ import annotations

from pathlib import Path

from sparktriage.errors import InputError
from sparktriage.limits import check_lines
from sparktriage.reproduce.importers.common import Ctx
from sparktriage.reproduce.importers.compose_vars import inside
from sparktriage.yamldoc import load_with_lines
from sparktriage.yamlsafe import read_text

MAX_EXTENDS = 5
MAX_INCLUDES = 64  # entries named in a row each; more are counted in one row


def include_rows(value, base: Path, line: int | None, ctx: Ctx) -> int:
    """Each `include:` entry an unknowns row (the included files are not merged: their
    services, paths and `.env` are their own); the row says whether the file was sent
    beside the input, inside its folder, or points outside it (never read). Returns how many."""
    entries = value if isinstance(value, list) else [value]
    for entry in entries[:MAX_INCLUDES]:
        refs = entry.get("path") if isinstance(entry, dict) else entry
        for ref in (refs if isinstance(refs, list) else [refs])[:MAX_INCLUDES]:
            shown = str(ref) if len(str(ref)) <= 80 else str(ref)[:77] + "..."
            if not isinstance(ref, str) or not ref:
                why = "not a path; not read"
            elif inside(base, ref) is None:
                why = "outside the input's folder (absolute, `..` or a link out); not read"
            elif not inside(base, ref).is_file():
                why = "not given beside the input; its services are missing"
            else:
                why = "not merged: give it as an input of its own to read its services"
            ctx.flag_unknown(f"include: {shown}", f"line {line}: included compose file {why}")
    if len(entries) > MAX_INCLUDES:
        ctx.flag_unknown("include", f"line {line}: {len(entries) - MAX_INCLUDES} more "
                         "included files, not listed")
    return len(entries)


def _merge_service(base: dict, own: dict) -> dict:
    """`extends`: the base service with the service's own keys over it (mappings merged,
    lists of volumes/ports appended, other keys replaced), as compose merges them."""
    out = dict(base)
    for key, value in own.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = {**out[key], **value}
        elif key in ("volumes", "ports", "devices", "env_file", "cap_add", "dns",
                     "extra_hosts") and isinstance(value, list) and isinstance(out.get(key), list):
            out[key] = out[key] + [v for v in value if v not in out[key]]
        else:
            out[key] = value
    return out


def extends(name: str, service: dict, services: dict, base: Path, ctx: Ctx,
            depth: int = 0) -> dict:
    """The service with the one it `extends` (in this file or, by `file:`, one inside the
    input's folder) merged under it, at most MAX_EXTENDS deep."""
    spec = service.get("extends")
    if spec is None:
        return service
    own = {k: v for k, v in service.items() if k != "extends"}
    if depth >= MAX_EXTENDS:
        raise InputError(f"{ctx.source}: service {name}: extends is more than {MAX_EXTENDS} "
                         "deep (or a cycle)")
    if isinstance(spec, str):
        spec = {"service": spec}
    if not isinstance(spec, dict) or not isinstance(spec.get("service"), str):
        raise InputError(f"{ctx.source}: service {name}: extends needs a service name")
    pool = services
    if spec.get("file"):
        target = inside(base, str(spec["file"]))
        if target is None or not target.is_file():
            ctx.flag_unknown(f"extends: {spec['file']}", f"service {name}: the file is not "
                             "in the input's folder; its settings are missing")
            return own
        check_lines(read_text(target), str(target))
        data, _ = load_with_lines(target)
        pool = (data or {}).get("services") or {} if isinstance(data, dict) else {}
    parent = pool.get(spec["service"])
    if not isinstance(parent, dict):
        raise InputError(f"{ctx.source}: service {name}: extends names service "
                         f"{spec['service']}, which is not there")
    ctx.mapped.append(f"services.{name}.extends {spec['service']} -> merged")
    return _merge_service(extends(spec["service"], parent, pool, base, ctx, depth + 1), own)
