"""Family C, known-answer probes: does the model answer trivial questions?

Scored on the sequential completions pass (two-shot "Q: / A:"): at most 7 of 24 passed is
strong evidence (a working model passes about 70 % or more; a broken one passes only by luck),
8-16 weak. The chat pass is reported beside it: chat answers empty while tokens were spent
(F7), or a chat pass far worse than the completions pass (template or tokenizer trouble, F8),
is evidence too (strong when the chat pass is as bad as garbage). Long-context probes failing while short ones pass point at F6.
"""

from __future__ import annotations

from sparktriage.probe.family import GARBAGE, SUSPECT, FamilyResult, skipped
from sparktriage.probe.knowns import score
from sparktriage.probe.observations import Observations

STRONG_MAX_SHARE, WEAK_MAX_SHARE = 7 / 24, 16 / 24


def answer_text(reply) -> tuple[str | None, str]:
    """(the answer text or None when no answer came, how it was read)."""
    if reply is None or not reply.ok:
        return None, "error"
    choice = reply.choice
    if "message" in choice:
        message = choice.get("message") or {}
        content = message.get("content")
        if content:
            return str(content), "content"
        reasoning = message.get("reasoning") or message.get("reasoning_content")
        if reasoning:
            return str(reasoning), "reasoning"
        return "", "empty"
    text = choice.get("text")
    return (str(text), "text") if text is not None else ("", "empty")


def pass_results(obs: Observations, prefix: str, chat_only: bool = False) -> dict[str, dict]:
    out = {}
    for probe in obs.probes:
        if chat_only and not probe.chat:
            continue
        reply = obs.get(f"{prefix}{probe.id}")
        if reply is None:
            continue
        text, how = answer_text(reply)
        out[probe.id] = {"kind": probe.kind, "passed": bool(text) and score(probe, text),
                         "answer": (text or "")[:120], "read_from": how,
                         "completion_tokens": ((reply.doc or {}).get("usage") or {}).get("completion_tokens")}
    return out


def evaluate(obs: Observations) -> FamilyResult:
    seq = pass_results(obs, "C:seq:")
    chat = pass_results(obs, "C:chat:", chat_only=True)
    answered = {k: v for k, v in seq.items() if v["read_from"] != "error"}
    if not answered and not chat:
        return skipped("answers", "no probe got an answer (every request failed)")
    result = FamilyResult("answers")
    passed = sum(v["passed"] for v in answered.values())
    total = len(answered)
    by_kind: dict[str, list[int]] = {}
    for v in answered.values():
        by_kind.setdefault(v["kind"], [0, 0])
        by_kind[v["kind"]][0] += v["passed"]
        by_kind[v["kind"]][1] += 1
    chat_passed = sum(v["passed"] for v in chat.values())
    empty_chat = [k for k, v in chat.items() if v["read_from"] == "empty" and (v["completion_tokens"] or 0) > 0]
    result.numbers = {"passed": passed, "asked": total, "by_kind": {k: f"{a}/{b}" for k, (a, b) in by_kind.items()},
                      "chat_passed": chat_passed, "chat_asked": len(chat), "chat_empty": len(empty_chat),
                      "failed": {k: v["answer"] for k, v in answered.items() if not v["passed"]}}
    if total:
        share = passed / total
        line = f"{passed}/{total} known-answer probes passed"
        if share <= STRONG_MAX_SHARE:
            result.raise_to(GARBAGE, line + " (a working model passes most of them)")
        elif share <= WEAK_MAX_SHARE:
            result.raise_to(SUSPECT, line)
        else:
            result.evidence.append(line)
        short = [v for v in answered.values() if v["kind"] != "long"]
        long_ = [v for v in answered.values() if v["kind"] == "long"]
        if long_ and not any(v["passed"] for v in long_) and short and \
                sum(v["passed"] for v in short) / len(short) > WEAK_MAX_SHARE:
            result.raise_to(SUSPECT, "long-context retrieval failed while short probes pass", "F6")
    else:
        result.evidence.append("the completions pass did not run; scored on chat only")
    if chat:
        chat_share = chat_passed / len(chat)
        burst = pass_results(obs, "C:burst:")
        burst_share = (sum(v["passed"] for v in burst.values()) / len(burst)) if burst else None
        line = f"chat: {chat_passed}/{len(chat)} passed"
        completions_fine = total and passed / total > WEAK_MAX_SHARE and (burst_share is None or burst_share > WEAK_MAX_SHARE)
        if len(empty_chat) >= max(2, len(chat) // 2):
            status = GARBAGE if chat_share <= STRONG_MAX_SHARE else SUSPECT
            result.raise_to(status, line + f"; {len(empty_chat)} chat answers empty although tokens were "
                            "generated (no content, no reasoning)", "F7")
        elif completions_fine and chat_share <= STRONG_MAX_SHARE:
            # Same questions, same concurrency: only the chat path (template, tokenizer, parser) differs.
            result.raise_to(GARBAGE, line + f" while completions pass {passed}/{total}: the chat path "
                            "(template, tokenizer, parser) is wrong", "F8")
        elif completions_fine and chat_share <= WEAK_MAX_SHARE - 0.25:
            result.raise_to(SUSPECT, line + f" while completions pass {passed}/{total}", "F8")
        else:
            result.evidence.append(line)
        if not total:
            if chat_share <= STRONG_MAX_SHARE:
                result.raise_to(GARBAGE, f"{chat_passed}/{len(chat)} chat probes passed")
            elif chat_share <= WEAK_MAX_SHARE:
                result.raise_to(SUSPECT, f"{chat_passed}/{len(chat)} chat probes passed")
    return result
