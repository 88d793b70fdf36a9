"""A brute-force reference for timed-out partial matches, written from their definition
(docs/workload-format.md, "Timed-out partial matches"), not from the loader's rewrite: every
prefix (v1..vk) of the SEQ is tried, and kept when no event extends it within the window.
Tests only."""

from __future__ import annotations

import math
from itertools import pairwise, product

import pandas as pd

from cepplan.workload.expr.evaluate import holds
from cepplan.workload.model import Pattern, Workload
from tests.engine.reference_matcher import _event, _partitions, _shown


def timed_out_matches(workload: Workload, name: str, events: pd.DataFrame) -> list[dict]:
    """The timed-out partial matches of SEQ pattern `name` (built without `timed_out`) over
    `events`, as written: pattern, {"k", "at"} and the prefix's events. One whose timeout lies
    past the input's last timestamp has not timed out yet and is not reported."""
    pattern = workload.pattern(name)
    pool = [_event(row, workload) for row in events.to_dict("records")]
    end = max((e["ts"] for e in pool), default=-math.inf)
    strict = workload.options.seq_ties != "allow"
    ordered = sorted(pattern.operands, key=lambda o: o.position)
    out = []
    for group in _partitions(pool, pattern):
        for k in range(1, len(ordered)):
            for prefix in _prefixes(pattern, ordered[:k], group, strict):
                timeout = prefix[0]["ts"] + pattern.window
                if timeout > end or _extended(pattern, ordered[:k + 1], prefix, group, strict):
                    continue
                out.append({"pattern": name, "timed_out": {"k": k, "at": timeout},
                            "events": {o.var: _shown(e)
                                       for o, e in zip(ordered, prefix, strict=False)}})
    return out


def _prefixes(pattern: Pattern, operands: list, group: list[dict], strict: bool):
    """Every binding of `operands` to distinct events in SEQ order, within the window,
    satisfying every predicate over those variables only."""
    choices = [[e for e in group if e["type"] == o.event_type] for o in operands]
    for chosen in product(*choices):
        if _fits(pattern, operands, list(chosen), strict):
            yield list(chosen)


def _extended(pattern: Pattern, operands: list, prefix: list[dict], group: list[dict],
              strict: bool) -> bool:
    """Whether some event of the group extends `prefix` by the next variable."""
    return any(_fits(pattern, operands, [*prefix, e], strict)
               for e in group if e["type"] == operands[-1].event_type)


def _fits(pattern: Pattern, operands: list, chosen: list[dict], strict: bool) -> bool:
    if len({e["id"] for e in chosen}) < len(chosen):
        return False
    for earlier, later in pairwise(chosen):
        if later["ts"] < earlier["ts"] or (strict and later["ts"] == earlier["ts"]):
            return False
    if chosen[-1]["ts"] - chosen[0]["ts"] > pattern.window:
        return False
    binding = {o.var: e for o, e in zip(operands, chosen, strict=True)}
    return all(holds(p.expr, binding) for p in pattern.predicates
               if p.variables <= set(binding))
