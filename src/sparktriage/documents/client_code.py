"""The typed record of client code accepted before a launch: `client-code.json` at the top of a
run directory (`launch`, `session`, `sweep`; docs/security.md, docs/formats.md)."""

from __future__ import annotations

from typing import Literal

from sparktriage.store.typed import Document, Part


class AcceptedItem(Part):
    name: str  # KIND:VALUE, the name it was accepted by
    kind: Literal["image", "trust-remote-code", "entrypoint", "program", "env", "mod",
                  "pre-launch", "pre_exec", "post_exec", "build"]
    what: str  # what it runs, in words


class ClientCodeDocument(Document):
    """Client code the run's deployment runs, accepted by name before anything started."""

    NAME = "client-code"
    FILE = "client-code.json"
    kind: Literal["client-code-acceptance"]
    items: list[AcceptedItem]
    accepted: list[str]
    accepted_not_in_plan: list[str]
