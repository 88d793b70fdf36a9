"""The bundled examples, the immutable model, the detection graph and durations."""

from __future__ import annotations

import dataclasses

import networkx as nx
import pytest

from cepplan.workload import load_workload
from cepplan.workload.detection_graph import (
    bottom_up_order,
    detection_graph,
    roots,
    shared_subevents,
)
from cepplan.workload.durations import DurationError, parse_duration
from tests.conftest import EXAMPLES

EXAMPLE_FILES = sorted(EXAMPLES.glob("*/workload.json"))


def test_there_are_four_examples():
    assert {p.parent.name for p in EXAMPLE_FILES} >= {"stocks", "network", "traffic", "mobile"}


@pytest.mark.parametrize("path", EXAMPLE_FILES, ids=lambda p: p.parent.name)
def test_example_validates_and_has_inline_rates_for_every_type(path):
    workload = load_workload(path)
    assert set(workload.statistics.rates) == set(workload.event_types)


def test_model_is_immutable():
    workload = load_workload(EXAMPLES / "stocks" / "workload.json")
    with pytest.raises(dataclasses.FrozenInstanceError):
        workload.name = "other"
    with pytest.raises(TypeError):
        workload.event_types["X"] = None
    with pytest.raises(TypeError):
        workload.statistics.rates["AAPL"] = 5.0
    assert isinstance(workload.patterns, tuple)


def test_stocks_predicate_classes_and_kleene():
    workload = load_workload(EXAMPLES / "stocks" / "workload.json")
    v_shape = workload.pattern("v_shape")
    assert v_shape.kleene_vars == {"b"}
    assert [p.kind for p in v_shape.predicates] == ["join", "kleene", "join"]
    rally = workload.pattern("sector_rally")
    assert [p.text for p in rally.filters("a")] == ["a.close > a.open"]
    assert rally.window == 10.0 and rally.partition_by == ("sector",)
    negation = workload.pattern("amzn_jump_no_goog_dip")
    assert [o.var for o in negation.negated] == ["g"]
    assert [o.var for o in negation.positive] == ["x", "y"]


def test_network_detection_graph_shares_syn_and_port_scan():
    workload = load_workload(EXAMPLES / "network" / "workload.json")
    graph = detection_graph(workload)
    assert nx.is_directed_acyclic_graph(graph)
    assert set(graph.predecessors("syn")) == {"tcp_session", "syn_flood", "port_scan"}
    assert shared_subevents(graph) == ["ack", "port_scan", "syn"]
    assert roots(graph) == ["attack", "scan_then_connect"]
    assert graph.edges["syn_flood", "syn"]["variables"] == ["s1", "s2", "s3"]
    order = bottom_up_order(graph)
    position = {name: i for i, name in enumerate(order)}
    for parent, child in graph.edges:
        if child in position:
            assert position[child] < position[parent], (child, parent)
    assert set(order) == {p.name for p in workload.patterns}


def test_complex_subevent_attributes_come_from_emit():
    workload = load_workload(EXAMPLES / "network" / "workload.json")
    assert dict(workload.attributes_of("port_scan")) == {"src": "string", "dst": "string"}
    attack = workload.pattern("attack")
    assert all(o.is_complex for o in attack.operands)


@pytest.mark.parametrize(
    ("value", "unit", "expected"),
    [("500ms", "s", 0.5), ("30s", "min", 0.5), ("5min", "s", 300.0), ("2h", "min", 120.0),
     ("1d", "h", 24.0), (3, "s", 3.0), (0.25, "ms", 0.25), (" 1.5 s ", "ms", 1500.0)],
)
def test_durations_convert_to_time_unit(value, unit, expected):
    assert parse_duration(value, unit) == pytest.approx(expected)


@pytest.mark.parametrize("value", ["0s", -1, 0, "abc", "5 parsecs", True, None, "s", "1e400s"])
def test_bad_durations_are_refused(value):
    with pytest.raises(DurationError):
        parse_duration(value, "s")
