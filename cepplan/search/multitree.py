"""A multi-pattern multitree (seed 004 §5) under local search: one tree per pattern, identical
subtrees merged by hashing, and Cost_tree^multi kept up to date as trees change.

A node's identity is its subtree's hash (`Compiled.node_id`); its cost is C(N) within the
largest window among the patterns using it (§3.1; `shared_node_cost`), whatever the order of
the patterns. Replacing one pattern's tree updates only the nodes it leaves or joins, so a
local-search step costs O(pattern size).
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial

from cepplan.costmodels.trees import shared_node_cost
from cepplan.search.local import Compiled, IndexTree, mask_of, nodes_of


class Multitree:
    """The current trees of all patterns and their Cost_tree^multi (seed 004 App. C)."""

    def __init__(self, compiled: Sequence[Compiled], trees: Sequence[IndexTree]):
        self.compiled = list(compiled)
        self.trees: list[IndexTree] = [None] * len(compiled)
        self.users: dict[int, dict[int, float]] = {}  # node -> user pattern -> its window
        self.masks: dict[int, dict[int, int]] = {}  # node -> user pattern -> its variables
        self.size: dict[int, int] = {}
        self._widest: dict[int, float] = {}  # the window each node's contribution is priced at
        self.contribution: dict[int, float] = {}
        self.cost = sum(c.pattern.negation_cost for c in compiled)
        self.signature = 0
        self._nodes: dict[tuple[int, IndexTree], list[tuple[int, int]]] = {}
        for p, tree in enumerate(trees):
            self.set_tree(p, tree)

    def nodes(self, p: int, tree: IndexTree) -> list[tuple[int, int]]:
        """(identity, variable mask) of every node of pattern p's tree."""
        key = (p, tree)
        found = self._nodes.get(key)
        if found is None:
            c = self.compiled[p]
            found = self._nodes[key] = [(c.node_id(node), mask_of(node))
                                        for node in nodes_of(tree)]
        return found

    def set_tree(self, p: int, tree: IndexTree) -> IndexTree:
        """Give pattern p a new tree; returns the old one (to undo the move)."""
        old = self.trees[p]
        if old == tree:
            return old
        window = self.compiled[p].window
        # only the nodes one tree has and the other lacks change users (never the leaves)
        new_nodes = self.nodes(p, tree)
        kept: set[int] = set()
        if old is not None:
            self.signature ^= hash((p, old))
            old_ids = {node for node, _ in self.nodes(p, old)}
            kept = {node for node, _ in new_nodes if node in old_ids}
            for node in old_ids - kept:
                self.users[node].pop(p, None)
                self.masks[node].pop(p, None)
                self._recost(node)
        self.trees[p] = tree
        self.signature ^= hash((p, tree))
        for node, mask in new_nodes:
            if node in kept:
                continue
            self.users.setdefault(node, {})[p] = window
            self.masks.setdefault(node, {})[p] = mask
            self.size[node] = mask.bit_count()
            self._recost(node, p)
        return old

    def apply(self, move: dict[int, IndexTree]) -> dict[int, IndexTree]:
        """Apply a move (pattern → tree); returns the move that undoes it."""
        return {p: self.set_tree(p, tree) for p, tree in move.items()}

    def shared_subtrees(self, p: int) -> list[IndexTree]:
        """The largest subtrees of p's tree that another pattern also uses."""
        tree = self.trees[p]
        out: list[IndexTree] = []
        stack = [tree]
        c = self.compiled[p]
        while stack:
            node = stack.pop()
            if not isinstance(node, tuple):
                continue
            if node is not tree and len(self.users.get(c.node_id(node), ())) > 1:
                out.append(node)
            else:
                stack.extend(node)
        return out

    def shared_nodes(self) -> list[int]:
        """Identities of the inner nodes used by two or more patterns."""
        return [node for node, users in self.users.items()
                if len(users) > 1 and self.size[node] > 1]

    def _recost(self, node: int, added: int | None = None) -> None:
        """The node's cost after a user left, or after user `added` joined: then, unless it
        widens the node's window, only that user is priced (a leaf shared by u patterns
        costs O(u) to build, not O(u²))."""
        users = self.users[node]
        old = self.contribution.get(node, 0.0)
        before = self._widest.get(node)
        if added is not None and before is not None and users[added] <= before:
            widest = before
            new = max(old, self.compiled[added].cost_at(self.masks[node][added], widest))
        else:
            widest = max(users.values()) if users else 0.0
            new = shared_node_cost(
                (window, partial(self.compiled[p].cost_at, self.masks[node][p]))
                for p, window in users.items()) if users else 0.0
        self._widest[node] = widest
        self.cost += new - old
        if users:
            self.contribution[node] = new
        else:
            self.contribution.pop(node, None)
            del self.users[node], self.masks[node], self.size[node], self._widest[node]


def multi_cost(compiled: Sequence[Compiled], trees: Sequence[IndexTree]) -> float:
    """Cost_tree^multi of a set of trees (seed 004 App. C), computed from scratch."""
    return Multitree(compiled, trees).cost

