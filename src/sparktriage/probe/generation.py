"""Family D, statistics of open-ended generations (greedy, a few sentences each).

A generation is flagged for a collapse into a short repeating fragment (F1), a flood of one
character or of token id 0 (`!!!!`, F2), replacement/control characters or words mixing scripts
(F4), mostly non-words in an English answer (F4, only with a system word list), or an empty
answer although tokens were generated and no reasoning text came (F7). One or two flagged
generations out of five are weak evidence, three or more strong. Repeated sentences, lists and
code are not flags: greedy decoding of healthy small models does that.
"""

from __future__ import annotations

from sparktriage.probe.answers import answer_text
from sparktriage.probe.family import GARBAGE, SUSPECT, FamilyResult, skipped
from sparktriage.probe.observations import Observations
from sparktriage.probe.textstats import analyse, wordlist

STRONG_FLAGGED = 3
FLAG_PATTERN = {"short-loop": "F1", "highly-compressible": "F1", "one-character-flood": "F1", "exclamation-flood": "F2",
                "token-0-flood": "F2", "replacement-or-control-characters": "F4",
                "mixed-script-words": "F4", "non-words": "F4", "empty-content": "F7"}


def evaluate(obs: Observations) -> FamilyResult:
    rows = []
    for i, prompt in enumerate(obs.open_prompts):
        reply = obs.get(f"D:{i}")
        if reply is None or not reply.ok:
            continue
        text, how = answer_text(reply)
        stats = analyse(text if how != "reasoning" else text, prose=True)
        flags = list(stats.flags)
        ids = reply.choice.get("token_ids")
        if isinstance(ids, list) and len(ids) >= 8 and sum(1 for t in ids if t == 0) >= 0.5 * len(ids):
            flags.append("token-0-flood")
        tokens = ((reply.doc or {}).get("usage") or {}).get("completion_tokens") or 0
        if how == "empty" and tokens > 0:
            flags.append("empty-content")
        rows.append({"prompt": prompt[:60], "read_from": how, "flags": flags, "chars": stats.chars,
                     "zlib_ratio": stats.zlib_ratio, "distinct2": stats.distinct2,
                     "loop_period": stats.loop_period, "dictionary_ratio": stats.dictionary_ratio,
                     "excerpt": (text or "")[:160]})
    if not rows:
        return skipped("generation", "no open-ended generation succeeded")
    result = FamilyResult("generation")
    flagged = [r for r in rows if r["flags"]]
    result.numbers = {"generations": len(rows), "flagged": len(flagged), "rows": rows,
                      "wordlist": wordlist() is not None}
    if wordlist() is None:
        result.evidence.append("no system word list (/usr/share/dict/words): dictionary check not run")
    if flagged:
        worst = flagged[0]
        status = GARBAGE if len(flagged) >= STRONG_FLAGGED else SUSPECT
        hints = {FLAG_PATTERN[f] for r in flagged for f in r["flags"]}
        result.raise_to(status, f"{len(flagged)}/{len(rows)} generations flagged ({', '.join(worst['flags'])}); "
                        f"e.g. {worst['excerpt'][:80]!r}", *sorted(hints))
    else:
        result.evidence.append(f"{len(rows)} generations look like text (no loops, floods or broken characters)")
    return result
