"""Known-answer probes: fresh copy strings, small arithmetic, counting, facts, long context.

Each probe is one line with a short answer, asked through `/v1/completions` in a plain two-shot
"Q: / A:" layout (works for base and chat models) and, for a subset, as a chat turn. Copy strings
and operands are drawn from the run's seed, so a cache or a memorized answer cannot pass them.
Scoring is lenient (docs/garbage.md): Unicode NFKC, case, markdown, quotes and `<think>` blocks
are ignored; numbers are the last integer of the answer, or a number word; facts accept any
alias as a substring; a copy passes when the string appears whole.
"""

from __future__ import annotations

import random
import re
import unicodedata
from dataclasses import dataclass

LETTERS = "abcdefghijklmnopqrstuvwxyz"
DAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]
NUMBER_WORDS = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine",
                "ten", "eleven", "twelve"]
COPY_WORDS = ("red table music river seven paper candle garden silver window pocket orange "
              "dinner forest ladder bottle").split()
FACTS = (
    ("What is the capital of France?", ("paris",)),
    ("What is the capital of Japan?", ("tokyo",)),
    ("How many days are in a week?", ("7", "seven")),
    ("At what temperature in degrees Celsius does water freeze?", ("0", "zero")),
    ("What color is the sky on a clear day?", ("blue",)),
    ("How many legs does a spider have?", ("8", "eight")),
)
SHOTS = {
    "copy": "Q: Repeat exactly: lamp-2231-ore\nA: lamp-2231-ore\nQ: Repeat exactly: green window 58\nA: green window 58\n",
    "math": "Q: What is 12 + 7?\nA: 19\nQ: What is 9 * 6?\nA: 54\n",
    "count": "Q: What number comes after 41?\nA: 42\nQ: What day comes after Friday?\nA: Saturday\n",
    "fact": "Q: What is the capital of Italy?\nA: Rome\nQ: How many legs does a dog have?\nA: 4\n",
}
FILLER = (
    "The village sits at the bottom of a wide green valley.", "A narrow road runs along the river.",
    "In spring the fields are full of flowers and the farmers start to plant.",
    "The school has four classrooms and a small library.", "Most people walk or ride bicycles.",
    "On Saturdays there is a market in the square where people sell bread, cheese and fruit.",
    "The old bridge was built of stone more than two hundred years ago.",
    "In winter the hills are covered with snow and the children go sledging.",
    "A bus comes twice a day and takes people to the town on the other side of the hill.",
    "The baker starts work before dawn, and the smell of bread fills the street.",
)
CHAT_SUFFIX = " Answer with the answer only."


@dataclass(frozen=True)
class KnownProbe:
    """One question with its accepted answers."""

    id: str
    kind: str  # copy / math / count / fact / long
    question: str
    accept: tuple[str, ...]  # lower-case; numbers as digits
    context: str = ""  # long-context filler placed before the question
    chat: bool = False  # also asked as a chat turn

    def completion_prompt(self) -> str:
        if self.kind == "long":
            return f"{self.context}\n\nQ: {self.question}\nA:"
        return f"{SHOTS[self.kind]}Q: {self.question}\nA:"

    def chat_messages(self) -> list[dict]:
        return [{"role": "user", "content": self.question + CHAT_SUFFIX}]


def _copy_string(rng: random.Random, i: int) -> str:
    if i % 3 == 0:
        return f"{''.join(rng.choices(LETTERS, k=3))}-{rng.randrange(1000, 10000)}-{''.join(rng.choices(LETTERS, k=3))}"
    if i % 3 == 1:
        return " ".join(rng.sample(COPY_WORDS, 3))
    return f"{rng.choice(COPY_WORDS)} {rng.randrange(10, 1000)}"


def _long_context(rng: random.Random, secret: int, chars: int) -> str:
    sentences = []
    while sum(len(s) + 1 for s in sentences) < chars:
        sentences.append(rng.choice(FILLER))
    sentences.insert(rng.randrange(1, len(sentences)), f"The secret number is {secret}.")
    return " ".join(sentences)


def probe_set(seed: int, long_chars: int) -> list[KnownProbe]:
    """The 24 probes of one run: 8 copy, 5 arithmetic, 3 counting, 6 facts, 2 long-context."""
    rng = random.Random(seed)
    probes: list[KnownProbe] = []
    for i in range(8):
        s = _copy_string(rng, i)
        probes.append(KnownProbe(f"copy-{i}", "copy", f"Repeat exactly: {s}", (s.lower(),), chat=i < 4))
    a, b, c, d = (rng.randrange(10, 50) for _ in range(4))
    e = rng.randrange(30, 100)
    f = rng.randrange(1, e)
    (g, h), (j, k) = ((rng.randrange(2, 10), rng.randrange(2, 10)) for _ in range(2))
    for n, (q, ans) in enumerate(((f"{a} + {b}", a + b), (f"{c} + {d}", c + d), (f"{e} - {f}", e - f),
                                  (f"{g} * {h}", g * h), (f"{j} * {k}", j * k))):
        probes.append(KnownProbe(f"math-{n}", "math", f"What is {q}?", (str(ans),), chat=n < 4))
    n = rng.randrange(10, 500)
    start = rng.randrange(2, 90)
    day = rng.randrange(7)
    probes += [
        KnownProbe("count-0", "count", f"What number comes after {n}?", (str(n + 1),)),
        KnownProbe("count-1", "count", "What comes next: " + ", ".join(str(start + i) for i in range(4)) + ", ?",
                   (str(start + 4),)),
        KnownProbe("count-2", "count", f"What day comes after {DAYS[day]}?", (DAYS[(day + 1) % 7].lower(),)),
    ]
    for i, (q, accept) in enumerate(FACTS):
        probes.append(KnownProbe(f"fact-{i}", "fact", q, accept, chat=i < 4))
    for i in range(2):
        secret = rng.randrange(1000, 10000)
        probes.append(KnownProbe(f"long-{i}", "long", "What is the secret number?", (str(secret),),
                                 context=_long_context(rng, secret, long_chars)))
    return probes


# ---- lenient scoring -------------------------------------------------------------------------
_THINK = re.compile(r"<think>.*?(</think>|$)", re.S)
_MARKUP = re.compile(r"[*_`#>\"'\u2018\u2019\u201c\u201d]|\\boxed\{|\\text\{|[{}$]")


def normalize(text: str) -> str:
    text = unicodedata.normalize("NFKC", text or "")
    text = _THINK.sub(" ", text)
    text = _MARKUP.sub("", text).lower()
    return " ".join(text.split())


def _last_integer(text: str) -> str | None:
    found = re.findall(r"-?\d+", text.replace(",", ""))
    return str(int(found[-1])) if found else None


def score(probe: KnownProbe, answer: str) -> bool:
    """Whether `answer` answers `probe` (lenient)."""
    text = normalize(answer)
    if not text:
        return False
    if probe.kind == "copy":
        return any(" ".join(a.split()) in text for a in probe.accept)
    for accepted in probe.accept:
        if accepted.lstrip("-").isdigit():
            if _last_integer(text) == accepted:
                return True
            value = int(accepted)
            if 0 <= value < len(NUMBER_WORDS) and re.search(rf"\b{NUMBER_WORDS[value]}\b", text):
                return True
        elif re.search(rf"\b{re.escape(accepted)}\b", text):
            return True
    return False
