"""Files a script writes from a here-document: `cat > F <<EOF`, `cat <<EOF > F`, `tee F <<EOF`,
`cat <<EOF | sudo tee F` (and, through bash/writes.py, `echo`/`printf ... > F`, `>> F`).

A launch script often writes its vLLM config this way and then runs `vllm serve --config F`.
The body is kept (expanded unless the delimiter is quoted, as bash writes it) under the path
the script names, so that `--config F` reads it as that file; nothing is written anywhere.
Bounds: at most `MAX_FILES` files a script, each at most `MAX_BYTES`; more is a note.
"""

from __future__ import annotations

import os

from sparktriage.reproduce.bash.tree import Node, text
from sparktriage.reproduce.bash.words import Expander, Scope

MAX_FILES = 64
MAX_BYTES = 1024 * 1024
WRITE_OPS = (">", ">>", ">|", "&>", "&>>")


def command_words(command: Node, data: bytes, scope: Scope) -> list[str]:
    """A command's words expanded (never run), without a leading `sudo` and its options."""
    name = command.child_by_field_name("name")
    if name is None:
        return []
    words = Expander(data, scope).fields(name.named_children
                                         + command.children_by_field_name("argument"))
    while words and os.path.basename(words[0]) == "sudo":
        words = [w for w in words[1:]]
        while words and words[0].startswith("-"):
            words = words[1:]
    return words


def _redirect_target(redirect: Node, data: bytes, scope: Scope) -> str | None:
    op = next((c for c in redirect.children if not c.is_named), None)
    if op is None or text(op, data) not in WRITE_OPS:
        return None
    dest = redirect.child_by_field_name("destination") or \
        (redirect.named_children[-1] if redirect.named_children else None)
    if dest is None:
        return None
    words = Expander(data, scope).fields([dest])
    return words[0] if len(words) == 1 else None


def heredoc_targets(node: Node, data: bytes, scope: Scope) -> list[str]:
    """The files a redirected statement with a here-document writes it to (the command is
    `cat` reading its input, or `tee`); none for any other command."""
    body = node.child_by_field_name("body")
    if body is None or body.type != "command":
        return []
    words = command_words(body, data, scope)
    if not words:
        return []
    program = os.path.basename(words[0])
    targets: list[str] = []
    if program == "tee":
        targets += [w for w in words[1:] if not w.startswith("-")]
    elif program != "cat" or len(words) > 1:
        return []
    redirects = [c for c in node.named_children if c.type == "file_redirect"]
    for heredoc in (c for c in node.named_children if c.type == "heredoc_redirect"):
        redirects += [c for c in heredoc.named_children if c.type == "file_redirect"]
        for pipe in (c for c in heredoc.named_children if c.type == "pipeline"):
            for stage in (c for c in pipe.named_children if c.type == "command"):
                after = command_words(stage, data, scope)
                if after and os.path.basename(after[0]) == "tee":
                    targets += [w for w in after[1:] if not w.startswith("-")]
    for redirect in redirects:
        target = _redirect_target(redirect, data, scope)
        if target:
            targets.append(target)
    return [t for t in targets if not t.startswith("/dev/")]


def keep(files: dict[str, tuple[int, str]], notes: list[str], targets: list[str], at: int,
         body: str, append: bool = False) -> None:
    """Keep `body` as each target's content (the last write wins, as when the script runs;
    `append`: added to what the script wrote there before, `>>`)."""
    for target in targets:
        path = os.path.normpath(target)
        if append and path in files:
            at, body = files[path][0], files[path][1] + body
        if len(body.encode("utf-8")) > MAX_BYTES:
            notes.append(f"line {at}: the here-document written to {target} is over "
                         f"{MAX_BYTES // 1024} KiB; not kept")
        elif target not in files and len(files) >= MAX_FILES:
            notes.append(f"line {at}: more than {MAX_FILES} files written from here-documents; "
                         f"{target} not kept")
        else:
            files[os.path.normpath(target)] = (at, body)
