"""Hostile predicates are rejected with a clear error, and nothing in them ever runs."""

from __future__ import annotations

import builtins
import copy

import pytest

from cepplan.errors import InputError
from cepplan.workload import build_workload
from cepplan.workload.expr.errors import ExprError
from cepplan.workload.expr.parser import parse

HOSTILE = [
    "__import__('os').system('touch {sentinel}')",
    "a.__class__.__bases__[0].__subclasses__()",
    "a.price.__class__ == 1",
    "lambda: __import__('os').system('touch {sentinel}')",
    "(lambda x: x)(1) == 1",
    "exec('open(\"{sentinel}\", \"w\")')",
    "eval('1') == 1",
    "open('{sentinel}', 'w')",
    "[c for c in ().__class__.__base__.__subclasses__()]",
    "a.price < 1; import os",
    "a.price if True else 0",
    "getattr(a, 'price') > 0",
    "a['price'] > 0",
    "f'{{a.price}}' == 'x'",
    "a.price < 1 # comment",
    "`id`",
    "a.price @ 2",
    "x" * 5000,
    "(" * 500 + "a.price" + ")" * 500,
    "-" * 300 + "a.price > 0",
    "not " * 300 + "true",
]


@pytest.fixture
def sentinel(tmp_path):
    return tmp_path / "pwned"


@pytest.fixture
def no_code_execution(monkeypatch):
    """Make any use of eval/exec/compile/__import__ during parsing fail the test."""
    calls = []
    real_import = builtins.__import__

    def guarded_import(name, *args, **kwargs):
        if name in ("os", "subprocess"):
            calls.append(("import", name))
        return real_import(name, *args, **kwargs)

    for name in ("eval", "exec", "compile"):
        monkeypatch.setattr(builtins, name, lambda *a, _n=name, **k: calls.append((_n, a)))
    monkeypatch.setattr(builtins, "__import__", guarded_import)
    return calls


@pytest.mark.parametrize("template", HOSTILE)
def test_hostile_predicate_rejected_and_nothing_runs(template, sentinel, no_code_execution):
    text = template.format(sentinel=sentinel)
    with pytest.raises(ExprError) as info:
        parse(text)
    assert info.value.message  # a message a person can read
    assert not sentinel.exists()
    assert no_code_execution == []


def test_hostile_predicate_in_a_workload_is_an_input_error(sentinel):
    doc = {
        "format": "cepplan.workload/1", "time_unit": "s",
        "event_types": {"A": {"attributes": {"price": "double"}}},
        "patterns": [{"name": "p", "structure": ["SEQ", "a:A", "b:A"], "within": 5,
                      "where": [f"__import__('os').system('touch {sentinel}')",
                                "a.__dict__ == 1"]}],
    }
    with pytest.raises(InputError) as info:
        build_workload(copy.deepcopy(doc), file="evil.json")
    assert [p.path for p in info.value.problems] == ["patterns[0].where[0]", "patterns[0].where[1]"]
    assert all("'__' are not allowed" in p.message for p in info.value.problems)
    assert not sentinel.exists()


def test_hostile_names_in_structure_are_rejected():
    doc = {
        "format": "cepplan.workload/1", "time_unit": "s",
        "event_types": {"A": {"attributes": {"price": "double"}}},
        "patterns": [{"name": "p", "structure": ["SEQ", "__class__:A", "b:A;rm -rf"],
                      "within": 5}],
    }
    with pytest.raises(InputError) as info:
        build_workload(doc, file="evil.json")
    messages = " | ".join(p.message for p in info.value.problems)
    assert "cannot be used as a variable name" in messages
    assert "unknown event type 'A;rm -rf'" in messages  # a type is checked where looked up
