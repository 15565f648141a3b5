"""What every importer shares: the per-input context (unknowns, notes, placeholders, and what
the client's other inputs give: their variables and scripts)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from sparktriage.reproduce.model import Imported, InputRef, Unknown
from sparktriage.reproduce.secrets import Placeholders
from sparktriage.reproduce.shell import variables_in

if TYPE_CHECKING:
    from sparktriage.reproduce.importers.source import ReadInput


@dataclass
class Ctx:
    ref: InputRef
    secrets: Placeholders
    unknown: list[Unknown] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    mapped: list[str] = field(default_factory=list)
    # (host folder, container folder) binds of the container the command runs in: a file the
    # command names inside the container (`--config /config/x.yaml`) is read from the host side
    mounts: list[tuple[str, str]] = field(default_factory=list)
    # files the script writes from a here-document (`cat > F <<EOF`): path -> (line, text)
    files: dict[str, tuple[int, str]] = field(default_factory=dict)
    # the vLLM release the client runs, with what says so (a collect-env input's version),
    # and the one the image of the container being read names (`vllm/vllm-openai:v0.11.0`):
    # the serve argv is read with that release's option rules (reproduce/vllm_options.py)
    release: tuple[str, str] | None = None
    image_release: tuple[str, str] | None = None
    # the GPUs per node an `srun` line asks for, with the option as written (slurm.step)
    gpu_ask: tuple[int, str] | None = None
    # independent servers of the input besides the one reproduced, each read alone (apart.py)
    others: list[Imported] = field(default_factory=list)
    # variables the client supplied (env dumps), which a script's `${VAR:-default}` and tests
    # read; the other shell inputs by file name, read where a script runs them
    given: dict[str, str] = field(default_factory=dict)
    library: dict[str, str] = field(default_factory=dict)
    # every input as read, by absolute path: a file one input names that is also an input
    # (a compose file a script's `docker compose run` uses) is not read again
    read: dict[str, ReadInput] = field(default_factory=dict)

    @property
    def source(self) -> str:
        return self.ref.path

    def flag_unknown(self, text: str, note: str) -> None:
        self.unknown.append(Unknown(input=self.source, text=self.secrets.text(text), note=note))

    def note(self, text: str) -> None:
        self.notes.append(f"{self.source}: {self.secrets.text(text)}")

    def check_variables(self, word: str, where: str) -> None:
        for var in variables_in(word):
            self.flag_unknown(word, f"{where}: shell variable {var} kept literally (not "
                                    "expanded); put its value in the deployment")

    def result(self, **kw) -> Imported:
        if self.gpu_ask is not None and "gpus_per_node" not in kw:
            kw.update(gpus_per_node=self.gpu_ask[0], gpus_asked=self.gpu_ask[1])
        return Imported(input=self.ref, unknown=self.unknown, notes=self.notes,
                        mapped=self.mapped, others=self.others, **kw)
