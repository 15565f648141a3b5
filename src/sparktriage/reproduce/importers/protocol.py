"""The one seam between an input and what it means: `ReadInput` (an input read once) and the
`Importer` protocol every kind of input implements.

An input is read once, bounded (reproduce/read/detect.py), into a `ReadInput`: its path, its text
(a Makefile or a justfile already as the shell text of its recipes) and, where the text is
YAML, its one parse with the line of every key. The registry (importers/registry.py) asks each
importer in order whether it `claims` the input; the first that does decides its kind, once,
and `read`s it into an `Imported` (commands, environment, files, rows). A claim may refuse:
an importer that recognises a shape it cannot read (a Helm chart, an operator's custom
resource) raises an InputError naming the shape and what to give instead.
"""

from __future__ import annotations

from typing import Literal, Protocol

from sparktriage.reproduce.importers.common import Ctx
from sparktriage.reproduce.importers.source import ReadInput
from sparktriage.reproduce.model import Imported, Kind

__all__ = ["Importer", "ReadInput", "Role"]

# what an input is to the client's other inputs: values the scripts read (env dumps,
# collect-env), a script another may run, a unit whose ExecStart may run one, a compose file a
# script's `docker compose run` may use; or nothing ("alone")
Role = Literal["values", "script", "unit", "compose", "alone"]


class Importer(Protocol):
    """One kind of input: whether an input is of it, and what it means."""

    kind: Kind
    role: Role

    def claims(self, source: ReadInput) -> bool:
        """True when `source` is of this kind (from its content; its name is not trusted);
        InputError naming the shape where it is one this importer recognises but refuses."""
        ...

    def read(self, source: ReadInput, ctx: Ctx) -> Imported:
        """The input's server commands, environment, files and rows; InputError (one line,
        at its line) when it cannot be reproduced."""
        ...
