"""The words of a `vllm serve` argv judged by the client's vLLM release's own rules
(reproduce/vllm_options.py): which release, which words are values, how many an option takes,
which values it accepts, and a row for an option the release does not have. serve_args.py
places what these accept."""

from __future__ import annotations

from sparktriage.errors import InputError
from sparktriage.reproduce import flags as F
from sparktriage.reproduce import vllm_options as V
from sparktriage.reproduce.importers.common import Ctx

PLACEHOLDER = "<supply:"
NUMERIC = {"int", "float", "human_readable_int", "human_readable_int_or_auto"}
Release = tuple[str, str]  # (covered release, what says the client runs it)


def release(ctx: Ctx) -> tuple[str, str]:
    """(release, why): a collect-env's vLLM version, else the container image's tag, else the
    newest release the option table covers."""
    if ctx.release is not None:
        return ctx.release
    if ctx.image_release is not None:
        return ctx.image_release
    return V.newest(), "the newest covered release; the client's vLLM version is not known"


def values_of(option: str, spec: V.Option, first: str | None, args: list[str], i: int,
              release: Release, ctx: Ctx) -> tuple[list[str], int]:
    """The values of an option of several (nargs `+`/`*`/N) from `args[i:]`, as argparse takes
    them (every value up to the next option), each checked; (values, next index)."""
    values = [] if first is None else [first]
    limit = spec.nargs if isinstance(spec.nargs, int) else None
    while i < len(args) and (limit is None or len(values) < limit) and is_value(args[i]):
        values.append(args[i])
        i += 1
    if (spec.nargs == "+" and not values) or (limit is not None and len(values) != limit):
        count = "at least one value" if spec.nargs == "+" else f"{limit} values"
        raise InputError(f"{ctx.source}: {option} takes {count} in vLLM {release[0]} "
                         f"({release[1]}); got {len(values)}")
    for value in values:
        ctx.check_variables(value, option)
        check(option, spec, value, release, ctx)
    return values, i


def check(option: str, spec: V.Option, value: str, release: Release, ctx: Ctx) -> None:
    """Refuse a value the release's converter or choices refuse, on one line naming the
    option, the value and what vLLM accepts."""
    if PLACEHOLDER in value:
        return  # known only at run time: a row says so where the value is used
    reason = V.convert(spec, value)
    if reason is not None:
        release, why = release
        others = V.accepting(spec.name, value)
        elsewhere = f"; vLLM {', '.join(others)} accept it" if others else ""
        shown_value = ctx.secrets.text(cut(value))
        raise InputError(f"{ctx.source}: {option} {shown_value!r}: vLLM {release} "
                         f"({why}) accepts {reason}{elsewhere}")


def cut(value: str) -> str:
    """A refused value as a message shows it: at most 80 characters, and its length."""
    return value if len(value) <= 80 else f"{value[:77]}... ({len(value)} characters)"


def shown(option: str, value: str | None) -> str:
    return option if value is None else f"{option} {value}"


def not_in_release(shown: str, name: str, spec: V.Option | None, release: Release,
                   ctx: Ctx) -> None:
    """A row for an option other vLLM releases have but the client's does not: its server
    would have refused it (or the release read is not the one the client ran)."""
    base = F.long_name(name)
    if spec is not None or V.any_spec(base) is None:
        return
    release, why = release
    ctx.flag_unknown(shown, f"not an option of vLLM {release} ({why}); vLLM "
                     f"{', '.join(V.releases_with(base))} have it; kept as written")


def is_value(word: str) -> bool:
    """A word argparse reads as a value, not an option: no leading dash, a lone `-`, a
    negative number, or a word with a blank in it (`--chat-template "-x y"`)."""
    return not word.startswith("-") or word == "-" or is_number(word) or (
        " " in word and "=" not in word.partition(" ")[0])


def is_number(word: str) -> bool:
    try:
        float(word)
        return True
    except ValueError:
        return False
