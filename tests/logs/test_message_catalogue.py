"""The log reader held against vLLM's own messages (the catalogue generated from its source).

- every catalogue message the reader maps still matches the same rule (data/vllm_message_rules.json
  is the mapping as committed: a rule edited so that it stops matching a message vLLM prints,
  or a regenerated catalogue whose wording moved, fails here with the messages named);
- every rule that reads vLLM's own logger is backed by at least one message of the catalogue;
- a real vLLM 0.32 start (recorded from the CPU build) prints only messages the catalogue holds.
"""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path

from sparktriage.logs import catalog, messages
from sparktriage.logs.lineformat import parse_line

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "logs"

# Rules whose shapes the catalogue cannot hold: they say whose they are (catalog.Rule.speaker);
# these read another speaker than vLLM's Python logger of 0.10-0.32, or print no one format.
NOT_IN_CATALOGUE = {
    "version.logo", "model.logo", "args.namespace", "resolve.download", "resolve.lock",
    "load.shards", "load.done_v0", "kv.memory_profile_v0", "kv.blocks_v0", "graphs.v0",
    "jit.autotune", "jit.cold", "jit.cutedsl", "fail.c10d", "ready.complete",
    "jit.autotune_bar", "kernel.prepare_finalize", "kernel.rejected",
}


def _committed() -> dict[str, list[str]]:
    raw = resources.files("sparktriage.logs").joinpath("data/vllm_message_rules.json").read_text(
        encoding="utf-8")
    return json.loads(raw)["mapped"]


def test_catalogue_covers_the_releases_it_names():
    cat = messages.catalogue()
    assert cat.releases[0] == "0.10.0" and cat.releases[-1] == "0.32.0"
    for release in ("0.10.0", "0.14.0", "0.20.0", "0.32.0"):
        assert release in cat.releases
        # the per-release size the generator counted is what the ranges give back
        assert len(cat.in_release(release)) == cat.size_per_release[release]
    assert cat.size_per_release["0.32.0"] > 2500  # about 3,200 logger calls in 0.32


def test_formats_become_patterns_that_read_their_own_samples():
    cat = messages.catalogue()
    for message in cat.messages[::7]:
        text = message.sample("model")
        assert message.matches(text.strip()), (message.id, message.fmt)
        if len(message.anchor) >= 4:  # a format of holes alone is not looked up by text
            assert messages.catalogue().find(text) is not None, (message.id, message.fmt)


def test_every_mapped_message_still_matches_its_rule():
    committed = _committed()
    by_id = {m.id: m for m in messages.catalogue().messages}
    lost = []
    for message_id, rule_ids in committed.items():
        message = by_id.get(message_id)
        assert message is not None, f"{message_id} is mapped but not in the catalogue"
        now = messages.rules_for(message)
        for rule_id in rule_ids:
            if rule_id not in now:
                lost.append(f"{message.module}: {message.fmt!r} no longer matches {rule_id}")
    assert not lost, "mapped messages that stopped matching:\n" + "\n".join(lost)


def test_the_committed_mapping_is_the_current_one():
    # a new rule or a regenerated catalogue that maps more is committed with its mapping
    assert messages.mapping() == _committed()


def test_every_vllm_rule_is_backed_by_the_catalogue():
    mapped_rules = {rule for rules in _committed().values() for rule in rules}
    unbacked = [rule.id for rule in catalog.RULES
                if rule.id not in mapped_rules and rule.id not in NOT_IN_CATALOGUE]
    assert not unbacked, f"rules matching no message vLLM 0.10-0.32 prints: {unbacked}"
    # a rule the catalogue does not back says whose shape it reads
    for rule_id in NOT_IN_CATALOGUE:
        assert catalog.RULES_BY_ID[rule_id].speaker != catalog.VLLM, rule_id


def test_a_real_start_prints_only_catalogued_messages():
    cat = messages.catalogue()
    seen = found = 0
    missing = []
    for path in sorted(FIXTURES.glob("vllm-cpu-*.log")):
        for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
            fields = parse_line(line)
            if fields.kind != "vllm" or not fields.message.strip():
                continue
            if fields.message.startswith(("\t", " ", "Traceback", "File ")) \
                    or "\u2588" in fields.message:
                continue  # continuation lines of a multi-line message, the logo, tracebacks
            seen += 1
            if cat.find(fields.message) is not None:
                found += 1
            else:
                missing.append(fields.message[:120])
    assert seen > 100
    assert found / seen >= 0.95, missing[:20]
