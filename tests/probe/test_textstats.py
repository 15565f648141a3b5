"""Text statistics: the loud patterns are flagged, healthy answers that look odd are not."""

from __future__ import annotations

import pytest

from sparktriage.probe.textstats import analyse, tail_loop

HEALTHY = {
    "list": "Here is what you need:\n1. Water\n2. A kettle\n3. A tea bag\n4. A cup\n5. Milk, if you like it\n"
            "Boil the water, pour it over the tea bag, wait three minutes, then remove the bag.",
    "code": "def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a - b\n\n\nprint(add(2, 3))\n"
            "print(sub(5, 1))\nprint(add(10, 20))\n",
    "terse": "Paris.",
    "number": "42",
    "bilingual": "The French word for cat is chat. Le chat est noir et il dort sur le canapé. In Chinese, "
                 "cat is 猫 (māo), and 我的猫很可爱 means my cat is very cute.",
    "repeated sentence": "The ocean is big. The ocean is big. The ocean is big. The ocean is big. "
                         "The ocean is big. The ocean is big.",
    "table": "| day | high | low |\n|-----|------|-----|\n| Mon | 21 | 12 |\n| Tue | 22 | 13 |\n"
             "| Wed | 19 | 11 |\n| Thu | 20 | 12 |\n",
    "counting": "1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20",
    "empty-ish": "",
}


@pytest.mark.parametrize("name", sorted(HEALTHY))
def test_healthy_odd_answers_are_not_flagged(name):
    assert analyse(HEALTHY[name]).flags == ()


@pytest.mark.parametrize("text, flag", [
    ("'s" * 60, "short-loop"),                                # F1, dgx-spark-playbooks#76
    ("mult" * 40, "short-loop"),                              # F1, dgx-vllm#11
    ("!" * 64, "exclamation-flood"),                          # F2, token 0
    ("+" * 64, "one-character-flood"),                        # sglang#24321
    ("onacho mixie danger mitcy无法◆新长度 " * 2 + "abc\ufffd\ufffd\ufffd def\ufffd ghi\ufffd", "replacement-or-control-characters"),
    ("xmitcy无法 dangerж Ωlong qzв 新word tqΩ aбв " * 2, "mixed-script-words"),
])
def test_garbage_signatures_are_flagged(text, flag):
    assert flag in analyse(text).flags


def test_tail_loop_finds_the_shortest_unit():
    period, cover = tail_loop("Hello there. " + "ab" * 30)
    assert period == 2 and cover > 0.8
    assert tail_loop("a normal sentence without any loop at its end.") == (None, 0.0)


def test_zlib_ratio_needs_enough_bytes():
    assert analyse("short").zlib_ratio is None
    assert analyse("x" * 400).zlib_ratio > 10
