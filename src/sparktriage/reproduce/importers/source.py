"""An input as read, once: its path, its bounded text, and its one YAML parse on demand.

reproduce/read/detect.py reads the file (bounded) into a `ReadInput`; the registry decides its kind
from it and its importer reads it (importers/protocol.py). Where the text is YAML it is parsed
once, with the line of every key, and the kind's decision and the importer share that parse.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

import yaml

from sparktriage import yamldoc

_YAML_KEY = re.compile(r"(?m)^[A-Za-z_][A-Za-z0-9_-]*:\s")


@dataclass
class ReadInput:
    """One input as read (once): its text and, parsed once on demand, its YAML."""

    path: Path
    text: str
    notes: list[str] = field(default_factory=list)  # how the text was made (a Makefile's)

    @property
    def source(self) -> str:
        return str(self.path)

    @cached_property
    def _parsed(self) -> yamldoc.Document | yaml.YAMLError | None:
        """The text's one YAML parse (None where no line reads as a YAML key); a LimitError
        (an alias bomb, too deep) is the input's own one-line error."""
        if not _YAML_KEY.search(self.text + " "):
            return None
        try:
            return yamldoc.parse(self.text, self.source)
        except yaml.YAMLError as exc:
            return exc

    @property
    def data(self) -> Any:
        """The YAML data, None where the text is not YAML (for deciding the kind)."""
        parsed = self._parsed
        return parsed.data if isinstance(parsed, yamldoc.Document) else None

    def with_lines(self) -> tuple[Any, yamldoc.Lines]:
        """(data, {key path: line}) as `yamldoc.load_with_lines` gives them, from the one
        parse: ConfigError at its line when the text is not valid YAML."""
        parsed = self._parsed
        return yamldoc.text_with_lines(self.text, self.path,
                                       parsed if parsed is not None else None)
