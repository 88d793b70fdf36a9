"""The event detection graph of seed 002 §2.3: primitive and complex events as one DAG.

Nodes are event type names (primitive types and pattern names) with attribute `kind`
("primitive" or "complex"); an edge parent -> child means the parent pattern binds the child,
with the binding variables on the edge. A node with several parents is a shared subevent
(seed 002 §5.1); the reverse topological order visits children before parents, the order of
hierarchical plan composition (seed 002 §3.2.3).
"""

from __future__ import annotations

import heapq

import networkx as nx

from cepplan.workload.model import Workload

PRIMITIVE, COMPLEX = "primitive", "complex"


_last: dict[str, tuple[Workload, nx.DiGraph]] = {}  # the last workload's graph


def detection_graph(workload: Workload) -> nx.DiGraph:
    """The DAG, frozen: one node per primitive type and per pattern, edges parent ->
    subevent. Built again only for another workload object (one re-plan asks three times)."""
    last = _last.get("graph")
    if last is not None and last[0] is workload:
        return last[1]
    graph = nx.freeze(_built(workload))
    _last["graph"] = (workload, graph)
    return graph


def _built(workload: Workload) -> nx.DiGraph:
    """Build the DAG: one node per primitive type and per pattern, edges parent -> subevent."""
    graph = nx.DiGraph()
    for name in workload.event_types:
        graph.add_node(name, kind=PRIMITIVE)
    for pattern in workload.patterns:
        graph.add_node(pattern.name, kind=COMPLEX)
    for pattern in workload.patterns:
        for operand in pattern.operands:
            if graph.has_edge(pattern.name, operand.event_type):
                graph.edges[pattern.name, operand.event_type]["variables"].append(operand.var)
            else:
                graph.add_edge(pattern.name, operand.event_type, variables=[operand.var])
    return graph


def shared_subevents(graph: nx.DiGraph) -> list[str]:
    """Events used by more than one complex event (nodes with several parents), sorted."""
    return sorted(n for n in graph if graph.in_degree(n) > 1)


def bottom_up_order(graph: nx.DiGraph) -> list[str]:
    """Complex events, each after every complex event it depends on (children first): the
    reverse of the lexicographical topological order (parents first, the least name among
    the ready ones next), by a heap over the complex nodes alone (the primitive ones are
    sinks, so they never decide it); the planner asks for it on every re-plan."""
    complex_nodes = [n for n, kind in graph.nodes(data="kind") if kind == COMPLEX]
    parents = dict.fromkeys(complex_nodes, 0)
    for node in complex_nodes:
        for child in graph.adj[node]:
            if child in parents:
                parents[child] += 1
    ready = [n for n, count in parents.items() if count == 0]
    heapq.heapify(ready)
    order = []
    while ready:
        node = heapq.heappop(ready)
        order.append(node)
        for child in graph.adj[node]:
            if child in parents:
                parents[child] -= 1
                if parents[child] == 0:
                    heapq.heappush(ready, child)
    if len(order) < len(complex_nodes):
        raise nx.NetworkXUnfeasible("the detection graph has a cycle")
    return order[::-1]


def roots(graph: nx.DiGraph) -> list[str]:
    """Complex events no other pattern uses: the top of each hierarchy."""
    return sorted(n for n in graph if graph.in_degree(n) == 0 and graph.nodes[n]["kind"] == COMPLEX)


def render_tree(graph: nx.DiGraph) -> list[str]:
    """The graph as indented text trees from each root; a shared node is marked `[shared]`."""
    shared = set(shared_subevents(graph))
    lines: list[str] = []

    def visit(node: str, depth: int, via: list[str]) -> None:
        label = ",".join(via)
        kind = graph.nodes[node]["kind"]
        mark = " [shared]" if node in shared else ""
        prefix = f"{label}: " if label else ""
        lines.append(f"{'  ' * depth}{prefix}{node} ({kind}){mark}")
        for child in sorted(graph.successors(node)):
            visit(child, depth + 1, graph.edges[node, child]["variables"])

    for root in roots(graph):
        visit(root, 0, [])
    return lines
