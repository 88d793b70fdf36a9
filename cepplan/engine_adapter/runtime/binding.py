"""Evaluation of a predicate for one complete binding, Kleene variables quantified.

Used where the vectorised stages do not apply (predicates reading two Kleene variables per
event, or a negated variable together with a Kleene one). Same semantics as the reference
evaluator `cepplan.workload.expr.evaluate.holds`: a plain read of a Kleene variable must hold
for each of its events, `NEXT`/`PREV` for each consecutive pair; an empty product holds.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from cepplan.engine_adapter.runtime.spec import tree_uses
from cepplan.engine_adapter.runtime.table import Table
from cepplan.workload.expr.vectorized import evaluate, referenced_keys


def holds_for(table: Table, tree: list, binding: Mapping[str, Sequence[int]],
              kleene_vars: frozenset[str]) -> bool:
    """Whether `tree` holds; `binding` maps each variable to its ranks (one for plain)."""
    uses = tree_uses(tree)
    ranged = {}
    for var, kinds in uses.items():
        if var in kleene_vars and kinds & {"plain", "NEXT", "PREV"}:
            count = len(binding[var])
            ranged[var] = np.arange(1 if "PREV" in kinds else 0,
                                    count - 1 if "NEXT" in kinds else count)
    names = list(ranged)
    if names:
        grids = np.meshgrid(*(ranged[n] for n in names), indexing="ij")
        positions = {n: g.ravel() for n, g in zip(names, grids, strict=True)}
        length = int(grids[0].size)
        if length == 0:
            return True
    else:
        positions, length = {}, 1
    columns = {}
    for key in referenced_keys(tree):
        var, attr = (key[0], key[1]) if len(key) == 2 else (key[1], key[2])
        ranks = np.asarray(binding[var], dtype=np.int64)
        values = table.column(attr)
        if len(key) == 2:
            index = ranks[positions[var]] if var in positions else np.repeat(ranks[:1], length)
        elif key[0] in ("FIRST", "LAST"):
            index = np.repeat(ranks[:1] if key[0] == "FIRST" else ranks[-1:], length)
        else:
            index = ranks[positions[var] + (1 if key[0] == "NEXT" else -1)]
        columns[key] = values[index]
    return bool(np.all(np.asarray(evaluate(tree, columns, length), dtype=bool)))
