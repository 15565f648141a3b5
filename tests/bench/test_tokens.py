"""Delivered-token accounting: the best exact source, every disagreement flagged."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from sparktriage.bench.tokens import account


def chunk(t=0.0, ids=None, lp=None, usage=None, text="", finish=None):
    return {"t": t, "ids": ids, "lp": lp, "usage": usage, "text": text, "finish": finish}


def test_token_ids_preferred_and_all_sources_totalled():
    chunks = [chunk(ids=[1, 2, 3], lp=3, usage=3, text="abc"),
              chunk(ids=[4], lp=1, usage=4, text="d")]
    acc = account(chunks, 4)
    assert acc.source == "token_ids" and acc.per_chunk == (3, 1) and acc.total == 4
    assert acc.exact_timing
    assert acc.totals == {"token_ids": 4, "logprobs": 4, "continuous_usage": 4, "final_usage": 4}
    assert acc.disagreements == ()


def test_multi_token_first_chunk():
    acc = account([chunk(ids=[1, 2, 3, 4], text="abcd"), chunk(ids=[5, 6], text="ef")], None)
    assert acc.per_chunk == (4, 2) and acc.total == 6


def test_empty_text_chunks_still_carry_tokens():
    # The detokenizer holds back partial UTF-8: the ids arrive with an empty text.
    chunks = [chunk(ids=[1], text="a"), chunk(ids=[2, 3], text=""), chunk(ids=[4], text="\u00e9bc")]
    acc = account(chunks, 4)
    assert acc.per_chunk == (1, 2, 1) and acc.total == 4 and acc.disagreements == ()


def test_chat_role_chunk_counts_zero():
    chunks = [chunk(text="", usage=0), chunk(ids=[7], usage=1, text="x"), chunk(ids=[8], usage=2, text="y")]
    acc = account(chunks, 2)
    assert acc.per_chunk == (0, 1, 1) and acc.total == 2


def test_logprobs_alone():
    acc = account([chunk(lp=2, text="ab"), chunk(lp=3, text="cde")], None)
    assert acc.source == "logprobs" and acc.per_chunk == (2, 3) and acc.exact_timing


def test_continuous_usage_alone():
    acc = account([chunk(usage=3, text="abc"), chunk(usage=4, text="d"), chunk(usage=8, text="e")], 8)
    assert acc.source == "continuous_usage" and acc.per_chunk == (3, 1, 4)


def test_usage_going_backwards_is_flagged_and_another_source_used():
    chunks = [chunk(lp=1, usage=5, text="a"), chunk(lp=1, usage=3, text="b"), chunk(lp=1, usage=6, text="c")]
    acc = account(chunks, None)
    assert acc.source == "logprobs" and acc.total == 3
    assert any("went backwards (5 → 3 at chunk 2)" in d for d in acc.disagreements)
    assert "continuous_usage" not in acc.totals


def test_disagreeing_sources_are_flagged():
    acc = account([chunk(ids=[1, 2], lp=2, text="ab"), chunk(ids=[3], lp=1, text="c")], 5)
    assert acc.total == 3
    assert "token_ids counts 3 tokens but final_usage counts 5" in acc.disagreements
    assert "logprobs counts 3 tokens but final_usage counts 5" in acc.disagreements


def test_same_total_different_split_is_flagged():
    acc = account([chunk(ids=[1, 2], lp=1, text="ab"), chunk(ids=[3], lp=2, text="c")], None)
    assert acc.source == "token_ids"
    assert acc.disagreements == ("token_ids and logprobs agree on the total but split it differently over chunks",)


def test_source_missing_on_visible_chunks_is_not_used_and_says_so():
    acc = account([chunk(ids=[1], text="a"), chunk(text="b"), chunk(ids=[3], text="c")], 3)
    assert acc.source == "final_usage" and not acc.exact_timing
    assert acc.disagreements == ("token_ids missing on 1 chunks that carry text: not used",)


def test_final_usage_only_is_exact_in_total_and_spread_evenly():
    chunks = [chunk(text="ab"), chunk(text=""), chunk(text="cd"), chunk(text="ef"), chunk(text="g")]
    acc = account(chunks, 10)
    assert acc.source == "final_usage" and acc.total == 10 and not acc.exact_timing
    assert acc.per_chunk == (2, 0, 2, 3, 3)  # 10 over 4 chunks with text; later ones take the rest


def test_final_usage_on_the_last_content_chunk():
    chunks = [chunk(text="ab"), chunk(text="cd"), chunk(text="e", usage=7, finish="length")]
    acc = account(chunks, None)
    assert acc.source == "final_usage" and acc.total == 7 and acc.disagreements == ()


def test_final_usage_below_visible_chunks_is_not_believed():
    acc = account([chunk(text="a"), chunk(text="b"), chunk(text="c")], 2)
    assert acc.source == "chunks" and acc.total == 3
    assert "final usage counts 2 tokens but 3 chunks carry text" in acc.disagreements


def test_nothing_exact_counts_chunks_and_says_so():
    acc = account([chunk(text="ab"), chunk(text=""), chunk(text="c")], None)
    assert acc.source == "chunks" and acc.per_chunk == (1, 0, 1) and not acc.exact_timing
    assert account([], None).source == "none"


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(0, 6), min_size=1, max_size=40), st.sampled_from(["ids", "lp", "usage"]))
def test_any_chunking_is_counted_exactly_by_any_single_source(sizes, source):
    chunks, done = [], 0
    for k in sizes:
        done += k
        value = {"ids": list(range(k)), "lp": k, "usage": done}[source]
        chunks.append(chunk(text="x" * k, **{source: value}))
    acc = account(chunks, done)
    assert acc.total == done and acc.per_chunk == tuple(sizes) and acc.exact_timing
    assert acc.disagreements == ()
