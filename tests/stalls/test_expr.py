"""The decision language: parsing, errors with columns, three-valued evaluation, relevance."""

import pytest

from sparktriage.stalls import expr


def test_precedence_and_not():
    tree = expr.parse("a or b and not c")
    assert tree == expr.Or((expr.Name("a"), expr.And((expr.Name("b"), expr.Not(expr.Name("c"))))))


def test_quantifiers_expand_patterns():
    tree = expr.parse("all of sel_* and 2 of x*")
    known = ["sel_a", "sel_b", "x1", "x2", "x3", "other"]
    assert expr.names(tree, known) == [("sel_a", False), ("sel_b", False), ("x1", False),
                                       ("x2", False), ("x3", False)]
    assert expr.evaluate(tree, {"sel_a": True, "sel_b": True, "x1": True, "x2": None,
                                "x3": True, "other": False}) is True
    assert expr.evaluate(tree, {"sel_a": True, "sel_b": True, "x1": False, "x2": None,
                                "x3": False, "other": False}) is False
    assert expr.evaluate(tree, {"sel_a": True, "sel_b": True, "x1": True, "x2": None,
                                "x3": False, "other": False}) is None


@pytest.mark.parametrize("text, column", [("a and", 6), ("(a or b", 8), ("a b", 3),
                                          ("all a", 5), ("a and or b", 7), ("a & b", 3)])
def test_errors_carry_a_column(text, column):
    with pytest.raises(expr.ExprError) as info:
        expr.parse(text)
    assert info.value.column + 1 == column


def test_kleene_logic():
    tree = expr.parse("a and not b")
    assert expr.evaluate(tree, {"a": True, "b": False}) is True
    assert expr.evaluate(tree, {"a": True, "b": None}) is None
    assert expr.evaluate(tree, {"a": False, "b": None}) is False
    assert expr.evaluate(expr.parse("a or b"), {"a": None, "b": True}) is True
    assert expr.evaluate(expr.parse("not a"), {"a": None}) is None


def test_relevant_keeps_only_what_settles_the_value():
    tree = expr.parse("x or (y and z)")
    assert expr.relevant(tree, {"x": True, "y": None, "z": None}) == {"x"}
    assert expr.relevant(tree, {"x": False, "y": False, "z": None}) == {"x", "y"}
    assert expr.relevant(tree, {"x": None, "y": True, "z": None}) == {"x", "y", "z"}
    assert expr.names(expr.parse("a and not b"), ["a", "b"]) == [("a", False), ("b", True)]
