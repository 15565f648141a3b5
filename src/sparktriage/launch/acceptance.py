"""Accepting, by name, what a launch runs by the client's choice (docs/security.md).

`launch` and `session run` refuse to start a deployment whose plan lists client code
(config/client_code.py) until the consultant names every item: `--accept-client-code
NAME[,NAME]` (repeatable) or `--accept-client-code-from FILE` (one name a line, `#` starts a
comment; for names holding a comma). The acceptance is recorded in the run directory as
`client-code.json` (every item, the names accepted) and shown in the report.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from sparktriage.config.client_code import ClientCode
from sparktriage.errors import EXIT_USAGE, InputError, SparktriageError
from sparktriage.limits import ACCEPT_FILE_MAX_BYTES, limit_hit, size_text
from sparktriage.textsafe import escape_controls

DOCUMENT = "client-code.json"
KIND = "client-code-acceptance"
FLAG = "--accept-client-code"
OPTION = "accepted_client_code"  # where a session keeps the names (its options' `extra`)


class ClientCodeRefused(SparktriageError):
    """The plan runs client code the consultant has not accepted by name."""

    exit_code = EXIT_USAGE


@dataclass(frozen=True)
class Acceptance:
    """The plan's client-code items and the names the consultant gave."""

    items: tuple[ClientCode, ...]
    accepted: tuple[str, ...]

    @property
    def missing(self) -> list[str]:
        return [i.name for i in self.items if i.name not in self.accepted]

    def to_json(self) -> dict:
        names = {i.name for i in self.items}
        return {"schema_version": 1, "kind": KIND,
                "items": [i.model_dump() for i in self.items],
                "accepted": [n for n in self.accepted if n in names],
                "accepted_not_in_plan": [n for n in self.accepted if n not in names]}


def parse_accepted(values: list[str] | None, files: list[Path] | None = None) -> tuple[str, ...]:
    """The accepted names from the flag's comma lists and the files' lines, each once."""
    names: list[str] = []
    for value in values or []:
        names += [n.strip() for n in value.split(",") if n.strip()]
    for path in files or []:
        try:
            with open(path, "rb") as fh:
                raw = fh.read(ACCEPT_FILE_MAX_BYTES + 1)
        except OSError as exc:
            raise InputError(f"{path}: cannot read the accepted names: "
                             f"{exc.strerror or exc}") from None
        if len(raw) > ACCEPT_FILE_MAX_BYTES:
            raise limit_hit("the file of accepted names",
                            size_text(ACCEPT_FILE_MAX_BYTES), str(path))
        for line in raw.decode("utf-8", "replace").splitlines():
            line = line.strip()
            if line and not line.startswith("#"):
                names.append(line)
    return tuple(dict.fromkeys(names))


def require(items: tuple[ClientCode, ...] | list[ClientCode],
            accepted: tuple[str, ...]) -> Acceptance:
    """The acceptance when every item is accepted; ClientCodeRefused (exit 2, one line naming
    the items left) otherwise."""
    acceptance = Acceptance(tuple(items), tuple(accepted))
    missing = acceptance.missing
    if missing:
        shown = ", ".join(missing)
        raise ClientCodeRefused(
            escape_controls(f"the deployment runs client code not accepted: {shown}",
                            keep_newlines=False),
            hint=f"review each (launch --dry-run lists them), then accept by name: "
                 f"{FLAG} NAME[,NAME] or {FLAG}-from FILE (docs/security.md)")
    blocked = [i for i in items if i.cannot_run]
    if blocked:
        shown = "; ".join(f"{i.name} cannot run: {i.cannot_run}" for i in blocked)
        raise ClientCodeRefused(
            escape_controls(f"the deployment's client code cannot all run on the lab: {shown}",
                            keep_newlines=False),
            hint="give the files the step needs, or remove the step from the deployment "
                 "(docs/reproduce.md, Client steps)")
    return acceptance


def record(run_path: Path, acceptance: Acceptance) -> None:
    """Write the acceptance into the run directory (nothing when there was nothing to accept)."""
    if not acceptance.items and not acceptance.accepted:
        return
    from sparktriage.documents.client_code import ClientCodeDocument
    from sparktriage.store.documents import write_document
    from sparktriage.store.typed import check
    write_document(run_path / DOCUMENT, check(ClientCodeDocument, acceptance.to_json()))
