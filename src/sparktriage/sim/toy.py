"""A toy language model behind the simulator's completion APIs, for the garbage probe's tests.

Word-level tokens (" word" pieces with stable ids); a toy model that scores a token as likely
when the same bigram appeared earlier in the prompt or in its built-in knowledge (so copy and
count passages are easy and shuffled text is hard), answers the known-answer probes like an
oracle and writes plain sentences for open prompts. The same scoring function serves
generation logprobs and prompt logprobs, so decode and prefill agree. `ToyConfig` switches on
the faults: refused prompt_logprobs or echo, a logprob cap, NaN / -Infinity literals, HTTP 500
on logprob requests, no chat template, a reasoning model, empty chat content, a broken chat
path, wrong answers under concurrency, and garbage output. The simulator answers every
completion request with it when its configuration has a `toy` section (docs/simulator.md).
"""

from __future__ import annotations

import json
import math
import random
import re
import zlib

from pydantic import BaseModel, ConfigDict, Field

from sparktriage.probe.passages import CANARY, CODE, EXPLAIN, PROSE

KNOWLEDGE = " ".join([PROSE, EXPLAIN, CODE, CANARY, ", ".join(str(i) for i in range(1, 200))])
FACTS = {"capital of france": "Paris", "capital of japan": "Tokyo", "capital of italy": "Rome",
         "days are in a week": "7", "water freeze": "0", "color is the sky": "blue",
         "legs does a spider": "8", "legs does a dog": "4"}
DAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]
SALAD = ["onacho", "mixie", "mitcy", "无法", "◆", "新长度", "\ufffd", "rno", "/Dk", "qz", "ж", "Ω", "tq"]
WRONG = {"Paris": "Berlin", "Tokyo": "Seoul", "7": "5", "0": "100", "blue": "green", "8": "6"}
SENTENCE = ("It is a place where people meet, read and learn new things, and most of them come "
            "back often because they like the quiet rooms and the friendly staff.")


class ToyConfig(BaseModel):
    """Faults of the toy model (all off: a healthy server)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    no_prompt_logprobs: bool = False
    no_echo: bool = False
    max_logprobs: int = Field(20, ge=0)
    nan_literals: bool = Field(False, description="NaN / -Infinity inside logprob JSON")
    logprob_500: bool = Field(False, description="HTTP 500 whenever logprobs are asked for")
    no_chat_template: bool = False
    reasoning: bool = Field(False, description="chat answers go to `reasoning`, content stays null")
    empty_chat: bool = Field(False, description="chat content and reasoning null")
    broken_chat: bool = Field(False, description="chat answers are wrong, completions fine")
    burst_bug: bool = Field(False, description="wrong answers while 4 or more requests are in flight")
    garbage: str | None = Field(None, description="every generation is this text repeated")
    no_token_ids: bool = False
    fluent_wrong: bool = Field(False, description="plausible wrong answers; known text a little less likely")
    uniform: bool = Field(False, description="every logprob -ln(32000), the answer is token 0 ('!')")
    salad: bool = Field(False, description="token salad: fragments of several scripts, no repeats")
    delay_s: float = Field(0.02, ge=0, le=60, description="time each answer takes (requests overlap)")


def tokens_of(text: str) -> list[str]:
    return re.findall(r"\s*\S+|\s+$", text)


def token_id(tok: str) -> int:
    return zlib.crc32(tok.encode()) % 50000 + 10


class ToyModel:
    def __init__(self) -> None:
        self.vocab: dict[int, str] = {}
        self.uniform = False
        self.shifted = False
        self.known = self._bigrams(tokens_of(KNOWLEDGE))

    @staticmethod
    def _bigrams(toks: list[str]) -> set[tuple[str, str]]:
        return {(a.strip(), b.strip()) for a, b in zip(toks, toks[1:])}

    def ids(self, toks: list[str]) -> list[int]:
        out = []
        for t in toks:
            i = token_id(t)
            self.vocab[i] = t
            out.append(i)
        return out

    def logprob(self, context: list[str], tok: str) -> tuple[float, list[tuple[str, float]]]:
        """Logprob of `tok` after `context`, and the top list (best first)."""
        if self.uniform:
            u = -math.log(32000)
            return u, [(tok, u), (" the", u), (" and", u)]
        seen = self._bigrams(context) | self.known
        if context and (context[-1].strip(), tok.strip()) in seen:
            if self.shifted:
                return -0.9, [(" the", -0.8), (tok, -0.9), (" and", -3.5)]
            return -0.1, [(tok, -0.1), (" the", -3.0), (" and", -3.5)]
        return -2.5, [(tok, -2.5), (" the", -3.0), (" and", -3.5)]


def oracle(question: str) -> str:
    q = question.lower()
    if m := re.search(r"repeat exactly: (.+?)(?: answer with|$)", question, re.I | re.S):
        return m.group(1).strip()
    if m := re.search(r"what is (\d+) ([-+*]) (\d+)", q):
        a, op, b = int(m[1]), m[2], int(m[3])
        return str(a + b if op == "+" else a - b if op == "-" else a * b)
    if m := re.search(r"comes after (\d+)", q):
        return str(int(m[1]) + 1)
    if m := re.search(r"next: ([\d, ]+)", q):
        return str(int(m[1].split(",")[-2]) + 1)
    if m := re.search(r"day comes after (\w+)", q):
        return DAYS[(DAYS.index(m[1].capitalize()) + 1) % 7]
    if m := re.search(r"secret number is (\d+)", question):
        return m[1]
    for key, value in FACTS.items():
        if key in q:
            return value
    return SENTENCE


class Toy:
    """The toy model's answers to completion requests (thread-safe)."""

    def __init__(self, config: ToyConfig | None = None) -> None:
        self.config = config or ToyConfig()
        self.model = ToyModel()
        self.model.uniform = self.config.uniform
        self.model.shifted = self.config.fluent_wrong
        self.salad_seed = 0

    def _refuse(self, body: dict) -> tuple[int, dict] | None:
        cfg = self.config
        wants = body.get("logprobs") or body.get("prompt_logprobs") is not None
        if cfg.logprob_500 and wants:
            return 500, {"error": {"message": "Internal Server Error: Out of range float values are not JSON compliant"}}
        if cfg.no_prompt_logprobs and "prompt_logprobs" in body:
            return 400, {"error": {"message": "prompt_logprobs is not supported by this server"}}
        if cfg.no_echo and body.get("echo"):
            return 400, {"error": {"message": "echo is not supported"}}
        for key in ("prompt_logprobs", "top_logprobs", "logprobs"):
            value = body.get(key)
            if isinstance(value, int) and not isinstance(value, bool) and value > cfg.max_logprobs:
                return 400, {"error": {"message": f"Requested {key} of {value}, which is greater than max allowed: {cfg.max_logprobs}"}}
        return None

    def handle(self, path: str, body: dict, busy: int) -> tuple[int, object]:
        refused = self._refuse(body)
        if refused:
            return refused
        if path == "/v1/completions":
            return 200, self._dump(self.completion(body, busy))
        if path == "/v1/chat/completions":
            if self.config.no_chat_template:
                return 400, {"error": {"message": "As of transformers v4.44, default chat template is no longer allowed, so you must provide a chat template if the tokenizer does not define one."}}
            return 200, self._dump(self.chat(body, busy))
        return 404, {"error": {"message": "not found"}}

    def _dump(self, doc: dict) -> str:
        text = json.dumps(doc)
        if self.config.nan_literals:
            text = text.replace("-2.5", "NaN").replace("-0.1", "-Infinity")
        return text

    def _answer(self, prompt: str, busy: int, chat: bool) -> str:
        if self.config.garbage is not None:
            return self.config.garbage * 40
        if self.config.uniform:
            return "!" * 40
        if self.config.salad:
            self.salad_seed += 1
            rng = random.Random(self.salad_seed)
            return " ".join(rng.choice(SALAD) + rng.choice(SALAD) for _ in range(30))
        question = prompt.rsplit("Q:", 1)[-1] if not chat else prompt
        if "secret number" in prompt:
            question = prompt
        answer = oracle(question)
        if (self.config.burst_bug and busy >= 4) or (chat and self.config.broken_chat):
            answer = "purple elephant 3"
        if self.config.fluent_wrong:
            answer = WRONG.get(answer, answer + " and 2" if answer != SENTENCE else SENTENCE)
        return answer

    def _generate(self, context: list[str], answer: str, k: int | None):
        out = tokens_of((" " if not answer.startswith(" ") else "") + answer)
        entries = []
        ctx = list(context)
        for tok in out:
            lp, top = self.model.logprob(ctx, tok)
            top = sorted(top, key=lambda kv: -kv[1])
            entries.append((tok, lp, top[:k] if k else top))
            ctx.append(tok)
        return out, entries

    def _prompt_logprobs(self, toks: list[str], k: int) -> list:
        ids = self.model.ids(toks)
        out: list = [None]
        for i in range(1, len(toks)):
            lp, top = self.model.logprob(toks[:i], toks[i])
            entry = {str(ids[i]): {"logprob": lp, "rank": 1 + sum(1 for _, v in top if v > lp), "decoded_token": toks[i]}}
            for rank, (t, v) in enumerate(sorted(top, key=lambda kv: -kv[1])[:k], start=1):
                entry.setdefault(str(token_id(t)), {"logprob": v, "rank": rank, "decoded_token": t})
            out.append(entry)
        return out

    def completion(self, body: dict, busy: int) -> dict:
        prompt = body["prompt"]
        toks = [self.model.vocab.get(i, " ?") for i in prompt] if isinstance(prompt, list) else tokens_of(prompt)
        text = "".join(toks)
        ids = self.model.ids(toks)
        answer = self._answer(text, busy, chat=False)
        out, entries = self._generate(toks, answer, None)
        max_tokens = body.get("max_tokens", 16)
        out, entries = out[:max_tokens], entries[:max_tokens]
        choice: dict = {"index": 0, "text": "".join(out), "finish_reason": "stop"}
        k = body.get("logprobs")
        if isinstance(k, int) and not isinstance(k, bool):
            lp = {"tokens": [e[0] for e in entries], "token_logprobs": [e[1] for e in entries],
                  "top_logprobs": [{t: v for t, v in e[2][:k]} | {e[0]: e[1]} for e in entries],
                  "text_offset": []}
            if body.get("echo"):
                plp = self._prompt_logprobs(toks, k)
                lp = {"tokens": toks + lp["tokens"],
                      "token_logprobs": [None] + [next(iter(e.values()))["logprob"] for e in plp[1:]] + lp["token_logprobs"],
                      "top_logprobs": [None] + [{v["decoded_token"]: v["logprob"] for v in e.values()} for e in plp[1:]] + lp["top_logprobs"],
                      "text_offset": []}
                choice["text"] = text + choice["text"]
            choice["logprobs"] = lp
        if body.get("prompt_logprobs") is not None:
            choice["prompt_logprobs"] = self._prompt_logprobs(toks, body["prompt_logprobs"])
        if body.get("return_token_ids") and not self.config.no_token_ids:
            choice["token_ids"] = self.model.ids(out)
            choice["prompt_token_ids"] = ids
        return {"id": "cmpl-toy", "object": "text_completion", "model": body.get("model"), "choices": [choice],
                "usage": {"prompt_tokens": len(toks), "completion_tokens": len(out),
                          "total_tokens": len(toks) + len(out)}}

    def chat(self, body: dict, busy: int) -> dict:
        content = body["messages"][-1]["content"]
        toks = tokens_of(f"<user> {content} <assistant>")
        answer = self._answer(content, busy, chat=True)
        out, entries = self._generate(toks, answer, None)
        out, entries = out[:body.get("max_tokens", 64)], entries[:body.get("max_tokens", 64)]
        message: dict = {"role": "assistant", "content": "".join(out).strip()}
        if self.config.reasoning:
            message = {"role": "assistant", "content": None, "reasoning": "Let me think. " + "".join(out).strip()}
        if self.config.empty_chat:
            message = {"role": "assistant", "content": None, "reasoning": None}
        choice: dict = {"index": 0, "message": message, "finish_reason": "stop"}
        if body.get("logprobs"):
            k = body.get("top_logprobs") or 0
            choice["logprobs"] = {"content": [{"token": t, "logprob": v, "top_logprobs": [
                {"token": a, "logprob": b} for a, b in top[:k]]} for t, v, top in entries]}
        doc = {"id": "chat-toy", "object": "chat.completion", "model": body.get("model"), "choices": [choice],
               "usage": {"prompt_tokens": len(toks), "completion_tokens": len(out),
                         "total_tokens": len(toks) + len(out)}}
        if body.get("return_token_ids") and not self.config.no_token_ids:
            choice["token_ids"] = self.model.ids(out)
            doc["prompt_token_ids"] = self.model.ids(toks)
        return doc
