"""Statistics of generated text that expose the loud garbage patterns (F1, F2, F4, F7).

Cheap confirmers: none of them sees fluent-but-wrong output (F5), and healthy text can trip
the milder ones (lists, code, terse answers, bilingual text), so each flag needs a strong
signature: a *short* repeating unit covering most of the text (a healthy greedy model may repeat
a sentence, not a 1-4 character fragment), a run of one character, replacement or control
characters, words that mix scripts, or mostly non-dictionary words in a long English answer.
"""

from __future__ import annotations

import os
import re
import unicodedata
import zlib
from dataclasses import dataclass, field
from functools import lru_cache

WORDLIST_PATHS = ("/usr/share/dict/words", "/usr/share/dict/american-english")
MIN_ZLIB_BYTES = 150  # zlib ratios of shorter texts are dominated by header overhead
MAX_PERIOD = 16  # characters: the repeating unit of a collapse ('s's's, multmult, !!!!)


@dataclass(frozen=True)
class TextStats:
    chars: int
    zlib_ratio: float | None
    distinct2: float | None  # unique word bigrams / bigrams
    loop_period: int | None  # shortest repeating unit (chars) at the end, if it covers >= half
    loop_cover: float  # share of the text the tail loop covers
    top_char_share: float  # share of the most common non-space character
    top_char: str
    bad_chars: float  # share of U+FFFD, control and private-use characters
    mixed_script_words: float  # share of words mixing Latin with another script
    dictionary_ratio: float | None  # share of alphabetic words found in the word list
    flags: tuple[str, ...] = field(default_factory=tuple)


@lru_cache(maxsize=1)
def wordlist() -> frozenset[str] | None:
    """The system word list (Debian `wamerican`), or None when there is none."""
    for path in WORDLIST_PATHS:
        if os.path.exists(path):
            with open(path, encoding="utf-8", errors="replace") as fh:
                return frozenset(w.strip().lower() for w in fh if w.strip())
    return None


def tail_loop(text: str) -> tuple[int | None, float]:
    """Shortest unit (<= MAX_PERIOD chars) that repeats back from the end, and its coverage."""
    best: tuple[int | None, float] = (None, 0.0)
    n = len(text)
    if n < 8:
        return best
    for period in range(1, MAX_PERIOD + 1):
        if period * 4 > n:
            break
        i = n - period - 1
        while i >= 0 and text[i] == text[i + period]:
            i -= 1
        covered = (n - 1 - i) / n
        if covered >= 0.5 and (n - 1 - i) >= 4 * period:
            return period, covered
    return best


def _script(ch: str) -> str | None:
    if not ch.isalpha():
        return None
    name = unicodedata.name(ch, "")
    return name.split(" ")[0] if name else None


def analyse(text: str | None, prose: bool = True) -> TextStats:
    """Statistics and flags of one generated text (`prose`: an English prose answer)."""
    text = text or ""
    data = text.encode("utf-8")
    zr = len(data) / len(zlib.compress(data)) if len(data) >= MIN_ZLIB_BYTES else None
    words = text.split()
    bigrams = list(zip(words, words[1:]))
    d2 = len(set(bigrams)) / len(bigrams) if len(bigrams) >= 8 else None
    period, cover = tail_loop(text)
    visible = [c for c in text if not c.isspace()]
    top_char = max(set(visible), key=visible.count) if visible else ""
    top_share = visible.count(top_char) / max(1, len(visible)) if visible else 0.0
    bad = sum(1 for c in text if c == "\ufffd" or (unicodedata.category(c) in ("Cc", "Co", "Cs")
                                                    and c not in "\n\t\r"))
    mixed = 0
    alpha_words = []
    for w in words:
        scripts = {s for s in map(_script, w) if s}
        if len(scripts) > 1 and "LATIN" in scripts:
            mixed += 1
        core = w.strip(".,;:!?()[]\"'").lower()
        if core.isalpha() and core.isascii():
            alpha_words.append(core)
    vocab = wordlist()
    ratio = None
    if vocab is not None and len(alpha_words) >= 20:
        ratio = sum(1 for w in alpha_words if w in vocab or w.rstrip("s") in vocab) / len(alpha_words)
    flags = []
    if period is not None and period <= 4 and cover >= 0.5:
        flags.append("short-loop")
    if len(visible) >= 16 and top_share >= 0.5:
        # `!` is token id 0 of GPT-2/Llama-3/Qwen byte-level vocabularies: NaN logits end there.
        flags.append("exclamation-flood" if top_char == "!" else "one-character-flood")
    if zr is not None and zr > 4.0 and (d2 is None or d2 < 0.3):
        flags.append("highly-compressible")
    if text and bad / len(text) > 0.05:
        flags.append("replacement-or-control-characters")
    if words and mixed / len(words) > 0.05:
        flags.append("mixed-script-words")
    if prose and ratio is not None and ratio < 0.5:
        flags.append("non-words")
    return TextStats(len(text), zr, d2, period, round(cover, 3), round(top_share, 3), top_char,
                     round(bad / max(1, len(text)), 4), round(mixed / max(1, len(words)), 4),
                     None if ratio is None else round(ratio, 3), tuple(flags))
