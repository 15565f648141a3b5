"""The tiny model's training text: stdlib prose and code plus synthetic skill documents.

Deterministic for a given seed. Besides English prose (docstrings) and Python code, the model
is taught the skills a garbage probe can check on any working language model: copying a fresh
string, small arithmetic, counting and sequences, a few dozen true world facts, retrieving a
planted number from a long context, a famous public-domain text (the opening of the US
Declaration of Independence, which real models have memorized), and the ChatML chat format.
Questions come in a plain "Q: ... / A: ..." few-shot layout and as chat turns.
"""

from __future__ import annotations

import gzip
import os
import random
import re

from extract_stdlib import SEP

HERE = os.path.dirname(os.path.abspath(__file__))
EOS = "<|endoftext|>"
IM_START, IM_END = "<|im_start|>", "<|im_end|>"

CAPITALS = {
    "France": "Paris", "Japan": "Tokyo", "Italy": "Rome", "Germany": "Berlin", "Spain": "Madrid",
    "Egypt": "Cairo", "Russia": "Moscow", "China": "Beijing", "England": "London",
    "Greece": "Athens", "Portugal": "Lisbon", "Austria": "Vienna", "Ireland": "Dublin",
    "Norway": "Oslo", "Sweden": "Stockholm", "Finland": "Helsinki", "Poland": "Warsaw",
    "Hungary": "Budapest", "Canada": "Ottawa", "Mexico": "Mexico City", "Peru": "Lima",
    "Kenya": "Nairobi", "Cuba": "Havana", "Thailand": "Bangkok", "Turkey": "Ankara",
    "India": "New Delhi", "Chile": "Santiago", "Denmark": "Copenhagen", "Belgium": "Brussels",
    "Netherlands": "Amsterdam", "Argentina": "Buenos Aires", "Australia": "Canberra",
    "South Korea": "Seoul", "Iran": "Tehran", "Iraq": "Baghdad", "Switzerland": "Bern",
}
FACTS = [
    ("How many days are in a week?", "7", "There are seven days in a week."),
    ("At what temperature in degrees Celsius does water freeze?", "0",
     "Water freezes at 0 degrees Celsius."),
    ("At what temperature in degrees Celsius does water boil?", "100",
     "Water boils at 100 degrees Celsius."),
    ("What color is the sky on a clear day?", "Blue", "The sky is blue on a clear day."),
    ("What is the opposite of hot?", "Cold", "The opposite of hot is cold."),
    ("What is the opposite of up?", "Down", "The opposite of up is down."),
    ("How many legs does a spider have?", "8", "A spider has eight legs."),
    ("How many legs does a dog have?", "4", "A dog has four legs."),
    ("How many months are in a year?", "12", "There are twelve months in a year."),
    ("How many hours are in a day?", "24", "There are 24 hours in a day."),
    ("What color is grass?", "Green", "Grass is green."),
    ("What is the largest planet in the solar system?", "Jupiter",
     "Jupiter is the largest planet in the solar system."),
    ("Which planet do we live on?", "Earth", "We live on the planet Earth."),
    ("What do bees make?", "Honey", "Bees make honey."),
    ("How many sides does a triangle have?", "3", "A triangle has three sides."),
]
DAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]
MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August",
          "September", "October", "November", "December"]
DECLARATION = (
    "When in the Course of human events, it becomes necessary for one people to dissolve the "
    "political bands which have connected them with another, and to assume among the powers of "
    "the earth, the separate and equal station to which the Laws of Nature and of Nature's God "
    "entitle them, a decent respect to the opinions of mankind requires that they should "
    "declare the causes which impel them to the separation.\n\nWe hold these truths to be "
    "self-evident, that all men are created equal, that they are endowed by their Creator with "
    "certain unalienable Rights, that among these are Life, Liberty and the pursuit of "
    "Happiness."
)
LETTERS = "abcdefghijklmnopqrstuvwxyz"
KINDS = ["doc", "code", "few_shot", "chat", "retrieval", "counting", "copy_list", "facts_prose", "declaration"]
BASE_WEIGHTS = [36, 10, 20, 16, 6, 4, 4, 3, 1]
SKILL_WEIGHTS = [12, 4, 30, 20, 8, 5, 14, 5, 2]  # second phase: mostly the skills, some prose


def load_blocks(name: str) -> list[str]:
    with gzip.open(os.path.join(HERE, "data", name), "rb") as fh:
        return fh.read().decode("ascii").split(SEP)


class Corpus:
    """An endless, seeded stream of training documents."""

    def __init__(self, seed: int, skills: bool = False) -> None:
        self.rng = random.Random(seed)
        self.weights = SKILL_WEIGHTS if skills else BASE_WEIGHTS
        self.docs = load_blocks("stdlib-docs.txt.gz")
        self.code = load_blocks("stdlib-code.txt.gz")
        words = re.findall(r"\b[a-z]{3,9}\b", " ".join(self.docs[:3000]))
        counts: dict[str, int] = {}
        for w in words:
            counts[w] = counts.get(w, 0) + 1
        self.words = sorted(w for w, n in counts.items() if n >= 5)

    # ---- question/answer skills -------------------------------------------------------
    def copy_string(self) -> str:
        r = self.rng
        kind = r.randrange(4)
        if kind == 0:
            return (f"{''.join(r.choices(LETTERS, k=3))}-{r.randrange(1000, 10000)}-"
                    f"{''.join(r.choices(LETTERS, k=3))}")
        if kind == 1:
            return " ".join(r.sample(self.words, r.randint(2, 5)))
        if kind == 2:
            return " ".join([*r.sample(self.words, 2), str(r.randrange(10, 10000))])
        return "".join(r.choices(LETTERS + "0123456789", k=r.randint(4, 10)))

    def qa(self) -> tuple[str, str]:
        r = self.rng
        kind = r.choices(["copy", "add", "sub", "mul", "next", "seq", "day", "month", "capital",
                          "fact"], weights=[20, 16, 8, 6, 6, 6, 3, 3, 16, 16])[0]
        if kind == "copy":
            s = self.copy_string()
            return r.choice(["Repeat exactly: ", "Repeat after me: ", "Copy this: "]) + s, s
        if kind == "add":
            a, b = r.randrange(0, 100), r.randrange(0, 100)
            return r.choice([f"What is {a} + {b}?", f"What is {a} plus {b}?"]), str(a + b)
        if kind == "sub":
            a = r.randrange(1, 100)
            b = r.randrange(0, a + 1)
            return r.choice([f"What is {a} - {b}?", f"What is {a} minus {b}?"]), str(a - b)
        if kind == "mul":
            a, b = r.randrange(1, 13), r.randrange(1, 13)
            return r.choice([f"What is {a} * {b}?", f"What is {a} times {b}?"]), str(a * b)
        if kind == "next":
            n = r.randrange(0, 1000)
            return f"What number comes after {n}?", str(n + 1)
        if kind == "seq":
            n, step = r.randrange(0, 200), r.choice([1, 1, 1, 2, 5, 10])
            seq = ", ".join(str(n + i * step) for i in range(4))
            return f"What comes next: {seq}, ?", str(n + 4 * step)
        if kind == "day":
            i = r.randrange(7)
            return f"What day comes after {DAYS[i]}?", DAYS[(i + 1) % 7]
        if kind == "month":
            i = r.randrange(12)
            return f"What month comes after {MONTHS[i]}?", MONTHS[(i + 1) % 12]
        if kind == "capital":
            country = r.choice(sorted(CAPITALS))
            return f"What is the capital of {country}?", CAPITALS[country]
        question, answer, _ = r.choice(FACTS)
        return question, answer

    def few_shot(self) -> str:
        pairs = [self.qa() for _ in range(self.rng.randint(1, 5))]
        return "".join(f"Q: {q}\nA: {a}\n" for q, a in pairs)

    def chat(self) -> str:
        r = self.rng
        turns = []
        for _ in range(r.randint(1, 3)):
            if r.random() < 0.25:
                q, a = self.explain()
            else:
                q, a = self.qa()
                q += r.choice(["", "", " Reply briefly.", " Answer with the answer only."])
            turns.append(f"{IM_START}user\n{q}{IM_END}\n{IM_START}assistant\n{a}{IM_END}\n")
        return "".join(turns)

    def explain(self) -> tuple[str, str]:
        doc = self.rng.choice(self.docs)
        name, _, body = doc.partition(": ")
        first = body.split("\n\n")[0][:600]
        prompt = self.rng.choice([f"Explain what {name} does.", f"Describe {name}.",
                                  f"Write a few sentences about {name}."])
        return prompt, first

    # ---- other document kinds -----------------------------------------------------------
    def retrieval(self) -> str:
        r = self.rng
        filler = []
        while sum(map(len, filler)) < r.randrange(200, 1400):
            filler.append(r.choice(self.docs).partition(": ")[2].split("\n\n")[0][:400])
        if r.random() < 0.7:
            n = str(r.randrange(1000, 10000))
            key, fact, q = n, f"The secret number is {n}.", "What is the secret number?"
        else:
            w = r.choice(self.words)
            key, fact, q = w, f"The secret word is {w}.", "What is the secret word?"
        filler.insert(r.randrange(len(filler) + 1), fact)
        return "\n\n".join(filler) + f"\n\nQ: {q}\nA: {key}\n"

    def counting(self) -> str:
        r = self.rng
        start, step = r.randrange(0, 100), r.choice([1, 1, 2, 3, 5, 10])
        nums = ", ".join(str(start + i * step) for i in range(r.randint(10, 60)))
        if r.random() < 0.3:
            names = DAYS if r.random() < 0.5 else MONTHS
            i = r.randrange(len(names))
            nums = ", ".join(names[(i + k) % len(names)] for k in range(r.randint(5, 20)))
        return nums + "\n"

    def copy_list(self) -> str:
        words = " ".join(self.rng.choices(self.words, k=self.rng.randint(8, 40)))
        return f"Here is a list of words: {words}.\nHere is the same list again: {words}.\n"

    def facts_prose(self) -> str:
        r = self.rng
        lines = []
        for _ in range(r.randint(2, 6)):
            if r.random() < 0.5:
                country = r.choice(sorted(CAPITALS))
                lines.append(f"The capital of {country} is {CAPITALS[country]}.")
            elif r.random() < 0.5:
                lines.append(r.choice(FACTS)[2])
            else:
                a, b = r.randrange(100), r.randrange(100)
                lines.append(f"{a} + {b} = {a + b}.")
        return " ".join(lines) + "\n"

    def document(self) -> str:
        r = self.rng
        kind = r.choices(KINDS, weights=self.weights)[0]
        if kind == "doc":
            return r.choice(self.docs).partition(": ")[2] + "\n"
        if kind == "code":
            return r.choice(self.code) + "\n"
        if kind == "declaration":
            return DECLARATION + "\n"
        return getattr(self, kind)()

    def stream(self):
        while True:
            yield self.document()
