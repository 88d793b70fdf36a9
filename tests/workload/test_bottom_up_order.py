"""The planning order (`bottom_up_order`) against networkx's lexicographical topological sort,
the definition it implements without walking the primitive nodes."""

from __future__ import annotations

import networkx as nx
from hypothesis import given, settings
from hypothesis import strategies as st

from cepplan.workload.detection_graph import COMPLEX, PRIMITIVE, bottom_up_order


@st.composite
def detection_graphs(draw: st.DrawFn) -> nx.DiGraph:
    """DAGs shaped like detection graphs: complex nodes bind later complex nodes (by a random
    rank, so names and edges disagree in order) and primitive sinks."""
    names = draw(st.lists(st.text("abcxyz", min_size=1, max_size=3), min_size=1, max_size=9,
                          unique=True))
    primitives = [f"T{i}" for i in range(draw(st.integers(0, 4)))]
    graph = nx.DiGraph()
    graph.add_nodes_from(primitives, kind=PRIMITIVE)
    graph.add_nodes_from(names, kind=COMPLEX)
    for i, parent in enumerate(names):
        for child in names[i + 1:]:
            if draw(st.booleans()):
                graph.add_edge(parent, child)
        for child in primitives:
            if draw(st.booleans()):
                graph.add_edge(parent, child)
    return graph


@settings(max_examples=200, deadline=None)
@given(detection_graphs())
def test_bottom_up_order_is_the_reversed_lexicographical_topological_sort(graph):
    reference = [n for n in reversed(list(nx.lexicographical_topological_sort(graph)))
                 if graph.nodes[n]["kind"] == COMPLEX]
    assert bottom_up_order(graph) == reference
