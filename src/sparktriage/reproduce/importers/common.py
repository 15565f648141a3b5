"""What every importer shares: the per-input context (unknowns, notes, placeholders)."""

from __future__ import annotations

from dataclasses import dataclass, field

from sparktriage.reproduce.model import Imported, InputRef, Unknown
from sparktriage.reproduce.secrets import Placeholders
from sparktriage.reproduce.shell import variables_in


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
