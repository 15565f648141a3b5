"""Reference passages scored through `prompt_logprobs`, and their controls.

Three passages are *easy* for a working language model: the second copy of a fresh random word
list (in-context copying), a counting sequence, and a memorized canary (the opening of the US
Declaration of Independence, public domain). Healthy models score at least one of them near
zero bits per byte, so the easiest carries the absolute (uncalibrated) guard. The others are
ordinary text for the shuffle control and the baseline comparison: fresh prose and an
explanation written for this tool (no model has memorized them) and simple Python code. A
word-shuffled copy of two passages is the control: a model that reads text scores the original
far better than the shuffle; a broken one cannot tell them apart.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

PROSE = (
    "Every morning the baker on our street opens her shop a little before six. She lights the "
    "oven, sets out the trays, and writes the day's bread on a small board by the door. By seven "
    "the first customers arrive: a nurse coming home from the night shift, two students who "
    "always argue about football, and an old man who buys one roll and reads the whole newspaper "
    "at the corner table. When rain comes in the afternoon, the shop fills with people who have "
    "nowhere else to wait, and the baker lets them stay until the streets are dry again."
)
EXPLAIN = (
    "A thermometer measures temperature. Most simple thermometers contain a liquid that expands "
    "when it gets warmer and contracts when it gets cooler. The liquid sits in a thin glass tube "
    "with a scale printed beside it, so the height of the liquid shows the temperature. Digital "
    "thermometers work differently: they use a small electronic part whose resistance changes "
    "with heat, and a chip turns that change into a number on a screen."
)
CODE = '''def count_words(text):
    """Return a dictionary that maps each word to the number of times it appears."""
    counts = {}
    for word in text.lower().split():
        word = word.strip(".,;:!?")
        if word:
            counts[word] = counts.get(word, 0) + 1
    return counts


def most_common(counts, n=3):
    """Return the n most frequent words, most frequent first."""
    return sorted(counts, key=counts.get, reverse=True)[:n]
'''
CANARY = (
    "When in the Course of human events, it becomes necessary for one people to dissolve the "
    "political bands which have connected them with another, and to assume among the powers of "
    "the earth, the separate and equal station to which the Laws of Nature and of Nature's God "
    "entitle them, a decent respect to the opinions of mankind requires that they should "
    "declare the causes which impel them to the separation."
)
WORDS = (
    "apple river stone window garden letter summer paper music orange silver bridge candle "
    "forest market pencil rabbit island button dinner yellow ticket castle planet mirror "
    "doctor engine flower hammer jacket kitchen ladder monkey needle pocket rocket shadow "
    "tomato valley winter basket cotton dragon feather guitar helmet lemon marble number "
    "office pepper quiet school tiger violin wagon animal border circle family glass "
    "holiday insect jungle kettle lizard meadow nature object parrot quarter record sugar "
    "table uncle voice wallet"
).split()
SKIP_TOKENS = 8  # positions without enough context, not scored in ordinary passages


@dataclass(frozen=True)
class Passage:
    """One text to score; positions whose text starts before `score_from` are not scored."""

    name: str
    text: str
    kind: str  # easy / text / control
    score_from: int = 0  # character offset; 0 means "skip the first SKIP_TOKENS tokens"
    control_of: str | None = None


def copy_passage(rng: random.Random) -> Passage:
    words = " ".join(rng.choice(WORDS) for _ in range(24))
    head = f"Here is a list of words: {words}.\nHere is the same list again:"
    return Passage("copy", f"{head} {words}.", "easy", score_from=len(head))


def count_passage() -> Passage:
    numbers = [str(i) for i in range(1, 61)]
    head = ", ".join(numbers[:10]) + ","
    return Passage("count", ", ".join(numbers) + ".", "easy", score_from=len(head))


def shuffled(passage: Passage, rng: random.Random) -> Passage:
    words = passage.text.split()
    rng.shuffle(words)
    return Passage(f"{passage.name}-shuffled", " ".join(words), "control", control_of=passage.name)


def passage_set(seed: int) -> list[Passage]:
    """The passages of one probe run (the copy list and the shuffles depend on `seed`)."""
    rng = random.Random(seed)
    prose = Passage("prose", PROSE, "text")
    explain = Passage("explain", EXPLAIN, "text")
    return [
        copy_passage(rng), count_passage(), prose, explain,
        Passage("code", CODE, "text"), Passage("canary", CANARY, "easy"),
        shuffled(prose, rng), shuffled(explain, rng),
    ]


def from_dicts(items: list[dict]) -> list[Passage]:
    """Passages as a fingerprint stores them (so a comparison scores the very same text)."""
    return [Passage(i["name"], i["text"], i["kind"], int(i.get("score_from", 0)), i.get("control_of"))
            for i in items]
