"""Every start-up message of vLLM has a meaning, and the rules derived from the catalogue read
every format they are given.

- a start-up message of the catalogue without a line in data/message_meanings.tsv fails here
  (a regenerated catalogue names what to decide); the generated table is the current one;
- each derived rule of catalog.RULES reads every format the table gives it, each named hole
  into its group (the value printed comes back);
- a reworded message is read once the table holds its format (a release is a regeneration).
"""

from __future__ import annotations

import re
from importlib import resources

import pytest

from sparktriage.logs import catalog, meanings, messages


def _built():
    hand = meanings.parse_hand(meanings.hand_text())
    return meanings.build(messages.catalogue(), hand)


def test_every_startup_message_has_a_meaning():
    _, undecided, _ = _built()
    assert not undecided, "start-up messages without a meaning:\n" + "\n".join(
        repr(f) for f in undecided[:40])
    pool = [m for m in messages.catalogue().messages if meanings.in_pool(m)]
    decided = {e.id for e in meanings.table()}
    assert len(pool) > 900 and all(m.id in decided for m in pool)


def test_the_hand_table_names_only_catalogued_formats():
    _, _, stale = _built()
    assert not stale, stale[:20]


def test_the_committed_table_is_the_current_one():
    entries, _, _ = _built()
    committed = resources.files("sparktriage.logs").joinpath(meanings.TABLE).read_text(
        encoding="utf-8")
    assert meanings.dump(entries) == committed, "run scripts/vllm_message_meanings.py"


def _filled(fmt: str) -> tuple[str, list[str]]:
    """The format's first line with each hole given a distinct value, and the values."""
    values: list[str] = []

    def one(m: re.Match) -> str:
        if m["type"] == "%":
            return "%"
        i = len(values)
        value = str(40 + i) if m["type"] in "dioxXu" else \
            f"{40 + i}.25" if m["type"] in "feEgGs" and i % 2 == 0 else f"{40 + i}.75"
        values.append(value)
        return value
    return meanings.CONVERSION.sub(one, meanings.head(fmt)), values


DERIVED = [rule for rule in catalog.RULES if rule.derived]


def test_most_phase_anchors_and_every_stated_duration_are_derived():
    stated = {"reported.loading_weights", "reported.model_loading", "reported.torch_compile",
              "reported.compile_and_warmup", "reported.graph_capture", "reported.init_engine",
              "load.init_model", "kv.memory_profiling", "storage.prefetch_done", "compile.graph",
              "compile.dynamo", "compile.cache_hit", "compile.warmup_run",
              "reported.online_quantization", "reported.encoder_graph_capture",
              "compile.cache_save", "reported.weights_download"}
    assert stated <= {rule.id for rule in DERIVED}
    anchors = [rule for rule in catalog.RULES if rule.phase and rule.speaker == catalog.VLLM]
    assert sum(rule.derived > 0 for rule in anchors) / len(anchors) >= 0.7


@pytest.mark.parametrize("rule", DERIVED, ids=lambda r: r.id)
def test_a_derived_rule_reads_every_format_it_is_given(rule):
    formats = meanings.formats_for(rule.id)
    assert formats
    for fmt, holes in formats:
        assert holes is not None, f"{rule.id} derives from {fmt!r}: name its holes in the table"
        text, values = _filled(fmt)
        hits = [h for h in catalog.match_message(text) if h.id == rule.id]
        assert hits, f"{rule.id} does not read {text!r}"
        for name, value in zip(holes or (), values):
            if name in ("_", "tag"):
                continue
            got = hits[0].match.group(name)
            if name in meanings.NUMBERS:
                assert hits[0].num(name) == float(value), (rule.id, fmt, name)
            else:
                assert got == value, (rule.id, fmt, name, got)


def test_every_derived_pattern_defines_the_rule_groups():
    for rule in DERIVED:
        names = [set(p.groupindex) for p in rule.patterns]
        assert all(n == names[0] for n in names), rule.id


def test_meanings_agree_with_the_rules_that_read_them():
    for entry in meanings.table():
        for use in entry.rules:
            rule = catalog.RULES_BY_ID.get(use.rule)
            assert rule is not None, f"{entry.fmt!r} names an unknown rule {use.rule}"
            if entry.meaning.startswith("phase:"):
                assert rule.phase == entry.meaning.split(":", 1)[1], (entry.fmt, rule.id)
            if entry.meaning.startswith("duration:") and rule.derived:
                assert "s" in rule.patterns[0].groupindex, (entry.fmt, rule.id)


def test_a_reworded_release_is_a_regeneration():
    # a new release's wording: the generated pattern reads it with the same groups
    pattern = re.compile(meanings.derived_pattern(
        "Weights loaded from disk in %.3f secs (%s)", ("s", "_"), ("s",)))
    found = pattern.search("Weights loaded from disk in 731.125 secs (safetensors)")
    assert found and float(found["s"]) == 731.125
    # a message the hand table does not decide is named by the generator, not guessed
    cat = messages.catalogue()
    new = messages.Message("feedbeef00", "log", "INFO", "vllm.v1.worker.gpu_worker",
                           "Pinned %d host buffers for the weights", ("0.33.0",))
    grown = messages.Catalogue(cat.releases, cat.size_per_release, cat.messages + (new,))
    _, undecided, _ = meanings.build(grown, meanings.parse_hand(meanings.hand_text()))
    assert undecided == [new.fmt]


def test_a_regenerated_table_gives_a_rule_the_new_wording():
    # the whole path of a new release: catalogue entry -> hand line -> generated patterns
    import json
    cat = messages.catalogue()
    reworded = messages.Message("feedbeef01", "log", "INFO",
                                "vllm.model_executor.model_loader.default_loader",
                                "Weights loaded in %.2f s from %s", ("0.33.0",))
    grown = messages.Catalogue(cat.releases, cat.size_per_release, cat.messages + (reworded,))
    hand = meanings.hand_text() + ('duration:weights_load:s\treported.loading_weights(s,_)\t'
                                   '"Weights loaded in %.2f s from %s"\n')
    entries, undecided, stale = meanings.build(grown, meanings.parse_hand(hand))
    assert not undecided and not stale
    patterns = json.loads(meanings.dump_patterns(entries))["patterns"]["reported.loading_weights"]
    found = [re.search(p, "Weights loaded in 731.25 s from /models/big-moe") for p, _ in patterns]
    assert [float(m["s"]) for m in found if m] == [731.25]
    # the committed patterns are these, less the new wording
    assert [(p, tuple(n)) for p, n in patterns[:-1]] == \
        meanings.derived_sources()["reported.loading_weights"]


@pytest.mark.parametrize("line, problem", [
    ('phase:nowhere\t-\t"x"', "unknown meaning"),
    ('nothing\t-\tnot json', "not a JSON string"),
    ('nothing\tfoo.bar(a,b)\t"only %d"', "names 2 holes"),
    ('nothing\t-', "want meaning"),
])
def test_a_malformed_hand_line_is_named(line, problem):
    with pytest.raises(meanings.TableError, match=problem) as err:
        meanings.parse_hand("# head\n" + line + "\n")
    assert "line 2" in str(err.value)


STATED = """\
INFO 05-10 10:00:00 [api_server.py:1] vLLM API server version 0.32.0
INFO 05-10 10:00:05 [gpu_model_runner.py:1] Starting to load model /models/big-moe...
INFO 05-10 10:03:10 [weight_utils.py:1] Time spent downloading weights for /models/big-moe: 180.250000 seconds
INFO 05-10 10:09:00 [default_loader.py:1] Loading weights took 350.10 seconds
INFO 05-10 10:16:00 [base_loader.py:1] Online quantization as part of model loading took 412.50 seconds
INFO 05-10 10:16:01 [gpu_model_runner.py:1] Model loading took 40.5 GiB and 955.000000 seconds
INFO 05-10 10:17:30 [backends.py:1] Saved compiler manager cache in 2.75 seconds.
INFO 05-10 10:19:00 [mm_encoder_model_runner.py:1] Encoder graph capturing finished in 37 secs, took 0.52 GiB (12 graphs)
"""


def test_the_stated_durations_of_the_catalogue_reach_the_document(tmp_path):
    from sparktriage.logs.scan import analyze_inputs
    log = tmp_path / "stated.log"
    log.write_text(STATED, encoding="utf-8")
    for fast in (True, False):
        doc = analyze_inputs([str(log)], fast=fast)
        assert doc["reported"] == {
            "weights_download_s": 180.25, "loading_weights_s": 350.1,
            "online_quantization_s": 412.5, "model_loading_s": 955.0, "model_loading_gib": 40.5,
            "encoder_graph_capture_s": 37.0}
        names = [p["name"] for p in doc["phases"]]
        assert names[:4] == ["resolve", "weight_read", "post_load", "compile"]
