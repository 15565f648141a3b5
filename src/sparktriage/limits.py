"""The caps on every outside input, in one place (documented in docs/limits.md).

Inputs come from other people's machines and servers: configs, rules, workloads, bundles,
archives, logs, metrics pages and response streams. Every reader takes its bound from here, and
a limit that is hit is an input error (exit 2) that names the file, member or line and the
limit, never a crash, a hang or unbounded memory.
"""

from __future__ import annotations

from sparktriage.errors import InputError, SourceLocation

# YAML (deployments, labs, rules, workloads, scenarios, client inputs)
YAML_MAX_BYTES = 4 << 20
YAML_MAX_DEPTH = 64
YAML_MAX_NODES = 100_000  # scalars, mappings and sequences composed, aliases included
# documents of one multi-document YAML input (Kubernetes manifests), each bounded as above; the
# whole text is at most YAML_MAX_BYTES
YAML_MAX_DOCUMENTS = 256

# JSON documents (bundle.json, environment.json, run documents) and JSON-lines records
JSON_MAX_BYTES = 64 << 20
JSON_MAX_DEPTH = 64
RECORD_MAX_BYTES = 16 << 20  # one JSON-lines record

# Archives (evidence bundles)
ARCHIVE_MAX_MEMBERS = 200_000
ARCHIVE_MAX_TOTAL_BYTES = 8 << 30
ARCHIVE_MAX_MEMBER_BYTES = 2 << 30

# What a server sends the streaming client and the metrics scraper
RESPONSE_MAX_BYTES = 32 << 20  # one streamed response body
LINE_MAX_BYTES = 1 << 20  # one SSE line / one header line
TOKEN_MARGIN = 64  # SSE events accepted beyond the max_tokens the request asked for
METRICS_MAX_BYTES = 16 << 20  # one /metrics page
RECIPE_COMMAND_MAX_BYTES = 1 << 20  # a recipe's command once its template is filled


# A report folder's MANIFEST (verify): a report holds hundreds of files, a sweep thousands
MANIFEST_MAX_BYTES = 16 << 20
MANIFEST_MAX_ENTRIES = 100_000

# Client scripts and Makefiles read statically (reproduce): the values their expansions build
EXPAND_VALUE_MAX_CHARS = 1 << 20  # one value: a variable, a word, an array in all
EXPAND_TOTAL_MAX_CHARS = 64 << 20  # every value built while reading one input, summed
EXPAND_MAX_ITEMS = 65_536  # the items of one array (or the fields of one command)
EXPAND_MAX_REFERENCES = 100_000  # make variable references followed (lazy `=` fans out)
SCRIPT_MAX_COMMANDS = 10_000  # simple commands one input's static reading lists

# A reproduced deployment: the client nodes its ranks are placed on (tp x pp x dp at the GPUs
# per node, in integers); the largest GB10 clusters are tens of nodes
PLACED_MAX_NODES = 1024

# Client text inputs (scripts, Makefiles, units, compose and env files, configs)
TEXT_LINE_MAX_BYTES = 256 << 10  # one line


class LimitError(InputError):
    """An input went past one of the caps above."""


def limit_hit(what: str, limit: str, origin: str, line: int | None = None) -> LimitError:
    """The error for an input past a cap: `origin:line: WHAT exceeds LIMIT`."""
    return LimitError(f"{what} exceeds the limit of {limit}",
                      location=SourceLocation(origin, line),
                      hint="see docs/limits.md")


def check_lines(text: str | bytes, origin: str, limit: int = TEXT_LINE_MAX_BYTES) -> None:
    """Refuse a text holding a line longer than `limit` (characters of a str, bytes of
    bytes): `origin:N: a line exceeds the limit of 256 KiB`, the line itself never shown."""
    newline = "\n" if isinstance(text, str) else b"\n"
    start, number = 0, 1
    while True:
        end = text.find(newline, start)  # type: ignore[arg-type]
        stop = len(text) if end < 0 else end
        if stop - start > limit:
            raise limit_hit("a line", size_text(limit), origin, number)
        if end < 0:
            return
        start, number = end + 1, number + 1


def size_text(n: int) -> str:
    """A byte count as the docs write it (4 MiB, 1 GiB, 512 bytes)."""
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if n >= 1 << shift and n % (1 << shift) == 0:
            return f"{n >> shift} {unit}"
    return f"{n} bytes"


# The consultant's file of accepted client-code names (launch, session: docs/security.md)
ACCEPT_FILE_MAX_BYTES = 1 << 20
